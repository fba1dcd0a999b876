// Revocation cuts live traffic, over the real local runtime: a guest opens a long-lived CONNECT tunnel
// through its proxy to a loopback TCP echo server the session's allowlist names (host.sandbox.internal:<port>)
// and keeps it busy; each trigger must cut it within a second, and a connection the same command opens
// afterwards is judged by the policy and grants of now. Targets are loopback servers on the host only.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { createLogger } from "../../app/log";
import type { SecretConfig } from "../../app/secrets-config";
import { createCredentials } from "../../app/services/credentials";
import type { RunResult } from "../../sdk/index";
import { startTcpEcho, type TcpEcho } from "../fixtures/tcp-echo";
import { makeActorFixture, type ActorFixture } from "./fixture";

const VALUE = "revocation-secret-VALUE-0123456789";
const CUT_WITHIN_MS = 1_000;

let f: ActorFixture;
let repo: string;
let echo: TcpEcho;
let http: ReturnType<typeof Bun.serve>;
const authorizations: (string | null)[] = [];

/**
 * The guest's side: a plain-HTTP request with the secret's placeholder, a CONNECT tunnel kept busy with
 * pings until the proxy cuts it, then the same two requests again on new connections.
 */
const PROBE = String.raw`
import os, socket, sys, time
proxy = ("127.0.0.1", 3128)
echo, web, tag = os.environ["ECHO_PORT"], os.environ["WEB_PORT"], os.environ["PROBE_TAG"]
token = os.environ.get("API_TOKEN", "none")

def status(sock):
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            break
        head += chunk
    return head.split(b"\r\n")[0].decode() or "closed"

def get(label):
    s = socket.create_connection(proxy)
    s.sendall(f"GET http://localhost:{web}/{label} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    print(label, "get", status(s), flush=True)
    s.close()

def connect():
    s = socket.create_connection(proxy)
    s.sendall(f"CONNECT host.sandbox.internal:{echo} HTTP/1.1\r\nHost: host.sandbox.internal:{echo}\r\n\r\n".encode())
    return s, status(s)

get("before")
tunnel, line = connect()
print("tunnel", line, flush=True)
tunnel.settimeout(30)
i = 0
while True:
    try:
        tunnel.sendall(f"ping-{tag}-{i}\n".encode())
        if not tunnel.recv(4096):
            print("tunnel closed", flush=True)
            break
    except OSError as error:
        print("tunnel error", error, flush=True)
        break
    i += 1
    time.sleep(0.02)
get("after")
print("after connect", connect()[1], flush=True)
`;

beforeAll(async () => {
  echo = await startTcpEcho();
  http = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (request) => {
      authorizations.push(request.headers.get("authorization"));
      return new Response("ok");
    },
  });
  // The secret goes to localhost only: the tunnel's host (host.sandbox.internal) receives none, so its
  // CONNECT stays an opaque tunnel rather than an intercepted one.
  const secrets: SecretConfig[] = [{ name: "API_TOKEN", env: "TEST_REVOKED_TOKEN", hosts: [`localhost:${http.port}`], scope: "granted" }];
  const credentials = createCredentials({ secrets, gitCredentials: [], env: { TEST_REVOKED_TOKEN: VALUE, HOME: "/nonexistent", PATH: process.env.PATH }, log: createLogger("silent") });
  f = await makeActorFixture({ credentials });
  repo = f.makeRepo();
}, 600_000);
// Each test boots its own session's VM: remove it after, so the cap of running VMs never refuses the next.
afterEach(async () => void (await f.supervisor.sweep(0)), 60_000);
afterAll(async () => {
  http?.stop(true);
  await echo?.stop();
  await f?.teardown();
}, 120_000);

/** The echo server by the host alias (one port), the web server as localhost (loopback must be named for it). */
const allowBoth = () => ({ mode: "allowlist" as const, allow: [`host.sandbox.internal:${echo.port}`, `localhost:${http.port}`, "loopback"] });

/**
 * Starts the probe in the session's VM, waits until its tunnel carries pings, runs `trigger`, and returns
 * how long the echo server's end of the tunnel lived after it, with the probe's output.
 */
async function cutBy(sessionId: string, trigger: () => Promise<unknown>): Promise<{ cutMs: number; result: RunResult | Error }> {
  const run = f.client
    .run(sessionId, { command: 'python3 -c "$PROBE"', cwd: repo, env: { PROBE, PROBE_TAG: sessionId, ECHO_PORT: String(echo.port), WEB_PORT: String(http.port) }, timeoutMs: 60_000 })
    .catch((error: Error) => error);
  // A probe that ends before its tunnel carries pings fails the test with its output, not a timeout.
  const ended = run.then((result) => Promise.reject(new Error(`the probe ended before its tunnel was busy: ${result instanceof Error ? result.message : result.stdout + result.stderr}`)));
  const tunnel = await Promise.race([echo.connectionWith(`ping-${sessionId}-0\n`), ended]);
  await Promise.race([tunnel.waitFor(`ping-${sessionId}-3\n`), ended]);
  ended.catch(() => undefined);
  const triggeredAt = performance.now();
  await trigger();
  const cutMs = (await tunnel.closed) - triggeredAt;
  return { cutMs, result: await run };
}

/** A root session whose allowlist opens the echo server and the web server. */
async function session(id: string, extra: { secrets?: string[] } = {}): Promise<string> {
  await f.client.sessions.register({ id, directory: repo });
  await f.client.sandbox.set(id, { network: allowBoth(), ...extra });
  return id;
}

/** Runs `body` with the settings changed, restoring each key to its default after. */
async function withSettings<T>(change: NonNullable<Parameters<ActorFixture["client"]["settings"]["patch"]>[0]>, body: () => Promise<T>): Promise<T> {
  await f.client.settings.patch(change);
  try {
    return await body();
  } finally {
    await f.client.settings.patch(Object.fromEntries(Object.keys(change).map((key) => [key, null])));
  }
}

const dropLogged = (reason: string) => f.logLines.some((line) => line.includes('"egress connections dropped"') && line.includes(reason));

describe("revocation cuts live traffic", () => {
  test("a tunnel opened before network none keeps carrying traffic → cut at the PUT; the next CONNECT is refused", async () => {
    const id = await session("ses_none");
    const { cutMs, result } = await cutBy(id, () => f.client.sandbox.set(id, { network: { mode: "none" } }));
    expect(cutMs).toBeLessThan(CUT_WITHIN_MS);
    const stdout = (result as RunResult).stdout;
    expect(stdout).toContain("tunnel HTTP/1.1 200");
    expect(stdout).toContain("tunnel closed");
    expect(stdout).toContain("after get HTTP/1.1 403");
    expect(stdout).toContain("after connect HTTP/1.1 403");
    expect(dropLogged('"reason":"network policy changed"')).toBe(true);
  });

  test("a tunnel of a session that follows the settings' default → cut when the default changes to none", async () => {
    await withSettings({ network: allowBoth() }, async () => {
      await f.client.sessions.register({ id: "ses_default", directory: repo });
      const { cutMs, result } = await cutBy("ses_default", () => f.client.settings.patch({ network: { mode: "none" } }));
      expect(cutMs).toBeLessThan(CUT_WITHIN_MS);
      expect((result as RunResult).stdout).toContain("after connect HTTP/1.1 403");
      expect(dropLogged('"reason":"default network policy changed"')).toBe(true);
    });
  });

  test("a tunnel kept open while a secret is revoked → cut at the PUT; the next request carries only the placeholder", async () => {
    const id = await session("ses_secret", { secrets: ["API_TOKEN"] });
    authorizations.length = 0;
    const { cutMs, result } = await cutBy(id, () => f.client.sandbox.set(id, { secrets: [] }));
    expect(cutMs).toBeLessThan(CUT_WITHIN_MS);
    const stdout = (result as RunResult).stdout;
    expect(stdout).toContain("before get HTTP/1.1 200");
    expect(stdout).toContain("after get HTTP/1.1 200");
    expect(stdout).toContain("after connect HTTP/1.1 200"); // the policy did not change
    expect(authorizations[0]).toBe(`Bearer ${VALUE}`);
    expect(authorizations[1]).toMatch(/^Bearer sandbox-placeholder-api-token-[0-9a-f]{24}$/);
    expect(dropLogged('"reason":"secrets changed"')).toBe(true);
  });

  test("a tunnel kept open while git credential forwarding is switched → cut at the PATCH", async () => {
    const id = await session("ses_git");
    await withSettings({ forwardGitCredentials: false }, async () => {
      const { cutMs, result } = await cutBy(id, () => f.client.settings.patch({ forwardGitCredentials: true }));
      expect(cutMs).toBeLessThan(CUT_WITHIN_MS);
      expect((result as RunResult).stdout).toContain("after connect HTTP/1.1 200");
      expect(dropLogged('"reason":"git credential forwarding changed"')).toBe(true);
    });
  });

  test("a tunnel kept open while the sandbox is toggled off → cut at the PUT, before the VM's removal finishes", async () => {
    const id = await session("ses_toggle");
    expect((await cutBy(id, () => f.client.sandbox.set(id, { sandboxed: false }))).cutMs).toBeLessThan(CUT_WITHIN_MS);
    expect(dropLogged('"reason":"sandbox toggled off"')).toBe(true);
  });

  test("a tunnel kept open while its VM is removed (DELETE /api/vms/:name) → cut as the removal starts", async () => {
    const { vmName } = await f.client.sandbox.get(await session("ses_vm"));
    expect((await cutBy("ses_vm", () => f.client.vms.remove(vmName))).cutMs).toBeLessThan(CUT_WITHIN_MS);
    expect(dropLogged('"reason":"VM removal (manual)"')).toBe(true);
  });

  test("a tunnel kept open while its session is deleted → cut at the DELETE", async () => {
    const id = await session("ses_delete");
    expect((await cutBy(id, () => f.client.sessions.delete(id))).cutMs).toBeLessThan(CUT_WITHIN_MS);
    expect(dropLogged('"reason":"session deleted"')).toBe(true);
  });

  test("a tunnel kept open while sandboxing is disabled server-wide → cut at the PATCH", async () => {
    const id = await session("ses_disable");
    await withSettings({ enabled: true }, async () => {
      expect((await cutBy(id, () => f.client.settings.patch({ enabled: false }))).cutMs).toBeLessThan(CUT_WITHIN_MS);
      expect(dropLogged('"reason":"sandboxing disabled"')).toBe(true);
    });
  });
});
