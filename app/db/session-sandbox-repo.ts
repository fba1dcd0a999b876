// SQL for what GET /api/session-sandbox/:id shows: a session's lineage up to its root, and that root's secret
// grants and last VM stop. One statement, so one read transaction: each statement in WAL mode pays its own
// locks, and the view used to take five.
import type { Database } from "bun:sqlite";
import { fromRaw, sessionColumns, type RawRow, type SessionRow } from "./sessions-repo";
import type { VmStop } from "./vm-stops-repo";

/** One step of a lineage: the session `depth` parents above the first; grants and lastStop on a root only. */
export type LineageStep = { session: SessionRow; grants: string[]; lastStop: VmStop | null };

type Raw = RawRow & { depth: number; grants: string | null; stop_vm_name: string | null; stop_status: string | null; stop_reason: string | null; stop_at: number | null };

export function createSessionSandboxRepo(db: Database) {
  // UNION ALL with a depth bound ends on a cycle too; the walk in app/services/sessions.ts says what is wrong.
  const lineage = db.query<Raw, [string, number]>(
    `WITH RECURSIVE lineage AS (
       SELECT 0 AS depth, ${sessionColumns()} FROM sessions WHERE id = ?1
       UNION ALL
       SELECT l.depth + 1, ${sessionColumns("s")} FROM lineage l JOIN sessions s ON s.id = l.parent_id WHERE l.depth < ?2
     )
     SELECT l.*,
       CASE WHEN l.parent_id IS NULL THEN (SELECT json_group_array(g.name ORDER BY g.name) FROM secret_grants g WHERE g.root_session_id = l.id) END AS grants,
       v.vm_name AS stop_vm_name, v.status AS stop_status, v.reason AS stop_reason, v.at AS stop_at
     FROM lineage l LEFT JOIN vm_stops v ON l.parent_id IS NULL AND v.root_session_id = l.id
     ORDER BY l.depth`,
  );

  // A few recent lineages, kept while nothing at all was written: total_changes() counts every row this
  // connection inserted, updated or deleted, in any table, and costs no read transaction. The manager's is
  // the only connection that writes (one manager per data dir; the admin scripts go through the API).
  const changes = db.query<{ count: number }, []>("SELECT total_changes() AS count");
  const cache = new Map<string, readonly LineageStep[]>();
  let cachedAt = -1;

  function read(id: string, maxDepth: number): LineageStep[] {
    return lineage.all(id, maxDepth).map((raw) => ({
      session: fromRaw(raw),
      grants: raw.grants === null ? [] : (JSON.parse(raw.grants) as string[]),
      lastStop: raw.stop_at === null ? null : { vmName: raw.stop_vm_name!, status: raw.stop_status!, reason: raw.stop_reason, at: raw.stop_at },
    }));
  }

  return {
    /**
     * The session `id` and its ancestors, nearest first, at most `maxDepth` parents up; [] when it does not
     * exist. Shared with the cache: read it, never change it.
     */
    lineage(id: string, maxDepth: number): readonly LineageStep[] {
      const count = changes.get()!.count;
      if (count !== cachedAt) {
        cache.clear();
        cachedAt = count;
      }
      const key = `${maxDepth}:${id}`;
      const hit = cache.get(key);
      if (hit) return hit;
      const steps = read(id, maxDepth);
      // Rows read inside a transaction may yet be rolled back, which total_changes() would not show.
      if (db.inTransaction) return steps;
      if (cache.size >= LINEAGE_CACHE_SIZE) cache.delete(cache.keys().next().value!);
      cache.set(key, steps);
      return steps;
    },
  };
}

/** At most this many lineages are kept (a few KiB each at worst): the sessions whose commands run now. */
const LINEAGE_CACHE_SIZE = 256;

export type SessionSandboxRepo = ReturnType<typeof createSessionSandboxRepo>;
