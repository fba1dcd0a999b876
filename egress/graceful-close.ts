// Ending a guest connection without losing the answer: flush, then drain briefly, then destroy.
import type { Socket } from "node:net";

/**
 * Sends `last` (if any) and a FIN. The guest's unread bytes (a pipelined body, an early ClientHello) are
 * read and dropped meanwhile, because closing a socket with unread data signals a reset to the peer. The
 * socket is destroyed `lingerMs` after everything was flushed, or earlier when the guest closes.
 */
export function endGracefully(socket: Socket, lingerMs: number, last?: Buffer): void {
  socket.on("data", () => {});
  socket.resume();
  socket.once("finish", () => setTimeout(() => socket.destroy(), lingerMs).unref());
  if (last) socket.end(last);
  else socket.end();
}
