// Plain HTTP forwarding: one request per connection, the answer through the ResponseRewriter, then close.
import type { Socket } from "node:net";
import { endGracefully } from "./graceful-close";
import { plainResponse } from "./proxy-responses";
import { socketPair } from "./socket-pair";
import { UpstreamResponseError, type ResponseRewriter } from "./response-rewriter";

type ForwardOptions = {
  idleTimeoutMs: number;
  lingerMs: number;
  onUpstreamError: (reason: string) => void;
  /** Called once the answer is decided, before the guest's connection is ended. */
  onSettled?: () => void;
  /** Applied to every error text before the guest or a log line sees it (it may quote upstream bytes). */
  redact?: (text: string) => string;
};

/** Resolves when both sockets are closed. `body` holds bytes the client sent right after its head. */
export function forwardHttp(client: Socket, upstream: Socket, head: Buffer, body: Buffer, rewriter: ResponseRewriter, options: ForwardOptions): Promise<void> {
  const { closed, teardown } = socketPair(client, upstream);
  client.on("close", teardown);
  client.on("error", teardown);
  upstream.on("error", (error: Error & { code?: string }) =>
    settle(() => {
      if (rewriter.complete) return { out: [], complete: true };
      if (!rewriter.responded) throw new UpstreamResponseError(`upstream connection failed: ${error.code ?? error.message}`);
      return { out: [], complete: false };
    }),
  );

  let draining = false;
  const send = (pieces: Buffer[]) => {
    for (const piece of pieces) {
      // Backpressure: a slow guest slows the upstream read instead of growing memory.
      if (!client.write(piece) && !draining) {
        draining = true;
        upstream.pause();
        client.once("drain", () => {
          draining = false;
          upstream.resume();
        });
      }
    }
  };
  const fail = (error: unknown) => {
    const reason = (options.redact ?? ((text: string) => text))(error instanceof UpstreamResponseError ? error.message : String(error));
    options.onUpstreamError(reason);
    upstream.destroy();
    if (rewriter.responded) teardown();
    else finish(plainResponse(502, `session-sandbox egress proxy: bad response from upstream: ${reason}`));
  };
  let settled = false;
  // The response is over (or the upstream went away): finish the guest's side exactly once.
  const settle = (last: () => { out: Buffer[]; complete: boolean }) => {
    if (settled) return;
    settled = true;
    let result: { out: Buffer[]; complete: boolean };
    try {
      result = last();
    } catch (error) {
      fail(error);
      return;
    }
    send(result.out);
    options.onSettled?.();
    upstream.destroy();
    // A cut-short body still ends cleanly: its framing (no last chunk, fewer bytes than Content-Length)
    // already tells the guest it is incomplete, and the bytes that did arrive are not thrown away.
    finish();
  };
  const finish = (last?: Buffer) => {
    client.unpipe(upstream);
    endGracefully(client, options.lingerMs, last);
  };

  upstream.on("data", (chunk: Buffer) => {
    if (settled) return;
    let out: Buffer[];
    try {
      out = rewriter.push(chunk);
    } catch (error) {
      settled = true;
      fail(error);
      return;
    }
    send(out);
    if (rewriter.complete) settle(() => ({ out: [], complete: true }));
  });
  upstream.on("end", () => settle(() => rewriter.end()));
  // Every byte either way passes through the upstream socket (guest body out, answer in), so its idle
  // timer covers both directions, also while the rewriter is still holding back bytes.
  upstream.setTimeout(options.idleTimeoutMs, teardown);
  upstream.write(head);
  if (body.length > 0) upstream.write(body);
  // The guest's end is not passed on: some servers abort a request whose client half-closed.
  client.pipe(upstream, { end: false });
  return closed;
}
