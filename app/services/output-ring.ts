// The output of a running command, kept for whoever looks in on it (GET …/processes/:callID/logs, the CLI's
// `logs -f`): its last RING_BYTES, stdout and stderr in the order they came. The command never waits for
// it — a background dev server must not freeze because nobody reads its log — so when it prints faster than
// a follower reads, the oldest bytes go and that follower is told how many it missed. Bounded either way:
// one ring per running command, whatever the number of followers.

/** How much of a background command's latest output is kept (docs/api.md, "Background processes"). */
export const RING_BYTES = 1024 * 1024;
/**
 * A foreground command's: its own client gets every byte, so this is only for a second reader looking in.
 * Kept small: holding 1 MiB of every flood's chunks kept them alive past the young generation and cost a
 * 2 GiB flood ~35 MiB more manager RSS (test/attacks/output-flood.test.ts).
 */
export const FOREGROUND_RING_BYTES = 64 * 1024;

export type RingItem = { stream: "stdout" | "stderr"; data: Uint8Array } | { skipped: number };

type Chunk = { stream: "stdout" | "stderr"; data: Uint8Array; offset: number };

export class OutputRing {
  private chunks: Chunk[] = [];
  /** Index of the first chunk still held: dropping moves it, and the array is compacted now and then. */
  private head = 0;
  /** Offset of the first byte still held, and of the next byte to come. */
  private start = 0;
  private end = 0;
  private ended = false;
  private waiting: (() => void)[] = [];

  constructor(private readonly limitBytes = RING_BYTES) {}

  push(stream: "stdout" | "stderr", data: Uint8Array): void {
    if (data.byteLength === 0) return;
    // Held as given, not copied: every chunk is a buffer of its own (the actor's message moved it to this
    // thread), which nothing writes to afterwards.
    this.chunks.push({ stream, data, offset: this.end });
    this.end += data.byteLength;
    while (this.end - this.start > this.limitBytes && this.chunks.length - this.head > 1) {
      const dropped = this.chunks[this.head++]!;
      this.start = dropped.offset + dropped.data.byteLength;
    }
    // Dropped chunks stay referenced until the array is compacted: compact as soon as they are half of it,
    // so at most as much dropped output as is held stays alive (amortized: each chunk is moved once per halving).
    if (this.head >= 8 && this.head * 2 > this.chunks.length) {
      this.chunks = this.chunks.slice(this.head);
      this.head = 0;
    }
    this.wake();
  }

  /** The command ended: followers get what is left, then their end. */
  close(): void {
    this.ended = true;
    this.wake();
  }

  /** Bytes the command printed, and how many of them are no longer held. */
  get totalBytes(): number {
    return this.end;
  }

  get droppedBytes(): number {
    return this.start;
  }

  /**
   * Everything still held, then (with `follow`) what comes next until the command ends. A follower that
   * falls behind the ring gets `{skipped}` and goes on from the oldest byte still held.
   */
  async *read(follow: boolean, signal?: AbortSignal): AsyncGenerator<RingItem> {
    let cursor = this.start;
    for (;;) {
      if (signal?.aborted) return;
      if (cursor < this.start) {
        yield { skipped: this.start - cursor };
        cursor = this.start;
      }
      const next = this.chunkHolding(cursor);
      if (next) {
        const from = cursor - next.offset;
        cursor = next.offset + next.data.byteLength;
        yield { stream: next.stream, data: next.data.subarray(Math.max(0, from)) };
        continue;
      }
      if (!follow || this.ended) return;
      await new Promise<void>((resolve) => {
        this.waiting.push(resolve);
        signal?.addEventListener("abort", () => resolve(), { once: true });
      });
    }
  }

  /** The held chunk with the byte at `offset` (or the first after it), by binary search: chunks are in order. */
  private chunkHolding(offset: number): Chunk | undefined {
    let low = this.head;
    let high = this.chunks.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      const chunk = this.chunks[middle]!;
      if (chunk.offset + chunk.data.byteLength <= offset) low = middle + 1;
      else high = middle;
    }
    return this.chunks[low];
  }

  private wake(): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const resolve of waiting) resolve();
  }
}
