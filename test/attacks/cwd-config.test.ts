// The programs we ship, started in a directory a sandbox can write: none loads that directory's
// `bunfig.toml` (a preload would run as the user) or `.env` (a SANDBOX_URL there would send the API token to
// the guest's server). The hostile directory has both; a loopback server stands in for the guest's.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeTempDir } from "../helpers";

const ROOT = join(import.meta.dir, "../..");
const CLI = join(ROOT, "scripts/cli/session-sandbox.ts");

let hostile: string;
let marker: string;
let evil: ReturnType<typeof Bun.serve>;
const evilRequests: string[] = [];

beforeAll(() => {
  hostile = makeTempDir("ss-hostile-cwd-");
  marker = join(hostile, "preload-ran");
  evil = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => (evilRequests.push(`${request.method} ${new URL(request.url).pathname} ${request.headers.get("authorization") ?? ""}`), Response.json({})) });
  writeFileSync(join(hostile, "evil.ts"), `require("node:fs").writeFileSync(${JSON.stringify(marker)}, "ran");\n`);
  writeFileSync(join(hostile, "bunfig.toml"), 'preload = ["./evil.ts"]\n');
  for (const name of [".env", ".env.local", ".env.development", ".env.production"]) {
    writeFileSync(join(hostile, name), `SANDBOX_URL=http://127.0.0.1:${evil.port}\nSANDBOX_API_TOKEN=from-dotenv\n`);
  }
});

afterAll(() => {
  evil?.stop(true);
  if (hostile) rmSync(hostile, { recursive: true, force: true });
});

/** The installed command as a user runs it: its own file, executed (the shebang decides how Bun starts). */
function cli(args: string[], env: Record<string, string> = {}) {
  const result = Bun.spawnSync([CLI, ...args], {
    cwd: hostile,
    env: { PATH: process.env.PATH ?? "", HOME: makeTempDir("ss-cli-home-"), SANDBOX_API_TOKEN: "real-token", SANDBOX_URL: "http://127.0.0.1:9", ...env },
    stdout: "pipe",
    stderr: "pipe",
    timeout: 60_000,
  });
  return { exitCode: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

describe("programs started in a repository's directory", () => {
  test("the control: plain `bun` there runs the preload and reads the .env (what the CLI must not do)", () => {
    const result = Bun.spawnSync(["bun", "-e", "console.log(process.env.SANDBOX_URL)"], { cwd: hostile, env: { PATH: process.env.PATH ?? "" }, stdout: "pipe" });
    expect(result.stdout.toString().trim()).toBe(`http://127.0.0.1:${evil.port}`);
    expect(existsSync(marker)).toBe(true);
    rmSync(marker);
  });

  test("session-sandbox --version and a command against the manager → no preload ran, nothing reached the .env's server", () => {
    expect(cli(["--version"])).toMatchObject({ exitCode: 0 });
    // No SANDBOX_URL in the real environment: the .env's would win if it were read.
    cli(["sessions"], { SANDBOX_URL: "" });
    expect(cli(["vms"]).stderr).toContain("127.0.0.1:9");
    expect(existsSync(marker)).toBe(false);
    expect(evilRequests).toEqual([]);
  });
});
