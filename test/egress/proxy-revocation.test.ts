// Revocation at the proxy: dropConnections cuts every open connection (CONNECT tunnels, forwards waiting on
// an upstream, connections still resolving) at once and keeps listening, so the next connection is judged
// by the policy of now. Real proxy over its Unix socket, loopback targets on port 0.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import type { Policy } from "../../egress/policy";
import { startEgressProxy } from "../../egress/proxy";
import { createLogger } from "../../app/log";
import { startTcpEcho, type TcpEcho } from "../fixtures/tcp-echo";
import { makeTestPki } from "../fixtures/test-pki";
import { exchange, openClient, parseResponse, startHarness, startRawTarget, type Harness } from "./proxy-harness";

let echo: TcpEcho;
beforeAll(async () => {
  echo = await startTcpEcho();
});
afterAll(() => echo.stop());

let harness: Harness | null = null;
afterEach(async () => {
  await harness?.close();
  harness = null;
});

const LOOPBACK: Policy = { mode: "allowlist", allow: ["loopback"] };

/** Reads from `socket` until `text` has arrived; resolves with everything read. */
function readUntil(socket: Socket, text: string): Promise<string> {
  const { promise, resolve } = Promise.withResolvers<string>();
  let seen = "";
  const onData = (chunk: Buffer) => {
    seen += chunk.toString("latin1");
    if (!seen.includes(text)) return;
    socket.off("data", onData);
    resolve(seen);
  };
  socket.on("data", onData);
  return promise;
}

const closedAt = (socket: Socket) => new Promise<number>((resolve) => socket.once("close", () => resolve(performance.now())));

/** A CONNECT tunnel through the proxy to the echo server, proven to carry bytes both ways. */
async function openTunnel(h: Harness): Promise<Socket> {
  const client = await openClient(h.socketPath);
  client.on("error", () => undefined);
  client.write(`CONNECT 127.0.0.1:${echo.port} HTTP/1.1\r\nHost: 127.0.0.1:${echo.port}\r\n\r\n`);
  expect(await readUntil(client, "\r\n\r\n")).toStartWith("HTTP/1.1 200");
  client.write("ping-1\n");
  expect(await readUntil(client, "ping-1\n")).toBe("ping-1\n");
  return client;
}

describe("egress proxy: dropConnections", () => {
  test("a tunnel opened before the policy became none keeps carrying traffic → cut at the drop, both ends, and the next CONNECT is refused", async () => {
    let policy: Policy = LOOPBACK;
    const h = (harness = await startHarness({ policy: () => policy }));
    const client = await openTunnel(h);
    const upstream = echo.connections.at(-1)!;
    const clientClosed = closedAt(client);
    policy = { mode: "none" };
    const cutAt = performance.now();
    expect(h.proxy.dropConnections("network policy changed")).toBe(1);
    const [clientMs, upstreamMs] = [(await clientClosed) - cutAt, (await upstream.closed) - cutAt];
    expect(clientMs).toBeLessThan(1_000);
    expect(upstreamMs).toBeLessThan(1_000);
    expect(h.logLines.filter((l) => l.includes('"egress connections dropped"'))).toEqual([expect.stringContaining('"reason":"network policy changed"')]);
    // Still listening, and judging by the policy of now.
    const again = parseResponse(await exchange(h.socketPath, `CONNECT 127.0.0.1:${echo.port} HTTP/1.1\r\n\r\n`));
    expect(again.status).toBe(403);
    expect(again.headers["x-sandbox-rule"]).toBe("network none");
  });

  test("a plain-HTTP request waiting on its upstream's answer → cut, and the upstream's socket too", async () => {
    const arrived = Promise.withResolvers<Socket>();
    const silent = await startRawTarget((socket) => arrived.resolve(socket)); // never answers
    try {
      const h = (harness = await startHarness({ policy: LOOPBACK }));
      const client = await openClient(h.socketPath);
      client.on("error", () => undefined);
      const clientClosed = closedAt(client);
      client.write(`GET http://127.0.0.1:${silent.port}/slow HTTP/1.1\r\nHost: x\r\n\r\n`);
      const upstream = await arrived.promise;
      const upstreamClosed = closedAt(upstream);
      const cutAt = performance.now();
      expect(h.proxy.dropConnections("secrets changed")).toBe(1);
      expect((await clientClosed) - cutAt).toBeLessThan(1_000);
      expect((await upstreamClosed) - cutAt).toBeLessThan(1_000);
    } finally {
      await silent.stop();
    }
  });

  test("an intercepted tunnel to a secret host, its request waiting on the upstream → cut, the guest's TLS and the upstream's request both", async () => {
    const upstreamPki = makeTestPki();
    const managerPki = makeTestPki("manager CA stand-in");
    const arrived = Promise.withResolvers<AbortSignal>();
    const never = Promise.withResolvers<Response>();
    const slow = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: (({ certPem, keyPem }) => ({ cert: certPem, key: keyPem }))(upstreamPki.issue("slow.test")),
      fetch: (request) => {
        arrived.resolve(request.signal);
        return never.promise; // answers only when the test ends
      },
    });
    try {
      const h = (harness = await startHarness({
        policy: { mode: "allowlist", allow: ["slow.test", "loopback"] },
        names: { "slow.test": ["127.0.0.1"] },
        secrets: [{ name: "API_TOKEN", placeholder: "sandbox-placeholder-revocation", value: "revocation-value-0123456789", hosts: ["slow.test"] }],
        interception: { leafFor: async (host) => managerPki.issue(host), upstreamRoots: [upstreamPki.caPem] },
      }));
      const raw = await openClient(h.socketPath);
      raw.on("error", () => undefined);
      raw.write(`CONNECT slow.test:${slow.port} HTTP/1.1\r\n\r\n`);
      expect(await readUntil(raw, "\r\n\r\n")).toStartWith("HTTP/1.1 200");
      const secure = tlsConnect({ socket: raw, servername: "slow.test", ca: managerPki.caPem });
      secure.on("error", () => undefined);
      // The raw socket under the guest's TLS: Bun's TLS wrapper over an existing socket does not always
      // report the close of the socket it wraps.
      const guestClosed = closedAt(raw);
      secure.write("GET /slow HTTP/1.1\r\nHost: slow.test\r\nAuthorization: Bearer sandbox-placeholder-revocation\r\n\r\n");
      const upstreamSignal = await arrived.promise;
      const upstreamAborted = new Promise<number>((resolve) => upstreamSignal.addEventListener("abort", () => resolve(performance.now()), { once: true }));
      const cutAt = performance.now();
      expect(h.proxy.dropConnections("secrets changed")).toBe(1);
      expect((await guestClosed) - cutAt).toBeLessThan(1_000);
      expect((await upstreamAborted) - cutAt).toBeLessThan(1_000);
    } finally {
      never.resolve(new Response("too late"));
      slow.stop(true);
      upstreamPki.cleanup();
      managerPki.cleanup();
    }
  });

  test("a connection still resolving its target when dropped → never connects upstream", async () => {
    const asked = Promise.withResolvers<void>();
    const answer = Promise.withResolvers<string[]>();
    const dir = mkdtempSync(join(tmpdir(), "ss-egress-slow-"));
    const proxy = await startEgressProxy({
      socketPath: join(dir, "proxy.sock"),
      policy: () => ({ mode: "allowlist", allow: ["slow.test", "loopback"] }),
      resolve: () => {
        asked.resolve();
        return answer.promise;
      },
      hostAddresses: () => ["127.0.0.1"],
      log: createLogger("silent"),
    });
    try {
      const before = echo.connections.length;
      const client = await openClient(proxy.socketPath);
      client.on("error", () => undefined);
      const clientClosed = closedAt(client);
      client.write(`CONNECT slow.test:${echo.port} HTTP/1.1\r\n\r\n`);
      await asked.promise;
      expect(proxy.dropConnections("sandbox toggled off")).toBe(1);
      await clientClosed;
      answer.resolve(["127.0.0.1"]);
      // The cut connection's continuation runs first (a microtask); a fresh tunnel needs round trips, so
      // once it carries bytes, the cut one has had every chance to connect.
      const fresh = await openClient(proxy.socketPath);
      fresh.write(`CONNECT slow.test:${echo.port} HTTP/1.1\r\n\r\n`);
      expect(await readUntil(fresh, "\r\n\r\n")).toStartWith("HTTP/1.1 200");
      fresh.write("ping-2\n");
      await readUntil(fresh, "ping-2\n");
      fresh.destroy();
      expect(echo.connections.length).toBe(before + 1);
    } finally {
      await proxy.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("no open connection → 0, and no log line", async () => {
    const h = (harness = await startHarness({ policy: LOOPBACK }));
    expect(h.proxy.dropConnections("session deleted")).toBe(0);
    expect(h.logLines.some((l) => l.includes("egress connections dropped"))).toBe(false);
  });
});
