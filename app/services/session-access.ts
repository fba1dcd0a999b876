// Which sessions a principal may use (docs/non-root.md). The manager's own token may use every session; a
// user's token only the sessions whose root it registered, for directories that user can use itself.
import { ParentNotFoundError, SessionConflictError, SessionNotFoundError } from "../errors";
import type { RegisterInput, SessionsService, SessionView } from "./sessions";
import type { Principal, UsersService } from "./users";

export function createSessionAccess(sessions: SessionsService, users: UsersService) {
  /** The uid owning the session's root; undefined: the manager's token registered it; "missing": no such session (or its chain is broken). */
  function ownerOfSession(id: string): number | undefined | "missing" {
    try {
      return users.ownerOf(sessions.rootOf(sessions.require(id)).root.id);
    } catch {
      return "missing";
    }
  }

  /** Whether the principal may use this session: false also when it does not exist. */
  function mayUse(principal: Principal, id: string): boolean {
    const owner = ownerOfSession(id);
    if (owner === "missing") return false;
    return principal.kind === "admin" || owner === principal.uid;
  }

  /** A session this principal may not use is, to it, not there: the same 404 as an unknown id. */
  function requireUsable(principal: Principal, id: string): void {
    if (principal.kind === "admin") return;
    const owner = ownerOfSession(id);
    // An unknown id goes on to its route, which answers the same 404.
    if (owner !== "missing" && owner !== principal.uid) throw new SessionNotFoundError(id);
  }

  /** Registers a session for the principal; a user's root (or fork) becomes theirs. */
  function register(principal: Principal, input: RegisterInput): { session: SessionView; created: boolean } {
    if (principal.kind === "admin") return sessions.register(input);
    const existing = ownerOfSession(input.id);
    if (existing !== "missing" && existing !== principal.uid) throw new SessionConflictError(input.id, "owner");
    for (const [field, id] of [["parentID", input.parentID], ["forkOf", input.forkOf]] as const) {
      if (id && !mayUse(principal, id)) throw new ParentNotFoundError(field, id);
    }
    users.requireAccess(principal, input.directory);
    const result = sessions.register(input);
    if (result.created && !input.parentID) users.setOwner(input.id, principal.uid);
    return result;
  }

  return { ownerOfSession, mayUse, requireUsable, register };
}

export type SessionAccess = ReturnType<typeof createSessionAccess>;
