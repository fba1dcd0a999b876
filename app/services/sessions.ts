// Session registration, lookup, deletion, and the walk from any session to its root.
import type { SessionRow, SessionsRepo } from "../db/sessions-repo";
import {
  UnsafeMountError,
  ParentNotFoundError,
  SessionConflictError,
  SessionCycleError,
  SessionNotFoundError,
  SessionTooDeepError,
} from "../errors";
import type { Notify } from "./lifecycle-events";
import { deniedBy, resolvedOrSelf, type ProtectedDirs } from "./mount-deny-list";
import type { PinnedMounts } from "./mounts";
import type { SettingsService } from "./settings";
import { vmNameFor } from "../vm-identity";

/** How many levels of children below a root the manager accepts. OpenCode nests subagents a few deep. */
export const MAX_SESSION_DEPTH = 32;

export type RegisterInput = { id: string; parentID?: string | null; forkOf?: string | null; directory: string };

/** A listed session: null root, mode and VM where its stored parent chain is broken. */
type ListedSessionView = Omit<SessionView, "rootSessionID"> & { rootSessionID: string | null; sandboxed: boolean | null; vmName: string | null };

export type SessionView = {
  id: string;
  parentID: string | null;
  forkOf: string | null;
  directory: string;
  rootSessionID: string;
  createdAt: number;
};

/**
 * Walks parents up to the root, refusing loops and chains deeper than MAX_SESSION_DEPTH. `parentAt(id, depth)`
 * is the parent `id`, `depth` steps above `row`, or undefined when it does not exist (a 404 naming it).
 */
export function walkToRoot(row: SessionRow, parentAt: (id: string, depth: number) => SessionRow | undefined): { root: SessionRow; depth: number } {
  const seen = new Set<string>([row.id]);
  let current = row;
  let depth = 0;
  while (current.parentId !== null) {
    if (seen.has(current.parentId)) throw new SessionCycleError(row.id);
    depth += 1;
    if (depth > MAX_SESSION_DEPTH) throw new SessionTooDeepError(row.id, MAX_SESSION_DEPTH);
    seen.add(current.parentId);
    const parent = parentAt(current.parentId, depth);
    if (!parent) throw new SessionNotFoundError(current.parentId);
    current = parent;
  }
  return { root: current, depth };
}

export function createSessionsService(repo: SessionsRepo, settings: SettingsService, now: () => number, notify: Notify = () => undefined, protectedDirs?: ProtectedDirs) {
  function require(id: string): SessionRow {
    const row = repo.get(id);
    if (!row) throw new SessionNotFoundError(id);
    return row;
  }

  /** The root of a session, reading each parent in turn (see walkToRoot). */
  function rootOf(row: SessionRow): { root: SessionRow; depth: number } {
    return walkToRoot(row, (id) => repo.get(id));
  }

  function view(row: SessionRow): SessionView {
    return {
      id: row.id,
      parentID: row.parentId,
      forkOf: row.forkOf,
      directory: row.directory,
      rootSessionID: rootOf(row).root.id,
      createdAt: row.createdAt,
    };
  }

  function sameRegistration(existing: SessionRow, input: RegisterInput): void {
    if (existing.parentId !== (input.parentID ?? null)) throw new SessionConflictError(input.id, "parentID");
    if (existing.forkOf !== (input.forkOf ?? null)) throw new SessionConflictError(input.id, "forkOf");
    if (existing.directory !== input.directory) throw new SessionConflictError(input.id, "directory");
  }

  /** The new row's mode: a child follows its root, a fork copies its origin's root, a root takes the default. */
  function initialMode(input: RegisterInput): Pick<SessionRow, "sandboxed" | "modeSource" | "toggledAt" | "cpusOverride" | "memoryMibOverride" | "networkOverride" | "imageOverride" | "isolationOverride" | "dockerOverride"> {
    if (input.parentID) {
      const parent = repo.get(input.parentID);
      if (!parent) throw new ParentNotFoundError("parentID", input.parentID);
      if (rootOf(parent).depth + 1 > MAX_SESSION_DEPTH) throw new SessionTooDeepError(input.id, MAX_SESSION_DEPTH);
      return { sandboxed: false, modeSource: "inherited", toggledAt: null, cpusOverride: null, memoryMibOverride: null, networkOverride: null, imageOverride: null, isolationOverride: null, dockerOverride: null };
    }
    if (input.forkOf) {
      const origin = repo.get(input.forkOf);
      if (!origin) throw new ParentNotFoundError("forkOf", input.forkOf);
      const { root } = rootOf(origin);
      return {
        sandboxed: root.sandboxed,
        modeSource: "fork",
        toggledAt: root.toggledAt,
        cpusOverride: root.cpusOverride,
        memoryMibOverride: root.memoryMibOverride,
        networkOverride: root.networkOverride,
        imageOverride: root.imageOverride,
        // A fork runs at least as isolated as its origin.
        isolationOverride: root.isolationOverride,
        dockerOverride: root.dockerOverride,
      };
    }
    return {
      sandboxed: settings.get().defaultForNewSessions,
      modeSource: "default",
      toggledAt: null,
      cpusOverride: null,
      memoryMibOverride: null,
      networkOverride: null,
      imageOverride: null,
      isolationOverride: null,
      dockerOverride: null,
    };
  }

  return {
    require,
    rootOf,
    view,
    get: (id: string) => view(require(id)),
    /** Every session; a broken parent chain (cycle, too deep) shows as a null root instead of failing the list. */
    list(): ListedSessionView[] {
      const enabled = settings.get().enabled;
      return repo.list().map((row) => {
        try {
          const { root } = rootOf(row);
          return { ...view(row), sandboxed: enabled && root.sandboxed, vmName: vmNameFor(root.id) };
        } catch {
          return { ...view({ ...row, parentId: null }), parentID: row.parentId, rootSessionID: null, sandboxed: null, vmName: null };
        }
      });
    },

    /** Registers a session; the same data again is a no-op. `created` tells which happened. */
    register(input: RegisterInput): { session: SessionView; created: boolean } {
      const existing = repo.get(input.id);
      if (existing) {
        sameRegistration(existing, input);
        return { session: view(existing), created: false };
      }
      const resolved = resolvedOrSelf(input.directory);
      const rule = protectedDirs && deniedBy(resolved, protectedDirs);
      if (rule) throw new UnsafeMountError(input.directory, rule);
      const row: SessionRow = {
        id: input.id,
        parentId: input.parentID ?? null,
        forkOf: input.forkOf ?? null,
        directory: input.directory,
        createdAt: now(),
        ...initialMode(input),
      };
      repo.insert(row);
      const session = view(row);
      notify({ type: "session-registered", session });
      return { session, created: true };
    },

    /** A root's mounts as pinned at its first command, or null before it. */
    pinnedMounts(rootSessionID: string): PinnedMounts | null {
      const json = repo.pinnedMounts(rootSessionID);
      return json === null ? null : (JSON.parse(json) as PinnedMounts);
    },
    pinMounts(rootSessionID: string, pins: PinnedMounts): PinnedMounts {
      repo.setPinnedMounts(rootSessionID, JSON.stringify(pins));
      return pins;
    },

    /** Deletes the session with all its descendants; returns the deleted ids. */
    delete(id: string): string[] {
      require(id);
      const deleted = repo.deleteTree(id);
      notify({ type: "sessions-deleted", sessionIds: deleted });
      return deleted;
    },
  };
}

export type SessionsService = ReturnType<typeof createSessionsService>;
