// An upload passed on as a stream of its own (a command's stdin, a file's bytes), pulled only as fast as its
// consumer reads, and broken off with a 413 reason once it passes its limit: nothing counts on a
// Content-Length, which a streamed body does not have.
import { BodyTooLargeError } from "../errors";

/** A body's reader, as far as these files use it (Bun's and the DOM's reader types disagree on the rest). */
export type BodyReader = { read(): Promise<{ done: boolean; value?: Uint8Array }>; cancel(reason?: unknown): Promise<void> };

/** What `reader` still has, preceded by `first` (bytes already read from it), at most `limitBytes` in all. */
export function limitedStream(reader: BodyReader, limitBytes: number, what: string, first: Uint8Array = new Uint8Array(0)): ReadableStream<Uint8Array> {
  let total = first.byteLength;
  let pendingFirst: Uint8Array | undefined = first.byteLength > 0 ? first : undefined;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (pendingFirst) {
          controller.enqueue(pendingFirst);
          pendingFirst = undefined;
          return;
        }
        const { done, value } = await reader.read();
        if (done || !value) return controller.close();
        total += value.byteLength;
        if (total > limitBytes) return controller.error(new BodyTooLargeError(limitBytes, what));
        controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}
