// Sessions by kind (root or child) and whether their commands run sandboxed now: the sandbox_sessions gauge.
import type { SessionCounts } from "../metrics";
import type { Services } from "./index";

export function countSessions({ sessions, sessionSandbox }: Pick<Services, "sessions" | "sessionSandbox">): SessionCounts {
  const counts: SessionCounts = { root: { sandboxed: 0, unsandboxed: 0 }, child: { sandboxed: 0, unsandboxed: 0 } };
  const sandboxedRoots = new Map<string, boolean>();
  for (const session of sessions.list()) {
    const root = session.rootSessionID;
    // A broken parent chain has no root: nothing of it runs sandboxed.
    let sandboxed = false;
    if (root !== null) {
      if (!sandboxedRoots.has(root)) sandboxedRoots.set(root, sessionSandbox.get(root).sandboxed);
      sandboxed = sandboxedRoots.get(root)!;
    }
    counts[session.parentID === null ? "root" : "child"][sandboxed ? "sandboxed" : "unsandboxed"] += 1;
  }
  return counts;
}
