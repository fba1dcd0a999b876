// Reads one request head from a guest socket, bounded in size and time, keeping the bytes that follow it.
import type { Socket } from "node:net";
import { findHeadEnd } from "./http-head";

/** Thrown when no usable head arrives; `status` is what to answer, null when the client is gone. */
export class HeadReadError extends Error {
  constructor(
    readonly status: 408 | 431 | null,
    message: string,
  ) {
    super(message);
  }
}

export function readHead(socket: Socket, maxHeadBytes: number, timeoutMs: number): Promise<{ head: Buffer; rest: Buffer }> {
  const { promise, resolve, reject } = Promise.withResolvers<{ head: Buffer; rest: Buffer }>();
  let buffered: Buffer = Buffer.alloc(0);
  const settle = (action: () => void) => {
    // Pause first: a flowing stream with no 'data' listener drops bytes.
    socket.pause();
    socket.off("data", onData);
    socket.off("end", onGone);
    socket.off("close", onGone);
    clearTimeout(timer);
    action();
  };
  const onData = (chunk: Buffer) => {
    const before = buffered.length;
    buffered = before === 0 ? chunk : Buffer.concat([buffered, chunk]);
    const end = findHeadEnd(buffered, before);
    if (end !== -1 && end <= maxHeadBytes) settle(() => resolve({ head: buffered.subarray(0, end), rest: buffered.subarray(end) }));
    else if (buffered.length > maxHeadBytes) settle(() => reject(new HeadReadError(431, `request head exceeds ${maxHeadBytes} bytes`)));
  };
  const onGone = () => settle(() => reject(new HeadReadError(null, "client closed before sending a request head")));
  const timer = setTimeout(() => settle(() => reject(new HeadReadError(408, `no complete request head within ${timeoutMs} ms`))), timeoutMs);
  socket.on("data", onData);
  socket.on("end", onGone);
  socket.on("close", onGone);
  socket.resume();
  return promise;
}
