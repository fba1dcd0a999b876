// Keeps the manager's session table in step with OpenCode: registers sessions as they are created (and,
// lazily, any session seen before its event, parents first), and deletes them when OpenCode does.
import { SessionConflictError, SessionNotFoundError, type SandboxClient } from "../sdk/index";

export type OpencodeSession = { id: string; directory: string; parentID?: string | null };
/** Reads one session from OpenCode (the plugin's OpenCode client), or null if it does not exist. */
type FetchSession = (id: string) => Promise<OpencodeSession | null>;

const MAX_DEPTH = 32;

export type SessionTracker = ReturnType<typeof createSessionTracker>;

export function createSessionTracker(manager: () => SandboxClient, fetchSession: FetchSession, log: (message: string, extra?: object) => void) {
  /** Sessions known to be registered (or being registered): a promise per id, dropped when it fails. */
  const registered = new Map<string, Promise<void>>();

  async function register(info: OpencodeSession): Promise<void> {
    try {
      // OpenCode 1.18.33 does not say which session a fork came from (the Session object has no field
      // for it), so forks register as new roots that take the default mode.
      await manager().sessions.register({ id: info.id, parentID: info.parentID ?? null, forkOf: null, directory: info.directory });
    } catch (error) {
      if (error instanceof SessionConflictError) return; // already known, with other data: keep the manager's
      throw error;
    }
  }

  function remember(id: string, work: () => Promise<void>): Promise<void> {
    const existing = registered.get(id);
    if (existing) return existing;
    const pending = work().catch((error) => {
      registered.delete(id);
      throw error;
    });
    registered.set(id, pending);
    return pending;
  }

  /** Registers the session and its ancestors (root first) if this process has not done so yet. */
  function ensureRegistered(id: string, depth = 0, seen = new Set<string>()): Promise<void> {
    // Checked before the memo: a loop would otherwise wait on its own pending registration forever.
    if (depth > MAX_DEPTH || seen.has(id)) return Promise.reject(new Error(`session ${id}: its parent chain is deeper than ${MAX_DEPTH} or loops`));
    seen.add(id);
    return remember(id, async () => {
      const info = await fetchSession(id);
      if (!info) throw new Error(`OpenCode does not know session ${id}`);
      if (info.parentID) await ensureRegistered(info.parentID, depth + 1, seen);
      await register(info);
    });
  }

  /** session.created: the event carries the parent, so no walk is needed unless the parent is new to us. */
  function onCreated(info: OpencodeSession): void {
    void remember(info.id, async () => {
      if (info.parentID) await ensureRegistered(info.parentID);
      await register(info);
    }).catch((error) => log("could not register a new session; its first command will retry", { sessionID: info.id, error: String(error) }));
  }

  /** session.deleted: the manager deletes the session (its descendants too) and, for a root, its VM and volume. */
  async function onDeleted(id: string): Promise<void> {
    registered.delete(id);
    try {
      await manager().sessions.delete(id);
    } catch (error) {
      if (error instanceof SessionNotFoundError) return; // a child whose root went first, or never registered
      log("could not delete a session in the manager", { sessionID: id, error: String(error) });
    }
  }

  /** The manager forgot a session this process registered: forget what we remembered, register it again. */
  function reregister(id: string): Promise<void> {
    // Its ancestors may be forgotten too (a database reset forgets all): drop every memo, walk again.
    registered.clear();
    return ensureRegistered(id);
  }

  return { ensureRegistered, onCreated, onDeleted, reregister };
}
