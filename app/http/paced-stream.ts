// A response body that tells its writer when to wait. Bun reads a ReadableStream body only as fast as the
// client's socket drains, so a queue with a high-water mark fills when the client reads slowly; `write` then
// answers a promise that settles once the client took enough (or went away), and the exec's output is held
// back at its source by it (workers/actor-handle.ts). Nothing is dropped and nothing queues without bound.
import { createWakeSignal } from "../../workers/output-window";

/** Bytes queued for one client before its writer is told to wait. */
const STREAM_HIGH_WATER_BYTES = 1024 * 1024;

type PacedStream = {
  stream: ReadableStream<Uint8Array>;
  /** Queues bytes for the client; a promise when the queue is at its mark: settles when the client read some, or left. */
  write(bytes: Uint8Array): Promise<void> | undefined;
  /** Ends the body after what is queued. */
  close(): void;
  /** Breaks the body off: the client sees a failed transfer, not a short one that looks whole. */
  fail(reason: Error): void;
  /** Whether the client went away or the body was closed: writes are dropped from then on. */
  readonly closed: boolean;
};

/** `onCancel`: the client went away (it stopped the body, or its connection closed). */
export function createPacedStream(onCancel: () => void, highWaterBytes = STREAM_HIGH_WATER_BYTES): PacedStream {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let closed = false;
  const { wait, wake } = createWakeSignal();
  const stream = new ReadableStream<Uint8Array>(
    {
      start: (c) => void (controller = c),
      // Called when the client's reads brought the queue below its mark.
      pull: wake,
      cancel: () => {
        closed = true;
        wake();
        onCancel();
      },
    },
    { highWaterMark: highWaterBytes, size: (chunk) => chunk?.byteLength ?? 0 },
  );
  return {
    stream,
    write(bytes) {
      if (closed) return undefined;
      controller.enqueue(bytes);
      return (controller.desiredSize ?? 1) > 0 ? undefined : wait();
    },
    fail(reason) {
      if (!closed) controller.error(reason);
      closed = true;
      wake();
    },
    close() {
      if (!closed) controller.close();
      closed = true;
      wake();
    },
    get closed() {
      return closed;
    },
  };
}
