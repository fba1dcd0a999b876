// SQL for vm_stops: the last time each root session's VM stopped or was removed, and why.
import type { Database } from "bun:sqlite";

export type VmStop = { vmName: string; status: string; reason: string | null; at: number };

export function createVmStopsRepo(db: Database) {
  const upsert = db.query(
    `INSERT INTO vm_stops (root_session_id, vm_name, status, reason, at) VALUES ($root, $vmName, $status, $reason, $at)
     ON CONFLICT(root_session_id) DO UPDATE SET vm_name = excluded.vm_name, status = excluded.status, reason = excluded.reason, at = excluded.at`,
  );
  const byRoot = db.query<{ vm_name: string; status: string; reason: string | null; at: number }, [string]>(
    "SELECT vm_name, status, reason, at FROM vm_stops WHERE root_session_id = ?",
  );
  const remove = db.query<unknown, [string]>("DELETE FROM vm_stops WHERE root_session_id = ?");
  return {
    record(rootSessionID: string, stop: VmStop): void {
      upsert.run({ root: rootSessionID, vmName: stop.vmName, status: stop.status, reason: stop.reason, at: stop.at });
    },
    get(rootSessionID: string): VmStop | null {
      const row = byRoot.get(rootSessionID);
      return row ? { vmName: row.vm_name, status: row.status, reason: row.reason, at: row.at } : null;
    },
    forget(rootSessionIDs: string[]): void {
      for (const id of rootSessionIDs) remove.run(id);
    },
  };
}
