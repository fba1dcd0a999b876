// A build step's output on its way to the build's progress (image events and the image's row) and to its
// error: the first lines go to progress, each cut short, and the last lines are kept for the error. A RUN
// that prints gigabytes, or one endless line, costs the manager neither memory nor a write per line; the
// output itself is read to its end (the step's exit code counts).
import type { ExecSink } from "../../runtime/driver";
import type { Line } from "./run-with-lines";

/** Lines of a failed step's output kept for its error. */
const TAIL_LINES = 20;
/**
 * A step's output reaches the progress (events, the image's row) for this many lines, each cut at
 * MAX_LINE_CHARS: a RUN that prints gigabytes, or one endless line, costs the manager neither memory nor a
 * write per line. The output itself is read to its end (the step's exit code counts), and its last lines
 * are still kept for the error.
 */
const MAX_PROGRESS_LINES = 500;
const MAX_LINE_CHARS = 1000;

/**
 * A sink that keeps the last lines (for an error) and hands the first MAX_PROGRESS_LINES to onLine with the
 * step's prefix; a line longer than MAX_LINE_CHARS is cut there (the rest of it is dropped, not held).
 */
export function lineSink(prefix: string, onLine: Line): ExecSink & { tail(): string } {
  const decoder = new TextDecoder();
  let pending = "";
  let dropping = false; // inside a line already cut: its rest is dropped up to its newline
  let shown = 0;
  const kept: string[] = [];
  const emit = (line: string) => {
    if (!line.trim()) return;
    kept.push(line);
    if (kept.length > TAIL_LINES) kept.shift();
    shown += 1;
    if (shown <= MAX_PROGRESS_LINES) onLine(`${prefix} ${line}`);
    else if (shown === MAX_PROGRESS_LINES + 1) onLine(`${prefix} (more output; only the first ${MAX_PROGRESS_LINES} lines are shown)`);
  };
  const take = (chunk: Uint8Array) => {
    const lines = (pending + decoder.decode(chunk, { stream: true })).split(/\r?\n/);
    pending = lines.pop() ?? "";
    for (const [index, line] of lines.entries()) {
      if (!(dropping && index === 0)) emit(line.slice(0, MAX_LINE_CHARS));
      dropping = false;
    }
    if (pending.length > MAX_LINE_CHARS) {
      if (!dropping) emit(pending.slice(0, MAX_LINE_CHARS));
      dropping = true;
      pending = "";
    }
  };
  return { stdout: take, stderr: take, tail: () => [...kept, dropping ? "" : pending].filter(Boolean).join("\n") };
}
