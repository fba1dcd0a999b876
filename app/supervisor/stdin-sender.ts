// The main thread's half of a command's stdin: reads the client's input and sends it to the command's actor
// a chunk at a time, the next only once the actor's driver took the last (workers/input-queue.ts), so a
// command that reads slowly holds the client's upload back. Stops reading when the command ends.

/** Larger pieces are cut: each crosses to the Worker as one message. */
const INPUT_CHUNK_BYTES = 64 * 1024;

export async function sendStdin(stdin: ReadableStream<Uint8Array>, send: (data: Uint8Array | null) => Promise<unknown>, commandDone: Promise<unknown>): Promise<void> {
  const reader = stdin.getReader();
  let over = false;
  void commandDone.finally(() => {
    over = true;
    void reader.cancel().catch(() => {});
  }).catch(() => {});
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (over) return;
      if (done) break;
      for (let offset = 0; offset < value.byteLength && !over; offset += INPUT_CHUNK_BYTES) await send(value.subarray(offset, offset + INPUT_CHUNK_BYTES));
    }
  } catch {
    // The client's body broke off (it went away: its command is cancelled). The command sees the end of its input.
  }
  if (!over) await send(null).catch(() => {});
}
