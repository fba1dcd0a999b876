// Feeds a command's standard input (ExecRequest.stdin) into the stdin pipe of the runtime process that runs
// it (`crun exec`, `runsc exec`, `msb exec`), one chunk at a time: the next chunk is read only once the pipe
// took the last, so a command that reads slowly holds its input back all the way to the client.
//
// A start that is retried because nothing of the command ran (local exec.ts: a failed namespace join) must
// give the next attempt the same input. The process of a failed start never reads its stdin, so what it was
// given is at most a pipe's worth: the feed remembers the first REPLAY_BYTES it handed out and starts each
// attempt with them. Past that, no retry can be given the same input (replayable() says so).
import type { FileSink } from "bun";

const REPLAY_BYTES = 1 << 20;

type Read = { done: boolean; value?: Uint8Array };

export class StdinFeed {
  /** The stream's reader: cancel() ends a pending read at once (an async iterator's return() would wait for it). */
  private readonly reader: { read(): Promise<Read>; cancel(): Promise<void> };
  private readonly taken: Uint8Array[] = [];
  private takenBytes = 0;
  private pending: Promise<Read> | undefined;
  private attempt = 0;

  constructor(stream: ReadableStream<Uint8Array>) {
    this.reader = stream.getReader() as StdinFeed["reader"];
  }

  /**
   * Copies the input into `pipe`, then closes it (the command's end of file). Ends early, quietly, when the
   * pipe breaks (the command exited or closed its stdin) or a newer attempt took over.
   */
  async into(pipe: FileSink): Promise<void> {
    const attempt = ++this.attempt;
    try {
      for (const chunk of this.taken) await writeAll(pipe, chunk);
      for (;;) {
        // A read the previous attempt left waiting is this attempt's: one read at a time, none lost.
        this.pending ??= this.reader.read();
        const { done, value } = await this.pending;
        if (attempt !== this.attempt) return;
        this.pending = undefined;
        if (done || !value) break;
        this.takenBytes += value.byteLength;
        if (this.takenBytes <= REPLAY_BYTES) this.taken.push(value);
        await writeAll(pipe, value);
      }
      await pipe.end();
    } catch {
      // The pipe is closed: the command does not want the rest.
    }
  }

  /** Whether every byte handed out so far can be handed again to a retried start. */
  replayable(): boolean {
    return this.takenBytes <= REPLAY_BYTES;
  }

  /** No attempt wants more: the client's input stops (its sender sees the end). */
  close(): void {
    this.attempt++;
    void this.reader.cancel().catch(() => {});
  }
}

async function writeAll(pipe: FileSink, chunk: Uint8Array): Promise<void> {
  pipe.write(chunk);
  await pipe.flush();
}
