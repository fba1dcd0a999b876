// Attacks on the real manager process from outside any VM: raw HTTP with a malformed Host header
// and every environment variable with a bad value.
import type { TCPSocketListener } from "bun";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { availableParallelism, totalmem } from "node:os";
import { join } from "node:path";
import { makeTempDir } from "../helpers";
import { runManagerToExit, startManager, type ManagerProcess } from "../manager-process";

const ROOT = join(import.meta.dir, "..", "..");

type RawResponse = { status: number; head: string; body: string };

/** Sends `request` as is over TCP (no client rewrites the Host header) and reads until the server closes. */
async function sendRaw(url: string, request: string): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  const closed = Promise.withResolvers<string>();
  let received = "";
  const decoder = new TextDecoder();
  const socket = await Bun.connect({
    hostname,
    port: Number(port),
    socket: {
      data: (_socket, chunk) => void (received += decoder.decode(chunk, { stream: true })),
      close: () => closed.resolve(received),
      error: (_socket, error) => closed.reject(error),
    },
  });
  socket.write(request);
  // A server that keeps the connection open after answering still has to answer within 5 s.
  const timer = setTimeout(() => socket.end(), 5_000);
  const text = await closed.promise.finally(() => clearTimeout(timer));
  const split = text.indexOf("\r\n\r\n");
  const head = split < 0 ? text : text.slice(0, split);
  return { status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0), head, body: split < 0 ? "" : text.slice(split + 4) };
}

/** Health over a normal connection must answer within 1 s: the attack did not wedge the manager. */
async function expectHealthyWithin1s(url: string): Promise<void> {
  const res = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(1_000) });
  expect(res.status).toBe(200);
}

let manager: ManagerProcess;
let dataDir: string;

beforeAll(async () => {
  dataDir = makeTempDir("ss-attack-http-");
  manager = await startManager(dataDir, { SANDBOX_RUNTIME: "msb" }); // no VM needed: nothing to boot
});

afterAll(async () => {
  await manager.stop();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(manager.runtimeDir, { recursive: true, force: true });
});

/** What a response to an unauthenticated stranger must never contain. */
function expectNoInternals(response: RawResponse): void {
  expect(response.status).toBeLessThan(500);
  for (const secret of [ROOT, dataDir, manager.runtimeDir, ".ts:", "<!doctype", "<html", "node_modules"]) {
    expect(`${response.head}\n${response.body}`.toLowerCase()).not.toContain(secret.toLowerCase());
  }
}

describe("malformed Host header", () => {
  const HOSTS = ["[", "[::1", "[zz]", "a b", "", "x:99999", "%%", "ex\tample", "é.com", "a/b", "a@b", "a?b", "a#b", ":80", "[::1]:x", "a:b:c"];

  test("malformed Host header → 400 JSON, no source or paths", async () => {
    for (const host of HOSTS) {
      for (const path of ["/api/health", "/api/settings/sandbox", "/nowhere"]) {
        const response = await sendRaw(manager.url, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
        expectNoInternals(response);
        expect([host, path, response.status]).toEqual([host, path, 400]);
        expect(response.head.toLowerCase()).toContain("content-type: application/json");
        expect(JSON.parse(response.body)).toEqual({ code: "INVALID_HOST", message: expect.stringContaining("Host") });
      }
      await expectHealthyWithin1s(manager.url);
    }
  });

  test("HTTP/1.0 without a Host header → 400 JSON, not a crash page", async () => {
    const response = await sendRaw(manager.url, "GET /api/health HTTP/1.0\r\n\r\n");
    expectNoInternals(response);
    expect(response.status).toBe(400);
    expect(JSON.parse(response.body)).toMatchObject({ code: "INVALID_HOST" });
  });

  test("odd request targets and paths → never 5xx, never source or paths", async () => {
    const targets = ["http://evil.example/api/health", "/%zz", "/api/sessions/%zz", "/api/sessions/%E0%A4%A", "/api/health?%zz=%", "//x/api/health", "/api/../../etc/passwd", `/api/${"a".repeat(8_000)}`];
    for (const target of targets) {
      const response = await sendRaw(manager.url, `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
      expectNoInternals(response);
    }
    await expectHealthyWithin1s(manager.url);
  });
});

describe("bad environment values", () => {
  let scratch: string;
  let busy: TCPSocketListener;
  beforeAll(() => {
    scratch = makeTempDir("ss-attack-env-");
    writeFileSync(join(scratch, "a-file"), "not a directory");
    busy = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data: () => undefined } });
  });
  afterAll(() => {
    busy.stop(true);
    rmSync(scratch, { recursive: true, force: true });
  });

  const overHostCpus = String(Math.max(64, availableParallelism() + 1));
  const overHostMemory = `${Math.ceil(totalmem() / 2 ** 30) + 1}G`;
  // [variable, bad value]; a computed value exists only once the suite runs, so it is named by a label.
  type Computed = { label: string; value: () => string };
  const computed = (label: string, value: () => string): Computed => ({ label, value });
  const CASES: [string, string | Computed][] = [
    ["SANDBOX_DATA_DIR", "relative/data"],
    ["SANDBOX_DATA_DIR", computed("<a path under a file>", () => join(scratch, "a-file", "data"))],
    ["SANDBOX_RUNTIME_DIR", "relative/runtime"],
    ["SANDBOX_RUNTIME_DIR", computed("<a path under a file>", () => join(scratch, "a-file", "runtime"))],
    ["SANDBOX_PORT", "http"],
    ["SANDBOX_PORT", "70000"],
    ["SANDBOX_PORT", computed("<a port in use>", () => String(busy.port))],
    ["SANDBOX_HOST", "not a host"],
    ["SANDBOX_HOST", "203.0.113.9"],
    ["SANDBOX_API_TOKEN", "short"],
    ["SANDBOX_API_TOKEN", "a token with spaces in it"],
    ["SANDBOX_CPUS", "two"],
    ["SANDBOX_CPUS", "0"],
    ["SANDBOX_MEMORY", "lots"],
    ["SANDBOX_MEMORY", "64"],
    ["SANDBOX_EXEC_TIMEOUT_MS", "soon"],
    ["SANDBOX_EXEC_TIMEOUT_MS", "5"],
    ["SANDBOX_EXEC_TIMEOUT_MS", "999999999999"],
    ["SANDBOX_LOG_LEVEL", "loud"],
    ["SANDBOX_RUNTIME", "kvm"],
    ["SANDBOX_ROOTFS_DIR", "relative/rootfs"],
    ["SANDBOX_SHARED_DIRS", "/ok:relative/dir"],
    ["SANDBOX_MSB_IMAGE", "not an image"],
    ["SANDBOX_CGROUP_PARENT", "../escape"],
    ["SANDBOX_CGROUP_PARENT", "/absolute"],
    ["SANDBOX_SECRETS", "{not json"],
    ["SANDBOX_SECRETS", '{"API_KEY": {"value": "literal", "hosts": ["api.example.com"]}}'],
    ["SANDBOX_GIT_CREDENTIALS", '[{"url": "ftp://example.com/", "env": "HOME"}]'],
    ["SANDBOX_GIT_NAME", "Eve\nMallory"],
    ["SANDBOX_GIT_EMAIL", "<eve@example.com>"],
    ["SANDBOX_EXTRA_CA_FILE", "relative/ca.pem"],
    ["SANDBOX_EXTRA_CA_FILE", "/nonexistent/ca.pem"],
    ["SANDBOX_EXTRA_CA_FILE", "/etc/hostname"],
  ];

  async function expectOneLineExit78(variable: string, value: string): Promise<string> {
    const dir = makeTempDir("ss-attack-env-data-");
    try {
      const { exitCode, stderr } = await runManagerToExit(dir, { [variable]: value });
      const lines = stderr.split("\n").filter((line) => line !== "");
      expect({ variable, value, exitCode, lines: lines.length }).toEqual({ variable, value, exitCode: 78, lines: 1 });
      expect(lines[0]).toStartWith("session-sandbox: cannot start: ");
      expect(stderr).not.toMatch(/^\s+at |^error|\.ts:\d/m);
      return lines[0]!;
    } finally {
      rmSync(dir, { recursive: true, force: true });
      rmSync(`${dir}-runtime`, { recursive: true, force: true });
    }
  }

  test(`SANDBOX_CPUS=64 (more than the host) → exit 78, one line naming the variable and the host's CPUs`, async () => {
    const line = await expectOneLineExit78("SANDBOX_CPUS", overHostCpus);
    expect(line).toContain(`SANDBOX_CPUS=${overHostCpus} is more than this host's ${availableParallelism()} CPUs`);
  });

  test("SANDBOX_MEMORY above the host → exit 78, one line", async () => {
    expect(await expectOneLineExit78("SANDBOX_MEMORY", overHostMemory)).toContain("more than this host's");
  });

  const named = CASES.map(([variable, value]) => [`${variable}=${typeof value === "string" ? JSON.stringify(value) : value.label}`, variable, value] as const);
  test.each(named)("%s → exit 78, one line naming the variable, no stack trace", async (_label, variable, value) => {
    const line = await expectOneLineExit78(variable, typeof value === "string" ? value : value.value());
    // The port-in-use line names SANDBOX_PORT as the fix; a data dir under a file names SANDBOX_DATA_DIR.
    expect(line).toContain(variable);
    if (variable === "SANDBOX_API_TOKEN") expect(line).not.toContain(value as string); // never echo a secret
  });
});
