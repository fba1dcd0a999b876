// Secrets and git credentials over HTTPS without the guest ever holding them, on
// the real embedded runtime: HTTPS upstreams on the host's loopback with certificates from a test CA the
// manager trusts through its extra roots (SANDBOX_EXTRA_CA_FILE), reached through the session's
// allowlist. curl, python3 urllib, node (its TLS over a CONNECT it opens itself: Node 18's fetch does not
// read HTTPS_PROXY) and git (clone and push over smart HTTP) send placeholders; the upstream gets the
// values; no output, log line, event, metric or API answer holds a value in any common encoding.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { createLogger } from "../../app/log";
import { createCredentials } from "../../app/services/credentials";
import { loadUpstreamRoots } from "../../app/tls/upstream-roots";
import type { SandboxEvent } from "../../sdk/index";
import { makeBareRepo, startGitHttpServer, type GitHttpServer } from "../fixtures/git-http-server";
import { makeTestPki, type TestPki } from "../fixtures/test-pki";
import { makeTempDir } from "../helpers";
import { makeActorFixture, type ActorFixture } from "./fixture";

const API_TOKEN = "tok_R3al/Value+for\"the-api\\0123456789";
const GIT_PASSWORD = "git-pass-over-tls-0123456789";
let pki: TestPki;
let api: ReturnType<typeof Bun.serve>;
let selfSigned: ReturnType<typeof Bun.serve>;
let git: GitHttpServer;
let gitRoot: string;
let f: ActorFixture;
let repo: string;
const seen: { path: string; auth: string | null }[] = [];
const events: SandboxEvent[] = [];
const stopEvents = new AbortController();

beforeAll(async () => {
  pki = makeTestPki();
  const cert = pki.issue("host.sandbox.internal");
  api = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: cert.certPem, key: cert.keyPem },
    fetch(request) {
      const url = new URL(request.url);
      const auth = request.headers.get("authorization");
      seen.push({ path: url.pathname + url.search, auth });
      const echoed = auth ?? "";
      return Response.json({ path: url.pathname + url.search, auth: echoed, base64: Buffer.from(echoed).toString("base64"), url: encodeURIComponent(echoed) });
    },
  });
  const untrusted = pki.selfSigned("host.sandbox.internal");
  selfSigned = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: untrusted.certPem, key: untrusted.keyPem }, fetch: () => new Response("must not be reached\n") });
  gitRoot = makeTempDir("ss-tls-git-");
  makeBareRepo(gitRoot, "project");
  git = await startGitHttpServer({ root: gitRoot, username: "agent", password: GIT_PASSWORD, tls: cert });
  const secrets = [{ name: "API_TOKEN", env: "TEST_API_TOKEN", hosts: [`host.sandbox.internal:${api.port}`, `host.sandbox.internal:${selfSigned.port}`] }];
  const credentials = createCredentials({
    secrets,
    gitCredentials: [{ url: `https://host.sandbox.internal:${git.port}/`, env: "TEST_GIT_PASSWORD", username: "agent", repository: null }],
    env: { TEST_API_TOKEN: API_TOKEN, TEST_GIT_PASSWORD: GIT_PASSWORD, SANDBOX_GIT_NAME: "Sandbox Agent", SANDBOX_GIT_EMAIL: "agent@example.test", HOME: "/nonexistent", PATH: process.env.PATH },
    log: createLogger("silent"),
  });
  f = await makeActorFixture({ credentials, upstreamRoots: loadUpstreamRoots(pki.caFile).roots });
  repo = f.makeRepo("tls");
  await f.client.settings.patch({ forwardGitCredentials: true });
  await f.client.sessions.register({ id: "ses_tls", directory: repo });
  await f.client.sandbox.set("ses_tls", { network: { mode: "allowlist", allow: [`host.sandbox.internal:${api.port}`, `host.sandbox.internal:${git.port}`, `host.sandbox.internal:${selfSigned.port}`] } });
  void (async () => {
    for await (const event of f.events.subscribe(stopEvents.signal)) events.push(event as SandboxEvent);
  })();
}, 600_000);

afterAll(async () => {
  stopEvents.abort();
  api?.stop(true);
  selfSigned?.stop(true);
  await git?.stop();
  await f?.teardown();
  rmSync(gitRoot, { recursive: true, force: true });
  pki?.cleanup();
}, 120_000);

const outputs: string[] = [];
async function run(command: string) {
  const result = await f.client.run("ses_tls", { command: `export GIT_TERMINAL_PROMPT=0; ${command}`, cwd: repo, timeoutMs: 60_000 });
  outputs.push(result.stdout, result.stderr);
  return result;
}

/** Every form of a value the acceptance names: plain, base64 (any alignment), URL-encoded, JSON-escaped. */
function leaks(text: string): string[] {
  const found: string[] = [];
  for (const value of [API_TOKEN, GIT_PASSWORD, Buffer.from(`agent:${GIT_PASSWORD}`).toString("base64")]) {
    for (const form of [value, encodeURIComponent(value), JSON.stringify(value).slice(1, -1)]) if (text.includes(form)) found.push(form);
    for (const token of text.split(/[^A-Za-z0-9+/=_-]+/)) {
      if (token.length >= 12 && Buffer.from(token.replace(/-/g, "+").replace(/_/g, "/"), "base64").toString("latin1").includes(value)) found.push(`base64 of ${token}`);
    }
  }
  return found;
}

describe("secrets over HTTPS, intercepted", () => {
  test("curl → the upstream receives the value in the header and query; the guest sees only the placeholder", async () => {
    const result = await run(`curl -sS -H "Authorization: Bearer $API_TOKEN" "https://host.sandbox.internal:${api.port}/curl?t=$API_TOKEN"`);
    expect(result.stderr).toBe("");
    expect(result.exitCode).toBe(0);
    expect(seen.at(-1)).toEqual({ path: `/curl?t=${encodeURIComponent(API_TOKEN)}`, auth: `Bearer ${API_TOKEN}` });
    expect(JSON.parse(result.stdout).auth).toMatch(/^Bearer sandbox-placeholder-api-token-/);
  }, 60_000);

  test("python3 urllib (SSL_CERT_FILE) → the same", async () => {
    const script = `import os, urllib.request as u; r = u.Request("https://host.sandbox.internal:${api.port}/py", headers={"Authorization": "Bearer " + os.environ["API_TOKEN"]}); print(u.urlopen(r).read().decode())`;
    const result = await run(`python3 -c '${script}'`);
    expect(result.exitCode).toBe(0);
    expect(seen.at(-1)).toEqual({ path: "/py", auth: `Bearer ${API_TOKEN}` });
  }, 60_000);

  test("node (NODE_EXTRA_CA_CERTS; TLS over its own CONNECT to the guest proxy) → the same", async () => {
    const script = [
      'const http = require("http"), tls = require("tls");',
      `http.request({ host: "127.0.0.1", port: 3128, method: "CONNECT", path: "host.sandbox.internal:${api.port}" }).on("connect", (res, socket) => {`,
      '  const s = tls.connect({ socket, servername: "host.sandbox.internal" }, () => s.write("GET /node HTTP/1.1\\r\\nHost: host.sandbox.internal\\r\\nAuthorization: Bearer " + process.env.API_TOKEN + "\\r\\nConnection: close\\r\\n\\r\\n"));',
      '  let out = ""; s.on("data", (d) => (out += d)); s.on("end", () => console.log(out.split("\\r\\n\\r\\n")[1]));',
      '  s.on("error", (e) => { console.error(e.message); process.exit(1); });',
      "}).end();",
    ].join("\n");
    const result = await run(`node -e '${script}'`);
    expect(result.stderr).toBe("");
    expect(result.exitCode).toBe(0);
    expect(seen.at(-1)).toEqual({ path: "/node", auth: `Bearer ${API_TOKEN}` });
  }, 60_000);

  test("git over https → clone and push succeed with the forwarded credential; the guest's config holds a placeholder", async () => {
    const remote = `https://host.sandbox.internal:${git.port}/project.git`;
    const clone = await run(`git clone -q ${remote} clone && cd clone && git log --oneline | wc -l`);
    expect(clone.stderr).toBe("");
    expect(clone.exitCode).toBe(0);
    const push = await run(`cd clone && echo tls > tls.txt && git add tls.txt && git commit -qm tls && git push -q origin HEAD 2>&1 && git config --get-regexp extraheader; env | grep -c GIT_CONFIG_VALUE`);
    expect(push.exitCode).toBe(0);
    const header = await run("printenv GIT_CONFIG_VALUE_0");
    expect(header.stdout).toMatch(/^Authorization: Basic sandbox-placeholder-git-/);
    expect(git.requests.some((r) => r.path.includes("git-receive-pack") && r.authorization === `Basic ${Buffer.from(`agent:${GIT_PASSWORD}`).toString("base64")}`)).toBe(true);
  }, 120_000);

  test("an upstream whose certificate no trusted CA signed → 502 naming the reason; nothing substituted, nothing sent", async () => {
    const result = await run(`curl -sS -i -H "Authorization: Bearer $API_TOKEN" https://host.sandbox.internal:${selfSigned.port}/`);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain("HTTP/1.1 502 Bad Gateway");
    expect(result.stdout).toContain("self-signed");
  }, 60_000);

  test("no value in any form: not in any output, log line, event, metric or API answer", async () => {
    const metrics = await (await f.request("GET", "/metrics")).text();
    const answers = JSON.stringify([await f.client.sandbox.get("ses_tls"), await f.client.settings.get(), await f.client.vms.list(), await f.client.sessions.list()]);
    for (const [where, text] of [["outputs", outputs.join("\n")], ["logs", f.logLines.join("\n")], ["events", JSON.stringify(events)], ["metrics", metrics], ["API answers", answers]] as const) {
      expect({ where, leaks: leaks(text) }).toEqual({ where, leaks: [] });
    }
    expect(f.logLines.some((line) => line.includes('"kind":"intercept"'))).toBe(true);
  }, 60_000);
});
