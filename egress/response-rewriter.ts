// Upstream response → guest bytes: Connection: close, hop-by-hop out, secrets redacted, re-framed. Pure.
import { ChunkedDecodeError, ChunkedDecoder } from "./chunked-decoder";
import { findHeadEnd, headerTokens, headerValues, parseResponseHead, serializeHead, type HeaderField, type ResponseHead } from "./http-head";
import type { SecretRedactor } from "./secret-redactor";

/** Thrown when the upstream's answer cannot be passed on; before any byte went out it becomes a 502. */
export class UpstreamResponseError extends Error {}

/** Exported so the tests build options. */
export type ResponseRewriteOptions = {
  requestMethod: string;
  clientVersion: "HTTP/1.0" | "HTTP/1.1";
  /** Null: the body passes through unmodified. */
  redactor: SecretRedactor | null;
  /** A secret went out with this request, so a compressed answer (which redaction cannot read) is refused. */
  refuseEncoded: boolean;
  maxHeadBytes: number;
};

type Body = { kind: "none" } | { kind: "close" } | { kind: "length"; remaining: number } | { kind: "chunked"; decoder: ChunkedDecoder };

const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "proxy-authenticate"]);

/** Redaction changes lengths, so a redacted body is re-sent chunked (or close-delimited to HTTP/1.0). */
export class ResponseRewriter {
  private headBuffer: Buffer = Buffer.alloc(0);
  private body: Body | null = null;
  private chunkedOut = false;
  private finished = false;
  private sentAnything = false;

  constructor(private readonly options: ResponseRewriteOptions) {}

  /** True once any byte was produced for the guest: from then on a failure can only cut the connection. */
  get responded(): boolean {
    return this.sentAnything;
  }

  /** True once the whole response went out; the connection can be closed. */
  get complete(): boolean {
    return this.finished;
  }

  push(chunk: Buffer): Buffer[] {
    const out: Buffer[] = [];
    let rest = chunk;
    while (rest.length > 0 && !this.finished) {
      if (this.body !== null) {
        this.onBody(rest, out);
        break;
      }
      const joined = this.headBuffer.length === 0 ? rest : Buffer.concat([this.headBuffer, rest]);
      const end = findHeadEnd(joined, this.headBuffer.length);
      if (end === -1 || end > this.options.maxHeadBytes) {
        if (joined.length > this.options.maxHeadBytes) throw new UpstreamResponseError(`response head exceeds ${this.options.maxHeadBytes} bytes`);
        this.headBuffer = Buffer.from(joined);
        break;
      }
      this.headBuffer = Buffer.alloc(0);
      this.onHead(joined.subarray(0, end), out);
      rest = joined.subarray(end);
    }
    if (out.length > 0) this.sentAnything = true;
    return out;
  }

  /** The upstream closed. `complete: false` means the body was cut short: the guest must see an error. */
  end(): { out: Buffer[]; complete: boolean } {
    if (this.finished) return { out: [], complete: true };
    if (this.body === null) {
      if (!this.sentAnything) throw new UpstreamResponseError("upstream closed the connection without a response");
      return { out: [], complete: false };
    }
    if (this.body.kind !== "close") return { out: [], complete: false };
    const out: Buffer[] = [];
    this.finishBody(out);
    return { out, complete: true };
  }

  private onHead(bytes: Buffer, out: Buffer[]): void {
    // Parse the redacted head: a parse error quotes the upstream's bytes, and it goes to logs and the guest.
    const parsed = parseResponseHead(this.redactHead(bytes).toString("latin1"));
    if (!parsed.ok) throw new UpstreamResponseError(parsed.reason);
    const head = parsed.value;
    if (head.status >= 100 && head.status < 200 && head.status !== 101) {
      out.push(this.redactHead(bytes)); // 100 Continue and friends: passed on, the real head follows
      return;
    }
    const body = this.bodyOf(head);
    if (this.options.refuseEncoded && body.kind !== "none") this.refuseIfEncoded(head.headers);
    const client11 = this.options.clientVersion === "HTTP/1.1";
    this.chunkedOut = client11 && (body.kind === "chunked" || (body.kind === "length" && this.options.redactor !== null));
    const headers = this.rewriteHeaders(head.headers, body);
    out.push(this.redactHead(serializeHead(`${head.version} ${head.status}${head.reason ? ` ${head.reason}` : ""}`, headers)));
    this.body = body;
    if (body.kind === "none" || (body.kind === "length" && body.remaining === 0)) this.finishBody(out);
  }

  private bodyOf(head: ResponseHead): Body {
    if (this.options.requestMethod === "HEAD" || head.status === 204 || head.status === 304) return { kind: "none" };
    if (head.status === 101) return { kind: "close" };
    const codings = headerTokens(head.headers, "transfer-encoding");
    if (codings.length > 0) return codings[codings.length - 1] === "chunked" ? { kind: "chunked", decoder: new ChunkedDecoder() } : { kind: "close" };
    const lengths = new Set(headerValues(head.headers, "content-length").flatMap((v) => v.split(",").map((s) => s.trim())));
    if (lengths.size === 0) return { kind: "close" };
    const [length] = [...lengths];
    if (lengths.size > 1 || !/^\d{1,15}$/.test(length ?? "")) throw new UpstreamResponseError("response has an invalid or conflicting Content-Length");
    return { kind: "length", remaining: Number(length) };
  }

  private refuseIfEncoded(headers: readonly HeaderField[]): void {
    const codings = [...headerTokens(headers, "content-encoding"), ...headerTokens(headers, "transfer-encoding").filter((t) => t !== "chunked")];
    const encoded = codings.filter((c) => c !== "identity");
    if (encoded.length > 0) {
      throw new UpstreamResponseError(
        `the request carried a secret, and the response is encoded (${encoded.join(", ")}) so it cannot be checked for the secret; the proxy asked for Accept-Encoding: identity`,
      );
    }
  }

  private rewriteHeaders(headers: readonly HeaderField[], body: Body): HeaderField[] {
    const named = new Set(headerTokens(headers, "connection").filter((t) => t !== "content-length" && t !== "transfer-encoding"));
    const redacting = this.options.redactor !== null;
    const kept = headers.filter((h) => {
      const name = h.name.toLowerCase();
      if (HOP_BY_HOP.has(name) || named.has(name)) return false;
      if (name === "transfer-encoding") return body.kind !== "chunked" || this.chunkedOut;
      // Chunked framing wins over Content-Length (RFC 9112 §6.3); redaction changes the length anyway.
      if (name === "content-length") return !(body.kind === "chunked" || (body.kind === "length" && redacting));
      return true;
    });
    if (body.kind === "length" && this.chunkedOut) kept.push({ name: "Transfer-Encoding", value: "chunked" });
    kept.push({ name: "Connection", value: "close" });
    return kept;
  }

  private onBody(bytes: Buffer, out: Buffer[]): void {
    const body = this.body as Body;
    try {
      if (body.kind === "close") this.emit(bytes, out);
      else if (body.kind === "length") {
        const take = Math.min(body.remaining, bytes.length);
        this.emit(bytes.subarray(0, take), out);
        body.remaining -= take;
        if (body.remaining === 0) this.finishBody(out);
      } else if (body.kind === "chunked") {
        for (const piece of body.decoder.push(bytes).data) this.emit(piece, out);
        if (body.decoder.done) this.finishBody(out);
      }
    } catch (error) {
      if (error instanceof ChunkedDecodeError) throw new UpstreamResponseError(`bad chunked body: ${error.message}`);
      throw error;
    }
  }

  private emit(data: Buffer, out: Buffer[]): void {
    const piece = this.options.redactor ? this.options.redactor.push(data) : data;
    // A zero-length chunk would end a chunked body early, so empty pieces are never framed.
    if (piece.length === 0) return;
    if (this.chunkedOut) out.push(Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from("\r\n"));
    else out.push(piece);
  }

  private finishBody(out: Buffer[]): void {
    const tail = this.options.redactor?.flush();
    if (tail && tail.length > 0) {
      if (this.chunkedOut) out.push(Buffer.from(`${tail.length.toString(16)}\r\n`), tail, Buffer.from("\r\n"));
      else out.push(tail);
    }
    if (this.chunkedOut) out.push(Buffer.from("0\r\n\r\n"));
    this.finished = true;
  }

  private redactHead(bytes: Buffer): Buffer {
    return this.options.redactor ? this.options.redactor.redactAll(bytes) : bytes;
  }
}
