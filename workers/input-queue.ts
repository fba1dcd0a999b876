// A command's standard input inside its actor Worker: the main thread posts it chunk by chunk ("input"
// requests), and the driver reads it as a ReadableStream (ExecRequest.stdin). postMessage has no
// backpressure of its own, so each chunk's reply waits until the driver has read it: the main thread sends
// the next chunk only then, and a command that reads slowly holds its client's upload back.

export type InputQueue = {
  /** What the driver reads. */
  stream: ReadableStream<Uint8Array>;
  /** One chunk, or null for the end of the input; settles once the driver has read it (or wants no more). */
  push(data: Uint8Array | null): Promise<void>;
  /** The command is over: whatever waits is let go, and later input is dropped at once. */
  close(): void;
};

type Entry = { data: Uint8Array | null; taken: () => void };

export function createInputQueue(): InputQueue {
  const queue: Entry[] = [];
  let wanted: (() => void) | undefined;
  let closed = false;
  const releaseAll = () => {
    closed = true;
    for (const entry of queue.splice(0)) entry.taken();
    wanted?.();
  };
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        while (queue.length === 0 && !closed) await new Promise<void>((resolve) => (wanted = resolve));
        wanted = undefined;
        const entry = queue.shift();
        if (!entry) return controller.close(); // closed without an end: the reader is gone anyway
        if (entry.data) controller.enqueue(entry.data);
        else controller.close();
        entry.taken();
      },
      cancel: releaseAll,
    },
    // No read-ahead: a chunk leaves the queue only when the driver asks for it.
    { highWaterMark: 0 },
  );
  return {
    stream,
    push(data) {
      if (closed) return Promise.resolve();
      const taken = Promise.withResolvers<void>();
      queue.push({ data, taken: taken.resolve });
      wanted?.();
      return taken.promise;
    },
    close: releaseAll,
  };
}
