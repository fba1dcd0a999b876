// The proxy's edges: bad requests, big or slow heads, idle tunnels, the cap, half-close, bad upstreams, shutdown.
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEgressProxy } from "../../egress/proxy";
import { createLogger } from "../../app/log";
import { exchange, openClient, parseResponse, startEchoTarget, startHarness, startRawTarget, type Harness, type HarnessOptions } from "./proxy-harness";

const echo = startEchoTarget();
afterAll(() => echo.stop());

let harness: Harness | null = null;
afterEach(async () => {
  await harness?.close();
  harness = null;
});
const start = async (options: Partial<HarnessOptions> = {}) => (harness = await startHarness({ policy: { mode: "allowlist", allow: ["loopback"] }, ...options }));

/** Resolves when the socket closes, with everything it received; rejects after a bound. */
function received(socket: import("node:net").Socket, timeoutMs = 10_000): Promise<string> {
  const { promise, resolve, reject } = Promise.withResolvers<string>();
  let text = "";
  socket.on("data", (chunk: Buffer) => (text += chunk.toString("latin1")));
  const timer = setTimeout(() => reject(new Error(`socket still open after ${timeoutMs} ms`)), timeoutMs);
  socket.on("close", () => {
    clearTimeout(timer);
    resolve(text);
  });
  return promise;
}

describe("egress proxy: bad requests", () => {
  const cases: Array<[string, string, number, RegExp]> = [
    ["a malformed request line", "HELLO\r\n\r\n", 400, /malformed request line/],
    ["origin-form (not a proxy request)", "GET /path HTTP/1.1\r\nHost: a\r\n\r\n", 400, /send the absolute URL/],
    ["an https:// absolute URL", "GET https://a.test/ HTTP/1.1\r\n\r\n", 400, /use CONNECT/],
    ["CONNECT without a port", "CONNECT a.test HTTP/1.1\r\n\r\n", 400, /has no port/],
    ["a smuggling-shaped body", "POST http://127.0.0.1:1/ HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400, /both Transfer-Encoding and Content-Length/],
  ];
  for (const [what, request, status, reason] of cases) {
    test(`${what} → ${status}`, async () => {
      const h = await start();
      const response = parseResponse(await exchange(h.socketPath, request));
      expect(response.status).toBe(status);
      expect(response.body).toMatch(reason);
    });
  }

  test("a head over 64 KiB → 431", async () => {
    const h = await start();
    const request = `GET http://127.0.0.1:${echo.port}/ HTTP/1.1\r\nX-Big: ${"a".repeat(70 * 1024)}\r\n\r\n`;
    expect(parseResponse(await exchange(h.socketPath, request)).status).toBe(431);
  });

  test("a head that never completes → 408 after headTimeoutMs", async () => {
    const h = await start({ limits: { headTimeoutMs: 100 } });
    const response = parseResponse(await exchange(h.socketPath, "GET http://127.0.0.1/ HTTP/1.1\r\nX-Slow: 1\r\n"));
    expect(response.status).toBe(408);
  });
});

describe("egress proxy: connections", () => {
  test("a guest that half-closes after its request → still gets the whole answer", async () => {
    const h = await start();
    const response = parseResponse(await exchange(h.socketPath, `GET http://127.0.0.1:${echo.port}/half HTTP/1.1\r\n\r\n`, { halfClose: true }));
    expect(response.status).toBe(200);
    expect(JSON.parse(response.body).path).toBe("/half");
  });

  test("a guest that stops reading a large answer for a while → still gets all of it (backpressure, no truncation)", async () => {
    const big = startEchoTarget(() => new Response("b".repeat(5 * 1024 * 1024)));
    try {
      const h = await start({ limits: { lingerMs: 20 } });
      const client = await openClient(h.socketPath);
      const all = received(client);
      client.pause();
      client.write(`GET http://127.0.0.1:${big.port}/ HTTP/1.1\r\n\r\n`);
      // Hold the data unread well past lingerMs: buffers fill and the proxy must wait, not cut the answer.
      await new Promise((resolve) => setTimeout(resolve, 200));
      client.resume();
      const response = parseResponse(await all);
      expect(response.body.length).toBe(5 * 1024 * 1024);
    } finally {
      big.stop();
    }
  });

  test("an idle tunnel → closed after idleTimeoutMs", async () => {
    const h = await start({ limits: { idleTimeoutMs: 150 } });
    const client = await openClient(h.socketPath);
    const closed = received(client);
    client.write(`CONNECT 127.0.0.1:${echo.port} HTTP/1.1\r\n\r\n`);
    expect(await closed).toBe("HTTP/1.1 200 Connection Established\r\n\r\n");
  });

  test("a slow but steady answer → outlives idleTimeoutMs (CONNECT and HTTP)", async () => {
    // A byte every 100 ms for 2 s: longer than idleTimeoutMs (1.5 s) in total, never idle for more than a
    // fifteenth of it, so a loaded host's late timers (a 250 ms limit once cut it in CI) cannot fake idleness.
    const target = await startRawTarget((socket) => {
      socket.write("HTTP/1.1 200 OK\r\n\r\n");
      let sent = 0;
      const timer = setInterval(() => {
        socket.write("x");
        if (++sent === 20) {
          clearInterval(timer);
          socket.end("END");
        }
      }, 100);
      socket.on("close", () => clearInterval(timer));
    });
    try {
      const h = await start({ limits: { idleTimeoutMs: 1500 } });
      const tunnel = (await exchange(h.socketPath, `CONNECT 127.0.0.1:${target.port} HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n`)).toString();
      expect(tunnel).toEndWith(`${"x".repeat(20)}END`);
      const plain = parseResponse(await exchange(h.socketPath, `GET http://127.0.0.1:${target.port}/ HTTP/1.1\r\n\r\n`));
      expect(plain.body).toBe(`${"x".repeat(20)}END`);
    } finally {
      await target.stop();
    }
  });

  test("over maxConnections → 503 for the extra connection", async () => {
    const h = await start({ limits: { maxConnections: 1 } });
    const first = await openClient(h.socketPath);
    const firstClosed = received(first);
    first.write(`CONNECT 127.0.0.1:${echo.port} HTTP/1.1\r\n\r\n`);
    // The first connection holds its slot once its tunnel is up.
    await new Promise<void>((resolve) => first.once("data", () => resolve()));
    const second = parseResponse(await exchange(h.socketPath, `GET http://127.0.0.1:${echo.port}/ HTTP/1.1\r\n\r\n`));
    expect(second.status).toBe(503);
    first.destroy();
    await firstClosed;
  });

  test("an upstream that answers garbage → 502 naming the problem", async () => {
    const target = await startRawTarget((socket) => socket.end("NOT HTTP AT ALL\r\n\r\n"));
    try {
      const h = await start();
      const response = parseResponse(await exchange(h.socketPath, `GET http://127.0.0.1:${target.port}/ HTTP/1.1\r\n\r\n`));
      expect(response.status).toBe(502);
      expect(response.body).toContain("malformed status line");
    } finally {
      await target.stop();
    }
  });

  test("an upstream that cuts a Content-Length body short → the guest's connection closes without a complete body", async () => {
    const target = await startRawTarget((socket) => socket.end("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"));
    try {
      const h = await start();
      const raw = (await exchange(h.socketPath, `GET http://127.0.0.1:${target.port}/ HTTP/1.1\r\n\r\n`)).toString("latin1");
      expect(raw).toStartWith("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n");
      expect(raw.endsWith("short")).toBe(true);
    } finally {
      await target.stop();
    }
  });
});

describe("egress proxy: lifecycle", () => {
  test("close() → open tunnels destroyed and the socket file removed", async () => {
    const h = await start();
    const client = await openClient(h.socketPath);
    const closed = received(client);
    client.write(`CONNECT 127.0.0.1:${echo.port} HTTP/1.1\r\n\r\n`);
    await new Promise<void>((resolve) => client.once("data", () => resolve()));
    await h.proxy.close();
    await closed;
    expect(existsSync(h.socketPath)).toBe(false);
  });

  test("a stale socket file → replaced; a regular file at the path → refused", async () => {
    const h = await start();
    // Simulate a crash: the socket file stays, a new proxy takes the path over.
    const dir = mkdtempSync(join(tmpdir(), "ss-egress-"));
    try {
      const log = createLogger("silent");
      const again = await startEgressProxy({ socketPath: h.socketPath, policy: () => ({ mode: "none" }), log });
      expect(parseResponse(await exchange(h.socketPath, "CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n")).headers["x-sandbox-rule"]).toBe("network none");
      await again.close();
      const file = join(dir, "not-a-socket");
      writeFileSync(file, "keep me");
      const error = await startEgressProxy({ socketPath: file, policy: () => ({ mode: "none" }), log }).catch((e: Error) => e);
      expect(String(error)).toContain("is not a socket");
      expect(existsSync(file)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
