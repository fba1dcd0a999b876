// Incremental, bounded decoder for chunked bodies, so a response can be redacted and re-framed.

export class ChunkedDecodeError extends Error {}

const MAX_LINE_BYTES = 4096;
const MAX_TRAILER_BYTES = 16 * 1024;
const CRLF = Buffer.from("\r\n");

type State = { kind: "size" } | { kind: "data"; remaining: number } | { kind: "data-end" } | { kind: "trailers"; bytes: number } | { kind: "done" };

export class ChunkedDecoder {
  private state: State = { kind: "size" };
  private line: Buffer = Buffer.alloc(0);

  get done(): boolean {
    return this.state.kind === "done";
  }

  /** Body bytes decoded from `chunk`, and whatever followed the end of the body (to be discarded). */
  push(chunk: Buffer): { data: Buffer[]; extra: Buffer } {
    const data: Buffer[] = [];
    let at = 0;
    while (at < chunk.length && this.state.kind !== "done") {
      const state = this.state;
      if (state.kind === "data") {
        const take = Math.min(state.remaining, chunk.length - at);
        data.push(chunk.subarray(at, at + take));
        at += take;
        this.state = state.remaining === take ? { kind: "data-end" } : { kind: "data", remaining: state.remaining - take };
        continue;
      }
      const line = this.readLine(chunk, at);
      at = line.next;
      if (line.text === null) break;
      this.onLine(line.text);
    }
    return { data, extra: chunk.subarray(at) };
  }

  private readLine(chunk: Buffer, at: number): { text: string | null; next: number } {
    const joined = this.line.length === 0 ? chunk.subarray(at) : Buffer.concat([this.line, chunk.subarray(at)]);
    const end = joined.indexOf(CRLF);
    if (end > MAX_LINE_BYTES) throw new ChunkedDecodeError("chunk line too long");
    if (end === -1) {
      if (joined.length > MAX_LINE_BYTES) throw new ChunkedDecodeError("chunk line too long");
      this.line = Buffer.from(joined);
      return { text: null, next: chunk.length };
    }
    const consumedFromChunk = end + 2 - this.line.length;
    this.line = Buffer.alloc(0);
    return { text: joined.subarray(0, end).toString("latin1"), next: at + consumedFromChunk };
  }

  private onLine(text: string): void {
    const state = this.state;
    if (state.kind === "size") {
      const match = /^([0-9a-fA-F]{1,12})[ \t]*(;.*)?$/.exec(text);
      if (!match) throw new ChunkedDecodeError(`bad chunk size line (${text.length} bytes that are not a hex size)`); // never quoted: the bytes may hold part of a secret, which redaction cannot recognise
      const size = parseInt(match[1] as string, 16);
      this.state = size === 0 ? { kind: "trailers", bytes: 0 } : { kind: "data", remaining: size };
    } else if (state.kind === "data-end") {
      if (text !== "") throw new ChunkedDecodeError("chunk data not followed by CRLF");
      this.state = { kind: "size" };
    } else if (state.kind === "trailers") {
      const bytes = state.bytes + text.length + 2;
      if (bytes > MAX_TRAILER_BYTES) throw new ChunkedDecodeError("trailers too large");
      this.state = text === "" ? { kind: "done" } : { kind: "trailers", bytes };
    }
  }
}
