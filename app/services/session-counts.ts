// Sessions by kind (root or child) and whether their commands run sandboxed now: the sandbox_sessions gauge.
import type { SessionCounts } from "../metrics";
import type { SessionsService } from "./sessions";

export function countSessions({ sessions }: { sessions: Pick<SessionsService, "list"> }): SessionCounts {
  const counts: SessionCounts = { root: { sandboxed: 0, unsandboxed: 0 }, child: { sandboxed: 0, unsandboxed: 0 } };
  // A broken parent chain (sandboxed null) has no root: nothing of it runs sandboxed.
  for (const session of sessions.list()) counts[session.parentID === null ? "root" : "child"][session.sandboxed === true ? "sandboxed" : "unsandboxed"] += 1;
  return counts;
}
