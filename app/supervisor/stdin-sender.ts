// The main thread's half of a command's stdin: reads the client's input and sends it to the command's actor
// a chunk at a time, the next only once the actor's driver took the last (workers/input-queue.ts), so a
// command that reads slowly holds the client's upload back. Stops reading when the command ends.

/** Larger pieces are cut: each crosses to the Worker as one message. */
const INPUT_CHUNK_BYTES = 64 * 1024;

/**
 * Resolves "sent" once the input's end went to the command, "over" when the command ended first, or
 * "broken" when the client's input failed part-way (an upload cut off or over its limit): then no end of
 * input is sent, since a command must not take a cut-off input for a whole one, and the caller cancels it.
 */
export async function sendStdin(stdin: ReadableStream<Uint8Array>, send: (data: Uint8Array | null) => Promise<unknown>, commandDone: Promise<unknown>): Promise<"sent" | "over" | "broken"> {
  const reader = stdin.getReader();
  let over = false;
  void commandDone.finally(() => {
    over = true;
    void reader.cancel().catch(() => {});
  }).catch(() => {});
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (over) return "over";
      if (done) break;
      for (let offset = 0; offset < value.byteLength && !over; offset += INPUT_CHUNK_BYTES) await send(value.subarray(offset, offset + INPUT_CHUNK_BYTES));
    }
  } catch {
    return over ? "over" : "broken";
  }
  if (over) return "over";
  await send(null).catch(() => {});
  return "sent";
}
