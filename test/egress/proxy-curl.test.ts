// curl through the VM's path (TCP 127.0.0.1 forwarder, as socat does, → the proxy's Unix socket).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { exchange, startHarness, startTcpForwarder, type Harness } from "./proxy-harness";

const VALUE = "s3cr3t-value-for-curl";
const PLACEHOLDER = "SANDBOX_SECRET_CURL";
const curl = Bun.which("curl");

const receivedAuth: Array<string | null> = [];
const serveTarget = (hostname: string) =>
  Bun.serve({
    hostname,
    port: 0,
    fetch: (request) => (receivedAuth.push(request.headers.get("authorization")), new Response(`${new URL(request.url).pathname} auth=${request.headers.get("authorization")} ${"z".repeat(200_000)}`)),
  });
const target = serveTarget("127.0.0.1");
// A host that receives no secret lives at another address: a tunnel to the secret host's address is opened
// up or refused, whatever name it is asked by (egress/secret-destinations.ts).
const tunnelTarget = serveTarget("127.0.0.2");
let harness: Harness;
let forwarder: Awaited<ReturnType<typeof startTcpForwarder>>;
let forwarderPort = 0;

beforeAll(async () => {
  harness = await startHarness({
    policy: { mode: "allowlist", allow: ["api.test", "tunnel.test", "other-name.test", "loopback"] },
    names: { "api.test": ["127.0.0.1"], "other.test": ["127.0.0.1"], "other-name.test": ["127.0.0.1"], "tunnel.test": ["127.0.0.2"] },
    secrets: [{ name: "CURL_TOKEN", placeholder: PLACEHOLDER, value: VALUE, hosts: ["api.test"] }],
  });
  forwarder = await startTcpForwarder(harness.socketPath);
  forwarderPort = forwarder.port;
});

afterAll(async () => {
  await forwarder.close();
  await harness.close();
  target.stop(true);
  tunnelTarget.stop(true);
});

async function runCurl(args: string[]): Promise<{ exitCode: number | null; stdout: string; stderr: string }> {
  const proc = Bun.spawn([curl as string, "-sS", "--max-time", "20", "-x", `http://127.0.0.1:${forwarderPort}`, ...args], { stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  await proc.exited;
  return { exitCode: proc.exitCode, stdout, stderr };
}

describe.skipIf(curl === null)("egress proxy with curl (through a TCP→Unix forwarder)", () => {
  test("plain HTTP with a placeholder → 200, the value went upstream, the echo shows the placeholder", async () => {
    const result = await runCurl([`http://api.test:${target.port}/plain`, "-H", `Authorization: Bearer ${PLACEHOLDER}`]);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toStartWith(`/plain auth=Bearer ${PLACEHOLDER} `);
    expect(result.stdout.length).toBeGreaterThan(200_000);
    expect(result.stdout).not.toContain(VALUE);
    expect(receivedAuth.at(-1)).toBe(`Bearer ${VALUE}`);
  });

  test("CONNECT (curl -p) to a listed name that receives no secret → 200 through the opaque tunnel", async () => {
    const result = await runCurl(["-p", `http://tunnel.test:${tunnelTarget.port}/tunnel`]);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toStartWith("/tunnel auth=null ");
  });

  test("CONNECT by an IP literal or another name to where the secret host lives, with no interception → refused (403), never tunnelled", async () => {
    for (const url of [`http://127.0.0.1:${target.port}/tunnel`, `http://other-name.test:${target.port}/tunnel`]) {
      const result = await runCurl(["-p", url]);
      expect(result.exitCode).toBe(56);
      expect(result.stderr).toContain("403");
    }
    const refused = await exchange(harness.socketPath, `CONNECT 127.0.0.1:${target.port} HTTP/1.1\r\n\r\n`);
    expect(refused.toString("latin1")).toContain("reaches the address of api.test, which receives secrets");
  });

  test("CONNECT to a host that receives a secret, with no interception configured → refused (403), never tunnelled", async () => {
    const result = await runCurl(["-p", `http://api.test:${target.port}/tunnel`]);
    expect(result.exitCode).toBe(56);
    expect(result.stderr).toContain("403");
  });

  test("an unlisted name → curl sees the 403 (plain) and a failed tunnel (CONNECT)", async () => {
    const plain = await runCurl(["-i", `http://other.test:${target.port}/`]);
    expect(plain.stdout).toContain("HTTP/1.1 403 Forbidden");
    expect(plain.stdout).toContain(`X-Sandbox-Rule: no rule matches other.test:${target.port}`);
    const tunnel = await runCurl(["-p", `http://other.test:${target.port}/`]);
    expect(tunnel.exitCode).toBe(56);
    expect(tunnel.stderr).toContain("403");
  });

  test("two URLs in one curl run → both answered (connection reuse is refused cleanly)", async () => {
    const result = await runCurl([`http://api.test:${target.port}/one`, `http://api.test:${target.port}/two`]);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain("/one auth=null");
    expect(result.stdout).toContain("/two auth=null");
  });

  test("the proxy socket also answers directly (sanity)", async () => {
    expect((await exchange(harness.socketPath, "HELLO\r\n\r\n")).toString()).toStartWith("HTTP/1.1 400");
  });
});
