// Holds an exec attempt's first output until its command has surely started, so that what a failed
// namespace join prints ("fail startup", "setns(…): Operation not permitted" — crun's words, not the
// guest's) never reaches the caller when the attempt is retried. Order across stdout and stderr is kept.
import type { ExecSink } from "../driver";

/** Long enough for a join failure to show (crun exits within milliseconds of it), short enough to go unnoticed. */
const STARTUP_HOLD_MS = 1_000;
/** crun's complaints are a few hundred bytes: more held than this is the command's own, so it has started. */
const HOLD_MAX_BYTES = 64 * 1024;

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
  const timer = setTimeout(release, holdMs);
  const forward = (stream: "stdout" | "stderr") => (chunk: Uint8Array) => {
    if (held === null) return target[stream](chunk);
    held.push({ stream, chunk });
    heldBytes += chunk.byteLength;
    // Output on stdout comes from the command itself, so it has started: nothing is crun's any more.
    if (stream === "stdout" || heldBytes > HOLD_MAX_BYTES) release();
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
