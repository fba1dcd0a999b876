// Egress proxy test wiring: proxy on a temp Unix socket, loopback targets on port 0, a raw HTTP client.
import { mkdtempSync, rmSync } from "node:fs";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ChunkedDecoder } from "../../egress/chunked-decoder";
import type { EgressDenial, EgressLimits, Interception } from "../../egress/connection-context";
import type { Policy } from "../../egress/policy";
import { startEgressProxy, type EgressProxy } from "../../egress/proxy";
import type { SecretRule } from "../../egress/secrets";
import { createLogger } from "../../app/log";

export type Harness = {
  socketPath: string;
  dir: string;
  proxy: EgressProxy;
  logLines: string[];
  /** Every name the proxy asked the resolver for, in order. */
  lookups: string[];
  /** Every refusal the proxy told its owner of, in order. */
  denials: EgressDenial[];
  close(): Promise<void>;
};

export type HarnessOptions = {
  policy: Policy | (() => Policy);
  /** Test names → addresses; any other name fails like NXDOMAIN. The system resolver is never used. */
  names?: Record<string, string[]>;
  secrets?: SecretRule[] | (() => SecretRule[]);
  limits?: Partial<EgressLimits>;
  interception?: Interception;
  /** The owner's refusal listener throws (the guest's answer must not depend on it). */
  failingDenialListener?: true;
};

export async function startHarness(options: HarnessOptions): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), "ss-egress-"));
  const socketPath = join(dir, "proxy.sock");
  const logLines: string[] = [];
  const lookups: string[] = [];
  const denials: EgressDenial[] = [];
  const names = options.names ?? {};
  const proxy = await startEgressProxy({
    socketPath,
    policy: typeof options.policy === "function" ? options.policy : () => options.policy as Policy,
    resolve: async (host) => {
      lookups.push(host);
      const found = names[host];
      if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
      return found;
    },
    secrets: typeof options.secrets === "function" ? options.secrets : () => (options.secrets as SecretRule[] | undefined) ?? [],
    hostAddresses: () => ["127.0.0.1", "::1"],
    onDenied: (denial) => {
      denials.push(denial);
      if (options.failingDenialListener) throw new Error("listener broke");
    },
    log: createLogger("debug", (line) => logLines.push(line)),
    limits: options.limits,
    interception: options.interception,
  });
  return {
    socketPath,
    dir,
    proxy,
    logLines,
    lookups,
    denials,
    async close() {
      await proxy.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Writes `data` to the proxy's socket and returns every byte received until the proxy closes. */
export function exchange(socketPath: string, data: string | Buffer, options: { halfClose?: boolean; timeoutMs?: number } = {}): Promise<Buffer> {
  const { promise, resolve, reject } = Promise.withResolvers<Buffer>();
  const socket = createConnection({ path: socketPath, allowHalfOpen: true });
  const chunks: Buffer[] = [];
  const timer = setTimeout(() => {
    socket.destroy();
    reject(new Error(`no close from the proxy within ${options.timeoutMs ?? 10_000} ms; got ${JSON.stringify(Buffer.concat(chunks).toString("latin1").slice(0, 300))}`));
  }, options.timeoutMs ?? 10_000);
  socket.on("data", (chunk: Buffer) => chunks.push(chunk));
  socket.on("error", () => {});
  socket.on("close", () => {
    clearTimeout(timer);
    resolve(Buffer.concat(chunks));
  });
  socket.on("end", () => socket.end());
  socket.write(data);
  if (options.halfClose) socket.end();
  return promise;
}

/** A connected raw client for tests that need to act between writes. */
export function openClient(socketPath: string): Promise<Socket> {
  const { promise, resolve, reject } = Promise.withResolvers<Socket>();
  const socket = createConnection({ path: socketPath });
  socket.once("connect", () => resolve(socket));
  socket.once("error", reject);
  return promise;
}

export type ParsedResponse = { status: number; headers: Record<string, string>; body: string; rest: string };

/** Parses one HTTP/1.1 response (Content-Length, chunked or close-delimited) from raw bytes. */
export function parseResponse(raw: Buffer | string): ParsedResponse {
  const text = typeof raw === "string" ? raw : raw.toString("latin1");
  const end = text.indexOf("\r\n\r\n");
  if (end === -1) throw new Error(`no response head in ${JSON.stringify(text.slice(0, 200))}`);
  const [statusLine = "", ...lines] = text.slice(0, end).split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) headers[line.slice(0, line.indexOf(":")).toLowerCase()] = line.slice(line.indexOf(":") + 1).trim();
  const after = text.slice(end + 4);
  const status = Number(statusLine.split(" ")[1]);
  if (headers["transfer-encoding"]?.toLowerCase() === "chunked") {
    const decoder = new ChunkedDecoder();
    const { data, extra } = decoder.push(Buffer.from(after, "latin1"));
    if (!decoder.done) throw new Error("chunked body incomplete");
    return { status, headers, body: Buffer.concat(data).toString("latin1"), rest: extra.toString("latin1") };
  }
  if (headers["content-length"] !== undefined) {
    const length = Number(headers["content-length"]);
    return { status, headers, body: after.slice(0, length), rest: after.slice(length) };
  }
  return { status, headers, body: after, rest: "" };
}

/** What the loopback echo target saw: the request as it arrived, so tests can check substitution. */
export type Seen = { method: string; path: string; headers: Record<string, string>; body: string };

/** A loopback HTTP target that answers with a JSON echo of the request it received. */
export function startEchoTarget(extra?: (request: Request, seen: Seen) => Response | undefined) {
  const seen: Seen[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const entry: Seen = { method: request.method, path: url.pathname + url.search, headers: Object.fromEntries(request.headers), body: await request.text() };
      seen.push(entry);
      return extra?.(request, entry) ?? Response.json(entry);
    },
  });
  return { port: server.port as number, seen, stop: () => server.stop(true) };
}

/** A raw loopback TCP target: `onConnection` writes whatever bytes the test wants. */
export async function startRawTarget(onConnection: (socket: Socket, request: string) => void): Promise<{ port: number; stop(): Promise<void> }> {
  const open = new Set<Socket>();
  const server: Server = createServer((socket) => {
    open.add(socket);
    socket.on("close", () => open.delete(socket));
    let received = "";
    socket.on("error", () => {});
    socket.on("data", (chunk) => {
      const before = received.length;
      received += chunk.toString("latin1");
      if (before < received.length && received.includes("\r\n\r\n") && !(received.slice(0, before).includes("\r\n\r\n"))) onConnection(socket, received);
    });
  });
  const { promise, resolve } = Promise.withResolvers<void>();
  server.listen(0, "127.0.0.1", () => resolve());
  await promise;
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return {
    port: address.port,
    stop: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        for (const socket of open) socket.destroy();
      }),
  };
}

/** The socat stand-in of a VM: every TCP connection to 127.0.0.1:<port> becomes one to the proxy's socket. */
export async function startTcpForwarder(socketPath: string): Promise<{ port: number; close(): Promise<void> }> {
  const server = createServer({ allowHalfOpen: true }, (tcp) => {
    const unix = createConnection({ path: socketPath, allowHalfOpen: true });
    tcp.pipe(unix);
    unix.pipe(tcp);
    tcp.on("error", () => unix.destroy());
    unix.on("error", () => tcp.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return { port: (server.address() as { port: number }).port, close: () => new Promise<void>((done) => server.close(() => done())) };
}
