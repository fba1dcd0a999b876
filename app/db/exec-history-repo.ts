// SQL for exec_history: each root session's recent commands (newest first), trimmed to a fixed number per root.
import type { Database } from "bun:sqlite";
import { withoutFsync } from "./open";

/** One row, named as the API names it. */
export type ExecRecord = {
  id: string;
  rootSessionID: string;
  sessionID: string;
  callID: string;
  vmName: string;
  command: string;
  cwd: string;
  startedAt: number;
  finishedAt: number | null;
  durationMs: number | null;
  exitCode: number | null;
  timedOut: boolean;
  cancelled: boolean;
  oomKilled: boolean;
  error: string | null;
  outputTail: string;
  outputBytes: number;
};

export type ExecStart = Pick<ExecRecord, "id" | "rootSessionID" | "sessionID" | "callID" | "vmName" | "command" | "cwd" | "startedAt">;
export type ExecFinish = Pick<ExecRecord, "finishedAt" | "durationMs" | "exitCode" | "timedOut" | "cancelled" | "oomKilled" | "error" | "outputTail" | "outputBytes">;

type Row = Omit<ExecRecord, "timedOut" | "cancelled" | "oomKilled"> & { timedOut: number; cancelled: number; oomKilled: number };

const COLUMNS = `id, root_session_id AS rootSessionID, session_id AS sessionID, call_id AS callID, vm_name AS vmName, command, cwd,
  started_at AS startedAt, finished_at AS finishedAt, duration_ms AS durationMs, exit_code AS exitCode, timed_out AS timedOut,
  cancelled, oom_killed AS oomKilled, error, output_tail AS outputTail, output_bytes AS outputBytes`;

const fromRow = (row: Row): ExecRecord => ({ ...row, timedOut: row.timedOut === 1, cancelled: row.cancelled === 1, oomKilled: row.oomKilled === 1 });

export function createExecHistoryRepo(db: Database, keepPerRoot: number) {
  const insert = db.query(
    `INSERT INTO exec_history (id, root_session_id, session_id, call_id, vm_name, command, cwd, started_at)
     VALUES ($id, $rootSessionID, $sessionID, $callID, $vmName, $command, $cwd, $startedAt)`,
  );
  // Everything older than the newest `keepPerRoot` rows of the root goes.
  const trim = db.query<unknown, [string, string, number]>(
    `DELETE FROM exec_history WHERE root_session_id = ? AND id <= (
       SELECT id FROM exec_history WHERE root_session_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
  );
  const finish = db.query(
    `UPDATE exec_history SET finished_at = $finishedAt, duration_ms = $durationMs, exit_code = $exitCode, timed_out = $timedOut,
       cancelled = $cancelled, oom_killed = $oomKilled, error = $error, output_tail = $outputTail, output_bytes = $outputBytes WHERE id = $id`,
  );
  const byId = db.query<Row, [string]>(`SELECT ${COLUMNS} FROM exec_history WHERE id = ?`);
  const byRoot = db.query<Row, [string, number]>(`SELECT ${COLUMNS} FROM exec_history WHERE root_session_id = ? ORDER BY id DESC LIMIT ?`);
  const bySession = db.query<Row, [string, string, number]>(`SELECT ${COLUMNS} FROM exec_history WHERE root_session_id = ? AND session_id = ? ORDER BY id DESC LIMIT ?`);
  const removeTree = db.query<unknown, [string, string]>("DELETE FROM exec_history WHERE root_session_id = ? OR session_id = ?");
  const unfinished = db.query<unknown, [string, number]>("UPDATE exec_history SET error = ?, finished_at = ? WHERE finished_at IS NULL");

  return {
    /** Records a command that started, trimming the root's oldest rows beyond the bound in the same transaction. */
    // A log written as every command starts and ends: kept across a crash, not waited on for power-loss
    // durability (after a power loss its VMs are gone too, and closeUnfinished marks what was running).
    start(record: ExecStart): void {
      withoutFsync(db, () =>
        db.transaction(() => {
          insert.run(record);
          trim.run(record.rootSessionID, record.rootSessionID, keepPerRoot);
        })(),
      );
    },
    finish(id: string, outcome: ExecFinish): void {
      withoutFsync(db, () => finish.run({ id, ...outcome, timedOut: outcome.timedOut ? 1 : 0, cancelled: outcome.cancelled ? 1 : 0, oomKilled: outcome.oomKilled ? 1 : 0 }));
    },
    get(id: string): ExecRecord | null {
      const row = byId.get(id);
      return row ? fromRow(row) : null;
    },
    /** Newest first: the whole tree's commands for a root, or one session's own for a child. */
    list(rootSessionID: string, sessionId: string, limit: number): ExecRecord[] {
      const rows = rootSessionID === sessionId ? byRoot.all(rootSessionID, limit) : bySession.all(rootSessionID, sessionId, limit);
      return rows.map(fromRow);
    },
    /** Deleted sessions take their history with them. */
    forget(sessionIds: readonly string[]): void {
      db.transaction(() => {
        for (const id of sessionIds) removeTree.run(id, id);
      })();
    },
    /** At start: rows a previous manager left running can never finish; say so instead of "running" forever. */
    closeUnfinished(reason: string, at: number): void {
      unfinished.run(reason, at);
    },
  };
}

export type ExecHistoryRepo = ReturnType<typeof createExecHistoryRepo>;
