// Flow control of one command's output between its actor Worker and the main thread. postMessage has no
// backpressure of its own: without a window a guest printing 1 GiB queued 1 GiB in the manager. The actor
// counts the bytes it posted; the main thread posts back how many its consumer has taken (an
// "output-taken" notice); once OUTPUT_WINDOW_BYTES are in flight the actor's room() says wait, and the
// driver reads no more of the guest's output until the main thread takes some.
import type { OutputRoom } from "../runtime/driver";

/**
 * Output an actor may have posted to the main thread and not yet seen taken. 4 MiB, not 1: a round trip
 * between the threads per MiB held a flood back; with 4 it runs much faster (docs/performance.md).
 * Exported so a test fills the window exactly.
 */
export const OUTPUT_WINDOW_BYTES = 4 * 1024 * 1024;
/**
 * The main thread reports what was taken in batches of at least this much, not one notice per chunk. Below
 * the window, so the last batch still unreported never holds the actor back.
 */
const OUTPUT_TAKEN_BATCH_BYTES = OUTPUT_WINDOW_BYTES / 4;

/**
 * Where a paced producer waits for room: every waiter until the next `wake` shares one promise, and `wake`
 * settles it. Used by each hop that holds output back: this window, the HTTP body (app/http/paced-stream.ts)
 * and the shell's WebSocket (app/routes/shell.ts).
 */
export function createWakeSignal(): { wait(): Promise<void>; wake(): void } {
  let waiting: PromiseWithResolvers<void> | undefined;
  return {
    wait() {
      waiting ??= Promise.withResolvers<void>();
      return waiting.promise;
    },
    wake() {
      waiting?.resolve();
      waiting = undefined;
    },
  };
}

export type OutputWindow = {
  /** Bytes just posted. */
  sent(bytes: number): void;
  /** Bytes the main thread reports taken. */
  taken(bytes: number): void;
  room: OutputRoom;
  /** No more pacing (the command was cancelled or is over): whatever waits for room goes on at once. */
  open(): void;
};

export function createOutputWindow(limitBytes = OUTPUT_WINDOW_BYTES): OutputWindow {
  let inFlight = 0;
  let opened = false;
  const { wait, wake } = createWakeSignal();
  return {
    sent(bytes) {
      inFlight += bytes;
    },
    taken(bytes) {
      inFlight = Math.max(0, inFlight - bytes);
      if (inFlight < limitBytes) wake();
    },
    room() {
      return opened || inFlight < limitBytes ? undefined : wait();
    },
    open() {
      opened = true;
      wake();
    },
  };
}

/**
 * The main thread's side: what its consumer took, reported to the actor in batches. `took` is called once
 * per chunk, when the consumer took it.
 */
export function createTakenReporter(report: (bytes: number) => void, batchBytes = OUTPUT_TAKEN_BATCH_BYTES): { took(bytes: number): void } {
  let unreported = 0;
  return {
    took(bytes) {
      unreported += bytes;
      if (unreported < batchBytes) return;
      report(unreported);
      unreported = 0;
    },
  };
}
