// Secrets stay on the host: the guest sees a placeholder, the egress proxy puts the real value only into
// plain-HTTP requests to the secret's hosts, and the value never shows in logs, events, API answers or
// command output. Targets are one loopback echo server on the host, reached by two names.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createLogger } from "../../app/log";
import { createCredentials } from "../../app/services/credentials";
import type { SandboxEvent } from "../../sdk/index";
import { eventually, makeActorFixture, type ActorFixture } from "./fixture";

const VALUE = "s3cr3t-VALUE-0123456789";
let f: ActorFixture;
let repo: string;
let server: ReturnType<typeof Bun.serve>;
const received: { url: string; authorization: string | null }[] = [];
const events: SandboxEvent[] = [];
const stop = new AbortController();
const outputs: string[] = [];

beforeAll(async () => {
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (request) => {
      received.push({ url: request.url, authorization: request.headers.get("authorization") });
      // An echo: a careless server that reflects what it got.
      return new Response(`auth=${request.headers.get("authorization")} url=${request.url}`);
    },
  });
  const credentials = createCredentials({
    secrets: [{ name: "API_TOKEN", env: "TEST_API_TOKEN_VALUE", hosts: ["host.sandbox.internal"] }],
    gitCredentials: [],
    env: { TEST_API_TOKEN_VALUE: VALUE, HOME: "/nonexistent", PATH: process.env.PATH },
    log: createLogger("silent"),
  });
  f = await makeActorFixture({ credentials });
  repo = f.makeRepo();
  await f.client.sessions.register({ id: "ses_secret", directory: repo });
  await f.client.sandbox.set("ses_secret", { network: { mode: "allowlist", allow: ["host.sandbox.internal", "loopback"] } });
  void (async () => {
    for await (const event of f.client.events(stop.signal)) events.push(event);
  })();
}, 600_000);
afterAll(async () => {
  stop.abort();
  server?.stop(true);
  await f?.teardown();
}, 120_000);

const run = async (command: string) => {
  const result = await f.client.run("ses_secret", { command, cwd: repo });
  outputs.push(result.stdout, result.stderr);
  return result;
};
const curl = (url: string) => `curl -s --max-time 10 --noproxy '' -x "$HTTP_PROXY" -H "Authorization: Bearer $API_TOKEN" "${url}?t=$API_TOKEN"`;

describe("secrets", () => {
  test("the guest sees only a placeholder", async () => {
    const result = await run('echo "$API_TOKEN"; env | grep -c s3cr3t || true');
    expect(result.stdout).toMatch(/^sandbox-placeholder-api-token-[0-9a-f]{24}\n0\n$/);
  });

  test("a request to the listed host → the real value in header and query; the echo comes back redacted", async () => {
    received.length = 0;
    const result = await run(curl(`http://host.sandbox.internal:${server.port}/`));
    expect(received).toHaveLength(1);
    expect(received[0]!.authorization).toBe(`Bearer ${VALUE}`);
    expect(received[0]!.url).toContain(`t=${VALUE}`);
    expect(result.stdout).not.toContain(VALUE);
    expect(result.stdout).toContain("auth=Bearer sandbox-placeholder-api-token-");
  });

  test("a request to any other host → the placeholder, unchanged", async () => {
    received.length = 0;
    await run(curl(`http://127.0.0.1:${server.port}/`));
    expect(received).toHaveLength(1);
    expect(received[0]!.authorization).toMatch(/^Bearer sandbox-placeholder-api-token-[0-9a-f]{24}$/);
    expect(received[0]!.url).not.toContain(VALUE);
  });

  test("the value appears nowhere: logs, events, API answers, command output", async () => {
    await eventually(() => events.some((e) => e.type === "exec" && e.phase === "finished"));
    const api = await Promise.all([
      f.request("GET", "/api/session-sandbox/ses_secret").then((r) => r.text()),
      f.request("GET", "/api/vms").then((r) => r.text()),
      f.request("GET", "/api/settings/sandbox").then((r) => r.text()),
      f.request("GET", "/metrics").then((r) => r.text()),
      f.request("GET", "/api/doctor").then((r) => r.text()),
    ]);
    const everything = [...f.logLines, ...events.map((e) => JSON.stringify(e)), ...api, ...outputs].join("\n");
    expect(everything.length).toBeGreaterThan(1000);
    expect(everything).not.toContain(VALUE);
    expect(everything).not.toContain(Buffer.from(VALUE).toString("base64"));
  });
});
