// The shell shim on its own (no OpenCode, no manager): every path without a valid sandbox target exits 126
// with a reason and runs nothing; only the documented opt-outs reach the host shell. Each case runs on both
// of the shim's paths: the compiled helper (the default) and SANDBOX_SHIM=bun (shim-main.ts).
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { makeTempDir } from "../helpers";

const SHIM = join(import.meta.dir, "../../plugin/shim");
const dir = makeTempDir("ss-shim-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));
// A loopback port nothing listens on: a stopped manager.
const closedPort = (() => {
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = server.port;
  server.stop(true);
  return port;
})();
let markers = 0;

const PATHS: Array<{ name: string; env: Record<string, string> }> = [
  { name: "helper", env: {} },
  { name: "SANDBOX_SHIM=bun", env: { SANDBOX_SHIM: "bun" } },
];

function runShimOn(path: Record<string, string>, env: Record<string, string>) {
  const marker = join(dir, `marker-${++markers}`);
  const result = Bun.spawnSync([SHIM, "-c", `touch ${marker}`], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, SANDBOX_URL: `http://127.0.0.1:${closedPort}`, SANDBOX_API_TOKEN: "t", SANDBOX_MANAGER_TIMEOUT_MS: "2000", ...path, ...env },
  });
  return { code: result.exitCode, stderr: result.stderr.toString(), ran: existsSync(marker) };
}

for (const path of PATHS) describe(`shell shim (${path.name})`, () => {
  const runShim = (env: Record<string, string>) => runShimOn(path.env, env);

  test("sandboxed session, manager stopped → 126, reason on stderr, nothing runs", () => {
    const result = runShim({ SANDBOX_SESSION_ID: "ses_1" });
    expect(result).toMatchObject({ code: 126, ran: false });
    expect(result.stderr).toContain("treated as sandboxed");
  });

  test("the arbiter blocked the call → 126 with the arbiter's reason", () => {
    const result = runShim({ SANDBOX_SESSION_ID: "ses_1", SANDBOX_DECISION: "blocked", SANDBOX_BLOCKED_REASON: "provider x failed" });
    expect(result).toMatchObject({ code: 126, ran: false });
    expect(result.stderr).toContain("provider x failed");
  });

  test("no token configured → 126", () => {
    const result = runShim({ SANDBOX_SESSION_ID: "ses_1", SANDBOX_API_TOKEN: "", SANDBOX_API_TOKEN_FILE: join(dir, "missing") });
    expect(result).toMatchObject({ code: 126, ran: false });
    expect(result.stderr).toContain("not configured");
  });

  test("no session identity (PTY, templates) and the manager unreachable → 126", () => {
    expect(runShim({})).toMatchObject({ code: 126, ran: false });
  });

  test("no session identity with SANDBOX_UNTAGGED_SHELL=host (documented opt-out) → the host shell runs it", () => {
    expect(runShim({ SANDBOX_UNTAGGED_SHELL: "host" })).toMatchObject({ code: 0, ran: true });
  });

  test("manager unreachable with SANDBOX_ALLOW_HOST_WHEN_UNREACHABLE=1 (documented opt-out) → the host shell runs it", () => {
    expect(runShim({ SANDBOX_SESSION_ID: "ses_1", SANDBOX_ALLOW_HOST_WHEN_UNREACHABLE: "1" })).toMatchObject({ code: 0, ran: true });
  });

  test("a repository .env cannot redirect the shim (it starts Bun outside the cwd, without .env files)", async () => {
    await Bun.write(join(dir, ".env"), "SANDBOX_ALLOW_HOST_WHEN_UNREACHABLE=1\nSANDBOX_UNTAGGED_SHELL=host\n");
    expect(runShim({ SANDBOX_SESSION_ID: "ses_1" })).toMatchObject({ code: 126, ran: false });
    rmSync(join(dir, ".env"));
  });
});
