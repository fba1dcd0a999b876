// Secrets as a per-session grant over the real local runtime: a secret of scope "granted" reaches only the
// root sessions a human granted it to, a placeholder learned in one session is worth nothing in another,
// and every substitution is counted per session and host (events, metrics) by name, never by value.
// The upstream is one loopback echo server on the host, reached as localhost.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createLogger } from "../../app/log";
import type { SecretConfig } from "../../app/secrets-config";
import { createCredentials } from "../../app/services/credentials";
import { eventually, makeActorFixture, recordEvents, type ActorFixture } from "./fixture";

const GRANTED_VALUE = "granted-VALUE-0123456789abcdef";
const SHARED_VALUE = "shared-VALUE-0123456789abcdef";
let f: ActorFixture;
let repo: string;
let server: ReturnType<typeof Bun.serve>;
const received: { session: string | null; authorization: string | null; token: string | null }[] = [];
let recorded: ReturnType<typeof recordEvents>;
const outputs: string[] = [];

/** Records what each request carried: the session it says it came from, the deploy key and the shared token. */
function startUpstream() {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (request) => {
      const url = new URL(request.url);
      received.push({ session: url.searchParams.get("s"), authorization: request.headers.get("authorization"), token: request.headers.get("x-shared") });
      return new Response("ok");
    },
  });
}

beforeAll(async () => {
  server = startUpstream();
  const hosts = [`localhost:${server.port}`];
  const secrets: SecretConfig[] = [
    { name: "DEPLOY_KEY", env: "TEST_DEPLOY_KEY", hosts, scope: "granted" },
    { name: "SHARED_TOKEN", env: "TEST_SHARED_TOKEN", hosts, scope: "all" },
  ];
  const env = { TEST_DEPLOY_KEY: GRANTED_VALUE, TEST_SHARED_TOKEN: SHARED_VALUE, HOME: "/nonexistent", PATH: process.env.PATH };
  f = await makeActorFixture({ credentials: createCredentials({ secrets, gitCredentials: [], env, log: createLogger("silent") }) });
  repo = f.makeRepo();
  const network = { mode: "allowlist" as const, allow: [`localhost:${server.port}`, "loopback"] };
  for (const id of ["ses_granted", "ses_other"]) {
    await f.client.sessions.register({ id, directory: repo });
    await f.client.sandbox.set(id, { network });
  }
  recorded = recordEvents(f);
}, 600_000);
afterAll(async () => {
  recorded?.stop();
  server?.stop(true);
  await f?.teardown();
}, 120_000);

const run = async (session: string, command: string) => {
  const result = await f.client.run(session, { command, cwd: repo });
  outputs.push(result.stdout, result.stderr);
  return result;
};
/** A plain-HTTP request through the VM's proxy with the deploy key (as given) and the shared token. */
const request = (session: string, deployKey = "$DEPLOY_KEY") =>
  `curl -s -S --max-time 10 --noproxy '' -x "$HTTP_PROXY" -H "Authorization: Bearer ${deployKey}" -H "X-Shared: $SHARED_TOKEN" "http://localhost:${server.port}/?s=${session}"`;

describe("secret grants in a VM", () => {
  test("a session without the grant → its guest has no such variable, and gets the scope-all secret only", async () => {
    const result = await run("ses_other", 'echo "deploy=[$DEPLOY_KEY] shared=[$SHARED_TOKEN]"');
    expect(result.stdout).toMatch(/^deploy=\[\] shared=\[sandbox-placeholder-shared-token-[0-9a-f]{24}\]\n$/);
  });

  test("a granted session → the placeholder in its guest, the value substituted on the way to the listed host", async () => {
    await f.client.secrets.grant("ses_granted", ["DEPLOY_KEY"]);
    received.length = 0;
    await run("ses_granted", request("ses_granted"));
    expect(received).toEqual([{ session: "ses_granted", authorization: `Bearer ${GRANTED_VALUE}`, token: SHARED_VALUE }]);
  });

  test("a session without the grant sends a placeholder it learned from a granted session → it goes out unchanged", async () => {
    const learned = (await run("ses_granted", 'printf %s "$DEPLOY_KEY"')).stdout;
    expect(learned).toMatch(/^sandbox-placeholder-deploy-key-[0-9a-f]{24}$/);
    received.length = 0;
    await run("ses_other", request("ses_other", learned));
    expect(received).toEqual([{ session: "ses_other", authorization: `Bearer ${learned}`, token: SHARED_VALUE }]);
  });

  test("a revoked grant → the next command has no variable and no substitution", async () => {
    const learned = (await run("ses_granted", 'printf %s "$DEPLOY_KEY"')).stdout;
    const view = await f.client.secrets.revoke("ses_granted", ["DEPLOY_KEY"]);
    expect(view.secrets).toEqual({ granted: [], effective: ["SHARED_TOKEN"] });
    received.length = 0;
    const result = await run("ses_granted", `echo "deploy=[$DEPLOY_KEY]"; ${request("ses_granted", learned)}`);
    expect(result.stdout).toStartWith("deploy=[]\n");
    expect(received).toEqual([{ session: "ses_granted", authorization: `Bearer ${learned}`, token: SHARED_VALUE }]);
  });

  test("every substitution → counted per session and host in the events and per name and host in the metrics", async () => {
    const events = recorded.events;
    const counted = (session: string, name: string) => events.filter((e) => e.type === "secret" && e.rootSessionID === session && e.name === name).length;
    await eventually(() => counted("ses_granted", "SHARED_TOKEN") === 2 && counted("ses_other", "SHARED_TOKEN") === 1);
    expect(counted("ses_granted", "DEPLOY_KEY")).toBe(1);
    expect(counted("ses_other", "DEPLOY_KEY")).toBe(0);
    const vmName = (await f.client.sandbox.get("ses_granted")).vmName;
    expect(events.find((e) => e.type === "secret" && e.name === "DEPLOY_KEY")).toMatchObject({ phase: "substituted", host: "localhost", rootSessionID: "ses_granted", vmName });
    const metrics = await (await f.request("GET", "/metrics")).text();
    expect(metrics).toContain(`sandbox_secret_substitutions_total{name="DEPLOY_KEY",host="localhost:${server.port}"} 1`);
    expect(metrics).toContain(`sandbox_secret_substitutions_total{name="SHARED_TOKEN",host="localhost:${server.port}"} 3`);
  });

  test("the values appear nowhere: logs, events, metrics, API answers, command output", async () => {
    const api = await Promise.all(
      ["/api/session-sandbox/ses_granted", "/api/session-sandbox/ses_other", "/api/secrets", "/api/vms", "/metrics"].map((path) => f.request("GET", path).then((r) => r.text())),
    );
    const everything = [...f.logLines, ...recorded.events.map((e) => JSON.stringify(e)), ...api, ...outputs].join("\n");
    for (const value of [GRANTED_VALUE, SHARED_VALUE]) {
      expect(everything).not.toContain(value);
      expect(everything).not.toContain(Buffer.from(value).toString("base64"));
    }
    expect(everything).toContain("DEPLOY_KEY");
  });
});
