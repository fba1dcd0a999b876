// The operator's configuration path, end to end: the real manager process configured only through its
// environment — SANDBOX_SECRETS naming a variable, SANDBOX_EXTRA_CA_FILE naming a private CA — and a
// real VM whose curl reaches an HTTPS upstream on the host's loopback with the placeholder; the upstream
// gets the value, the guest never sees it (the in-process suite is tls-secrets.test.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestManager, type TestManager } from "../e2e/fixture";
import { makeTestPki, type TestPki } from "../fixtures/test-pki";
import { makeTempDir } from "../helpers";
import { prepareLocalRuntime } from "../runtime/local-target";
import { rmSync } from "node:fs";

const VALUE = "env-configured-token-0123456789";
let pki: TestPki;
let upstream: ReturnType<typeof Bun.serve>;
let manager: TestManager;
let repo: string;
const seen: (string | null)[] = [];

beforeAll(async () => {
  const image = await prepareLocalRuntime();
  pki = makeTestPki();
  const cert = pki.issue("host.sandbox.internal");
  upstream = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: cert.certPem, key: cert.keyPem },
    fetch: (request) => (seen.push(request.headers.get("authorization")), new Response(`you sent: ${request.headers.get("authorization")}\n`)),
  });
  manager = await startTestManager(image, {
    SANDBOX_EXTRA_CA_FILE: pki.caFile,
    SANDBOX_SECRETS: JSON.stringify({ API_TOKEN: { env: "MY_API_TOKEN", hosts: [`host.sandbox.internal:${upstream.port}`] } }),
    MY_API_TOKEN: VALUE,
  });
  repo = makeTempDir("ss-tls-env-repo-");
  Bun.spawnSync(["git", "init", "-q", repo]);
  await manager.client.sessions.register({ id: "ses_env_tls", directory: repo });
  await manager.client.sandbox.set("ses_env_tls", { network: { mode: "allowlist", allow: [`host.sandbox.internal:${upstream.port}`] } });
}, 600_000);

afterAll(async () => {
  upstream?.stop(true);
  await manager?.cleanUp();
  pki?.cleanup();
  rmSync(repo, { recursive: true, force: true });
}, 120_000);

describe("configured through the environment", () => {
  test("SANDBOX_SECRETS + SANDBOX_EXTRA_CA_FILE → the VM's curl sends the placeholder over HTTPS, the upstream gets the value, the answer shows the placeholder", async () => {
    const result = await manager.client.run("ses_env_tls", { command: `curl -sS -H "Authorization: Bearer $API_TOKEN" https://host.sandbox.internal:${upstream.port}/`, cwd: repo, timeoutMs: 60_000 });
    expect(result.stderr).toBe("");
    expect(result.exitCode).toBe(0);
    expect(seen.at(-1)).toBe(`Bearer ${VALUE}`);
    expect(result.stdout).toMatch(/^you sent: Bearer sandbox-placeholder-api-token-[0-9a-f]+\n$/);
    expect(manager.process.stderrLines.join("\n")).not.toContain(VALUE);
    expect(manager.process.stderrLines.some((line) => line.includes('"upstream TLS roots"') && line.includes(pki.caFile))).toBe(true);
  }, 120_000);
});
