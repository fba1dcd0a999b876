// CONNECT tunnels: an opaque byte pipe both ways, half-closes passed on, ended when idle.
import type { Socket } from "node:net";
import { socketPair } from "./socket-pair";

export const ESTABLISHED = Buffer.from("HTTP/1.1 200 Connection Established\r\n\r\n");

/**
 * Resolves when both sockets are closed. `early` holds bytes the client sent right after its head. The
 * bytes are TLS the proxy cannot read, so nothing is substituted or redacted in a tunnel.
 */
export function runTunnel(client: Socket, upstream: Socket, early: Buffer, idleTimeoutMs: number): Promise<void> {
  const { closed, teardown } = socketPair(client, upstream);
  // Either side failing or closing ends both.
  for (const socket of [client, upstream]) {
    socket.on("error", teardown);
    socket.on("close", teardown);
  }
  // Both directions ended: nothing more can flow, so release the sockets.
  let ended = 0;
  const onEnd = () => {
    if (++ended === 2) teardown();
  };
  client.on("end", onEnd);
  upstream.on("end", onEnd);
  // Every byte in either direction passes through the client socket, so its idle timer covers both.
  client.setTimeout(idleTimeoutMs, teardown);
  client.write(ESTABLISHED);
  if (early.length > 0) upstream.write(early);
  client.pipe(upstream);
  upstream.pipe(client);
  return closed;
}
