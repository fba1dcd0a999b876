// The exec history of each root session's tree: a row when a command starts, its outcome and the tail of
// its output when it ends, the newest EXEC_HISTORY_PER_ROOT rows kept. The tail is stored as the guest
// wrote it (stdout and stderr merged in arrival order): the guest only ever holds secret placeholders.
import type { ExecFinish, ExecHistoryRepo, ExecStart } from "../db/exec-history-repo";

export const EXEC_HISTORY_PER_ROOT = 200;
const OUTPUT_TAIL_BYTES = 4096;
/** Commands may be 256 KiB; the history keeps their start (a 200-row history stays small). */
const HISTORY_COMMAND_CHARS = 4096;

/** The last `limit` bytes of a stream, and how many bytes it had in all. */
function createOutputTail(limit = OUTPUT_TAIL_BYTES) {
  let chunks: Uint8Array[] = [];
  let held = 0;
  let total = 0;
  return {
    push(data: Uint8Array): void {
      total += data.byteLength;
      chunks.push(data);
      held += data.byteLength;
      // Compact only once twice the limit is held: amortized, not per chunk.
      if (held > 2 * limit) {
        const joined = Buffer.concat(chunks);
        chunks = [joined.subarray(joined.byteLength - limit)];
        held = limit;
      }
    },
    /** UTF-8 text of the tail; a character cut at its start shows as U+FFFD. */
    text(): string {
      const joined = Buffer.concat(chunks);
      return joined.subarray(Math.max(0, joined.byteLength - limit)).toString("utf8");
    },
    bytes: () => total,
  };
}

export function createExecHistory(repo: ExecHistoryRepo, now: () => number = Date.now) {
  // A row a previous manager left unfinished: its command died with that manager's actors.
  repo.closeUnfinished("the manager stopped while this command ran", now());
  return {
    /** Records a started command; the returned handle collects its output and records how it ended. */
    start(record: Omit<ExecStart, "startedAt">) {
      const startedAt = now();
      const tail = createOutputTail();
      repo.start({ ...record, command: record.command.slice(0, HISTORY_COMMAND_CHARS), startedAt });
      return {
        chunk: (data: Uint8Array) => tail.push(data),
        finish(outcome: Pick<ExecFinish, "exitCode" | "timedOut" | "cancelled" | "oomKilled" | "error">): void {
          const finishedAt = now();
          repo.finish(record.id, { ...outcome, finishedAt, durationMs: finishedAt - startedAt, outputTail: tail.text(), outputBytes: tail.bytes() });
        },
      };
    },
    /** The rows of these ids that exist (a command cancelled before it started has none). */
    get: (ids: readonly string[]) => ids.flatMap((id) => repo.get(id) ?? []),
    list: (rootSessionID: string, sessionId: string, limit: number) => repo.list(rootSessionID, sessionId, limit),
    forget: (sessionIds: readonly string[]) => repo.forget(sessionIds),
  };
}

export type ExecHistory = ReturnType<typeof createExecHistory>;
