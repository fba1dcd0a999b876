// Holds an exec attempt's first output until its command has surely started, so that what a failed
// namespace join prints ("fail startup", "setns(…): Operation not permitted" — crun's words, not the
// guest's) never reaches the caller when the attempt is retried. Order across stdout and stderr is kept.
import type { ExecSink } from "../driver";

/** Long enough for a join failure to show (crun exits within milliseconds of it), short enough to go unnoticed. */
const STARTUP_HOLD_MS = 1_000;
/** crun's complaints are a few hundred bytes: more held than this is the command's own, so it has started. */
const HOLD_MAX_BYTES = 64 * 1024;
/**
 * What crun's child prints when its namespace join fails, and nothing else: held past the hold time (a
 * loaded host can take longer than it to end the failed attempt), until the attempt is released or
 * discarded. A command of the guest that prints exactly these words is only delayed, never changed.
 */
const CRUN_JOIN_COMPLAINT = /^(?:(?:setns\([^)\n]*\)[^\n]*: Operation not permitted|fail startup)(?:\n|$))+$/;

type StartupHold = {
  sink: ExecSink;
  /** The attempt is good: everything held goes out, in order, and later output passes straight through. */
  release(): void;
  /** The attempt failed before its command ran: what it printed is dropped. */
  discard(): void;
};

export function holdStartupOutput(target: ExecSink, holdMs = STARTUP_HOLD_MS): StartupHold {
  let held: Array<{ stream: "stdout" | "stderr"; chunk: Uint8Array }> | null = [];
  let heldBytes = 0;
  const release = () => {
    clearTimeout(timer);
    const pending = held;
    held = null;
    for (const { stream, chunk } of pending ?? []) target[stream](chunk);
  };
  const onlyCrunsComplaint = () =>
    held !== null && held.length > 0 && held.every((h) => h.stream === "stderr") && CRUN_JOIN_COMPLAINT.test(Buffer.concat(held.map((h) => h.chunk)).toString());
  /** The hold time is up: from now on, anything held that is not crun's complaint alone goes out at once. */
  let due = false;
  const timer = setTimeout(() => {
    due = true;
    if (!onlyCrunsComplaint()) release();
  }, holdMs);
  const forward = (stream: "stdout" | "stderr") => (chunk: Uint8Array) => {
    if (held === null) return target[stream](chunk);
    held.push({ stream, chunk });
    heldBytes += chunk.byteLength;
    // Output on stdout comes from the command itself, so it has started: nothing is crun's any more.
    if (stream === "stdout" || heldBytes > HOLD_MAX_BYTES || (due && !onlyCrunsComplaint())) release();
  };
  return {
    // While output is held the target has not seen it, so its room is the room there is.
    sink: { stdout: forward("stdout"), stderr: forward("stderr"), room: target.room },
    release,
    discard() {
      clearTimeout(timer);
      held = null;
    },
  };
}
