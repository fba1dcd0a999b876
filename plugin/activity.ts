// Tells the manager what each session's agent is doing, from OpenCode's own events, so that a session
// that thinks for a long time (or waits on a slow provider) keeps its VM, and one that waits on the user
// does not hold it: session.status (busy, idle, retry with its attempt), question.asked/replied/rejected
// and permission.asked/replied. A question or permission that waits makes the session "question" or
// "permission" whatever its status says (OpenCode reports it busy meanwhile). While a session works, its
// report is repeated every heartbeat: the manager counts one not heard of for three of them as quiescent
// (OpenCode closed or crashed mid-turn).
import type { ActivityReport, SandboxClient } from "../sdk/index";
import { ACTIVITY_HEARTBEAT_MS } from "../sdk/activity";

type State = ActivityReport["state"];
type Tracked = { status: "busy" | "idle" | "retry"; attempt: number | null; questions: Set<string>; permissions: Set<string>; reported: string | null };

type Event = { type: string; properties?: Record<string, unknown> };

const HANDLED = new Set(["session.status", "question.asked", "question.replied", "question.rejected", "permission.asked", "permission.updated", "permission.replied"]);

export function createActivityReporter(options: {
  manager: () => SandboxClient;
  /** Registers the session (and its parents) with the manager first; the report needs it known. */
  ensureRegistered: (sessionID: string) => Promise<void>;
  log: (message: string, extra?: object) => void;
  heartbeatMs?: number;
}) {
  const { manager, ensureRegistered, log, heartbeatMs = ACTIVITY_HEARTBEAT_MS } = options;
  const sessions = new Map<string, Tracked>();

  const tracked = (id: string): Tracked => {
    let entry = sessions.get(id);
    if (!entry) sessions.set(id, (entry = { status: "idle", attempt: null, questions: new Set(), permissions: new Set(), reported: null }));
    return entry;
  };

  const stateOf = (entry: Tracked): State => (entry.questions.size > 0 ? "question" : entry.permissions.size > 0 ? "permission" : entry.status);

  async function send(id: string, entry: Tracked, force: boolean): Promise<void> {
    const state = stateOf(entry);
    const attempt = state === "retry" ? entry.attempt : null;
    const key = `${state}:${attempt ?? ""}`;
    if (!force && entry.reported === key) return;
    entry.reported = key;
    try {
      await ensureRegistered(id);
      await manager().sessions.reportActivity(id, { state, attempt });
    } catch (error) {
      entry.reported = null; // told again at the next event or heartbeat
      log("could not report a session's activity to the manager", { sessionID: id, state, error: String(error) });
    }
  }

  const heartbeat = setInterval(() => {
    for (const [id, entry] of sessions) {
      const state = stateOf(entry);
      if (state === "busy" || state === "retry") void send(id, entry, true);
    }
  }, heartbeatMs);
  heartbeat.unref?.();

  return {
    /** Handles one OpenCode event; others are ignored. Never throws: reporting must not disturb OpenCode. */
    async onEvent(event: Event): Promise<void> {
      const props = event.properties ?? {};
      const sessionID = typeof props.sessionID === "string" ? props.sessionID : undefined;
      if (!sessionID || !HANDLED.has(event.type)) return;
      const entry = tracked(sessionID);
      switch (event.type) {
        case "session.status": {
          const status = props.status as { type?: string; attempt?: number } | undefined;
          if (status?.type !== "busy" && status?.type !== "idle" && status?.type !== "retry") return;
          entry.status = status.type;
          entry.attempt = status.type === "retry" && typeof status.attempt === "number" ? status.attempt : null;
          break;
        }
        case "question.asked":
          if (typeof props.id === "string") entry.questions.add(props.id);
          break;
        case "question.replied":
        case "question.rejected":
          if (typeof props.requestID === "string") entry.questions.delete(props.requestID);
          break;
        case "permission.asked":
        case "permission.updated":
          if (typeof props.id === "string") entry.permissions.add(props.id);
          break;
        case "permission.replied":
          entry.permissions.delete(String(props.requestID ?? props.permissionID ?? ""));
          break;
      }
      await send(sessionID, entry, false);
    },
    forget(sessionID: string): void {
      sessions.delete(sessionID);
    },
    close(): void {
      clearInterval(heartbeat);
    },
  };
}
