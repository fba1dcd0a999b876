// `session-sandbox serve` runs the manager in the foreground; `install-service --print` gives a systemd unit
// that systemd-analyze verifies; installing it needs root.
import { afterAll, describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createClient } from "../../sdk/index";
import { makeTempDir } from "../helpers";
import { startManager } from "../manager-process";

const CLI = join(import.meta.dir, "../../cli/session-sandbox.ts");
const dirs: string[] = [];
const tempDir = (prefix: string) => {
  const dir = makeTempDir(prefix);
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe("session-sandbox serve", () => {
  test("→ the manager listens and answers; SIGTERM → it exits 0", async () => {
    const dataDir = tempDir("ss-serve-");
    const manager = await startManager(dataDir, { SANDBOX_RUNTIME: "msb", SANDBOX_MSB_PATH: "/nonexistent/msb" }, [CLI, "serve"]);
    try {
      const health = await createClient({ url: manager.url, token: manager.token }).health();
      expect(health.status).toBe("ok");
    } finally {
      manager.proc.kill("SIGTERM");
      expect(await manager.proc.exited).toBe(0);
      rmSync(manager.runtimeDir, { recursive: true, force: true });
    }
  }, 60_000);

  test("with an argument → exit 2 and the fix, nothing started", () => {
    const result = Bun.spawnSync([CLI, "serve", "--port", "1"], { stderr: "pipe" });
    expect(result.exitCode).toBe(2);
    expect(result.stderr.toString()).toContain("serve: takes no arguments");
  });
});

describe("session-sandbox install-service", () => {
  test("--print → a unit that systemd-analyze verify accepts, running `serve` with absolute paths", () => {
    const printed = Bun.spawnSync([CLI, "install-service", "--print"], { stdout: "pipe" });
    expect(printed.exitCode).toBe(0);
    const unit = printed.stdout.toString();
    expect(unit).toContain(`ExecStart=${process.execPath} --no-env-file --config=/dev/null ${CLI} serve`);
    const file = join(tempDir("ss-unit-"), "session-sandbox.service");
    writeFileSync(file, unit);
    const verified = Bun.spawnSync(["systemd-analyze", "verify", file], { stdout: "pipe", stderr: "pipe" });
    expect({ exitCode: verified.exitCode, stderr: verified.stderr.toString() }).toEqual({ exitCode: 0, stderr: "" });
  });

  test("as a user who is not root → exit 1, the fix says sudo; nothing written", () => {
    const home = tempDir("ss-nobody-home-");
    Bun.spawnSync(["chown", "65534:65534", home]);
    const result = Bun.spawnSync(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", CLI, "install-service"], { env: { PATH: process.env.PATH ?? "", HOME: home }, stdout: "pipe", stderr: "pipe" });
    expect(result.exitCode).toBe(1);
    expect(result.stderr.toString()).toContain("run it with sudo");
  });
});
