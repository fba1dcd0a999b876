// SQL for the sessions table. Rows in, rows out; rules live in app/services.
import type { Database } from "bun:sqlite";
import type { IsolationChoice } from "../../runtime/isolation";

export type ModeSource = "default" | "explicit" | "fork" | "inherited";

export type SessionRow = {
  id: string;
  parentId: string | null;
  forkOf: string | null;
  directory: string;
  createdAt: number;
  sandboxed: boolean;
  modeSource: ModeSource;
  toggledAt: number | null;
  cpusOverride: number | null;
  memoryMibOverride: number | null;
  /** JSON of a NetworkPolicy, or null when the root follows the settings. */
  networkOverride: string | null;
  /** JSON of an ImageChoice, or null when the root follows the settings' default image. */
  imageOverride: string | null;
  /** The root's own isolation choice, or null when it follows the settings. */
  isolationOverride: IsolationChoice | null;
  /** The root's own docker setting, or null when it follows the settings. */
  dockerOverride: boolean | null;
};

export type RawRow = {
  id: string;
  parent_id: string | null;
  fork_of: string | null;
  directory: string;
  created_at: number;
  sandboxed: number;
  mode_source: ModeSource;
  toggled_at: number | null;
  cpus_override: number | null;
  memory_mib_override: number | null;
  network_override: string | null;
  image_override: string | null;
  isolation_override: IsolationChoice | null;
  docker_override: number | null;
};

const COLUMNS = ["id", "parent_id", "fork_of", "directory", "created_at", "sandboxed", "mode_source", "toggled_at", "cpus_override", "memory_mib_override", "network_override", "image_override", "isolation_override", "docker_override"];

/** Every column a SessionRow holds, of table `alias` if given: not pinned_mounts, a JSON document only the exec path reads. */
export function sessionColumns(alias?: string): string {
  return COLUMNS.map((column) => (alias ? `${alias}.${column}` : column)).join(", ");
}

export function fromRaw(raw: RawRow): SessionRow {
  return {
    id: raw.id,
    parentId: raw.parent_id,
    forkOf: raw.fork_of,
    directory: raw.directory,
    createdAt: raw.created_at,
    sandboxed: raw.sandboxed === 1,
    modeSource: raw.mode_source,
    toggledAt: raw.toggled_at,
    cpusOverride: raw.cpus_override,
    memoryMibOverride: raw.memory_mib_override,
    networkOverride: raw.network_override,
    imageOverride: raw.image_override,
    isolationOverride: raw.isolation_override,
    dockerOverride: raw.docker_override === null ? null : raw.docker_override === 1,
  };
}

/** A nullable boolean column's value: 1, 0 or NULL. */
function flag(value: boolean | null): number | null {
  return value === null ? null : value ? 1 : 0;
}

type ModeUpdate = Pick<SessionRow, "sandboxed" | "modeSource" | "toggledAt" | "cpusOverride" | "memoryMibOverride" | "networkOverride" | "imageOverride" | "isolationOverride" | "dockerOverride">;

export function createSessionsRepo(db: Database) {
  const byId = db.query<RawRow, [string]>(`SELECT ${sessionColumns()} FROM sessions WHERE id = ?`);
  const insert = db.query(
    `INSERT INTO sessions (id, parent_id, fork_of, directory, created_at, sandboxed, mode_source, toggled_at, cpus_override, memory_mib_override, network_override, image_override, isolation_override, docker_override)
     VALUES ($id, $parentId, $forkOf, $directory, $createdAt, $sandboxed, $modeSource, $toggledAt, $cpusOverride, $memoryMibOverride, $networkOverride, $imageOverride, $isolationOverride, $dockerOverride)`,
  );
  const updateMode = db.query(
    `UPDATE sessions SET sandboxed = $sandboxed, mode_source = $modeSource, toggled_at = $toggledAt,
       cpus_override = $cpusOverride, memory_mib_override = $memoryMibOverride, network_override = $networkOverride, image_override = $imageOverride, isolation_override = $isolationOverride, docker_override = $dockerOverride WHERE id = $id`,
  );
  const descendants = db.query<{ id: string }, [string]>(
    `WITH RECURSIVE tree(id) AS (
       SELECT id FROM sessions WHERE id = ?
       UNION SELECT s.id FROM sessions s JOIN tree ON s.parent_id = tree.id
     ) SELECT id FROM tree`,
  );
  const deleteOne = db.query<unknown, [string]>("DELETE FROM sessions WHERE id = ?");
  const pinnedMounts = db.query<{ pinned_mounts: string | null }, [string]>("SELECT pinned_mounts FROM sessions WHERE id = ?");
  const setPinnedMounts = db.query<unknown, [string, string]>("UPDATE sessions SET pinned_mounts = ? WHERE id = ?");
  const all = db.query<RawRow, []>(`SELECT ${sessionColumns()} FROM sessions ORDER BY created_at, id`);

  return {
    get(id: string): SessionRow | undefined {
      const raw = byId.get(id);
      return raw ? fromRaw(raw) : undefined;
    },
    list(): SessionRow[] {
      return all.all().map(fromRaw);
    },
    insert(row: SessionRow): void {
      insert.run({ ...row, sandboxed: row.sandboxed ? 1 : 0, dockerOverride: flag(row.dockerOverride) });
    },
    updateMode(id: string, update: ModeUpdate): void {
      updateMode.run({ id, ...update, sandboxed: update.sandboxed ? 1 : 0, dockerOverride: flag(update.dockerOverride) });
    },
    /** The JSON of a root's pinned mounts, or null before its first command. */
    pinnedMounts(id: string): string | null {
      return pinnedMounts.get(id)?.pinned_mounts ?? null;
    },
    setPinnedMounts(id: string, json: string): void {
      setPinnedMounts.run(json, id);
    },
    /** Deletes the session and every descendant in one transaction; returns the ids removed. */
    deleteTree(id: string): string[] {
      return db.transaction(() => {
        // UNION (not UNION ALL) stops the recursion on a cycle instead of looping.
        const ids = descendants.all(id).map((row) => row.id);
        for (const each of ids) deleteOne.run(each);
        return ids;
      })();
    },
  };
}

export type SessionsRepo = ReturnType<typeof createSessionsRepo>;
