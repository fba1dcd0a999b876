// A WebSocket client on a plain TCP socket, for what a library client cannot do: stop reading (its socket
// paused, so the server's sends back up as behind a slow link) and read again later. Binary frames in are
// collected; text frames (the shell's JSON control messages) are kept apart.
import { randomBytes } from "node:crypto";
import { connect, type Socket } from "node:net";

export type RawWebSocket = {
  /** Types bytes at the server (one masked binary frame, as a client must send). */
  send(data: string): void;
  pause(): void;
  resume(): void;
  /** Binary payload bytes received so far (decoded as latin1 text: terminal output). */
  binary(): string;
  /** The last 256 bytes of binary payload (cheap to poll). */
  tail(): string;
  texts(): string[];
  closed: Promise<void>;
  close(): void;
};

export async function openRawWebSocket(port: number, path: string, token: string): Promise<RawWebSocket> {
  const socket: Socket = connect(port, "127.0.0.1");
  await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  const key = randomBytes(16).toString("base64");
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer ${token}\r\n\r\n`);
  let buffered = Buffer.alloc(0);
  let upgraded = false;
  const binary: Buffer[] = [];
  let tail = "";
  const texts: string[] = [];
  const opened = Promise.withResolvers<void>();
  const closed = Promise.withResolvers<void>();
  socket.on("data", (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    if (!upgraded) {
      const end = buffered.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = buffered.subarray(0, end).toString();
      if (!head.startsWith("HTTP/1.1 101")) return opened.reject(new Error(`handshake refused: ${head}`));
      upgraded = true;
      buffered = buffered.subarray(end + 4);
      opened.resolve();
    }
    for (;;) {
      if (buffered.length < 2) return;
      const opcode = buffered[0]! & 0x0f;
      let length = buffered[1]! & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (buffered.length < 4) return;
        length = buffered.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (buffered.length < 10) return;
        length = Number(buffered.readBigUInt64BE(2));
        offset = 10;
      }
      if (buffered.length < offset + length) return;
      const payload = buffered.subarray(offset, offset + length);
      buffered = buffered.subarray(offset + length);
      if (opcode === 2) {
        binary.push(Buffer.from(payload));
        tail = (tail + payload.subarray(Math.max(0, payload.length - 256)).toString("latin1")).slice(-256);
      }
      else if (opcode === 1) texts.push(payload.toString("utf8"));
      else if (opcode === 8) socket.end();
    }
  });
  socket.on("close", () => closed.resolve());
  socket.on("error", () => closed.resolve());
  await opened.promise;
  return {
    send(data) {
      const payload = Buffer.from(data);
      if (payload.length >= 126) throw new Error("only short frames");
      const mask = randomBytes(4);
      const masked = Buffer.from(payload.map((byte, i) => byte ^ mask[i % 4]!));
      socket.write(Buffer.concat([Buffer.from([0x82, 0x80 | payload.length]), mask, masked]));
    },
    pause: () => void socket.pause(),
    resume: () => void socket.resume(),
    binary: () => Buffer.concat(binary).toString("latin1"),
    tail: () => tail,
    texts: () => [...texts],
    closed: closed.promise,
    close: () => socket.destroy(),
  };
}
