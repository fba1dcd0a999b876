// The programs we ship, started in a directory a sandbox can write: none loads that directory's
// `bunfig.toml` (a preload would run as the user) or `.env` (a SANDBOX_URL there would send the API token to
// the guest's server). The hostile directory has both; a loopback server stands in for the guest's.
// Every child is spawned without blocking, so the stand-in could answer (and be seen) if it were asked.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SHIM } from "../e2e/fixture";
import { makeTempDir } from "../helpers";

const ROOT = join(import.meta.dir, "../..");
const CLI = join(ROOT, "cli/session-sandbox.ts");
/** The package scripts an operator runs (`bun run <name>`), each without arguments. */
const PACKAGE_SCRIPTS = ["token", "vms", "sessions", "settings", "images", "secrets", "ca", "doctor", "stats"];

let hostile: string;
let marker: string;
let evil: ReturnType<typeof Bun.serve>;
const evilRequests: string[] = [];

beforeAll(() => {
  hostile = makeTempDir("ss-hostile-cwd-");
  marker = join(hostile, "preload-ran");
  evil = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => (evilRequests.push(`${request.method} ${new URL(request.url).pathname} ${request.headers.get("authorization") ?? ""}`), Response.json({})) });
  writeFileSync(join(hostile, "evil.ts"), `require("node:fs").writeFileSync(${JSON.stringify(marker)}, "ran");\n`);
  writeFileSync(join(hostile, "bunfig.toml"), 'preload = ["./evil.ts"]\n[run]\nbun = true\n');
  writeFileSync(join(hostile, "package.json"), JSON.stringify({ name: "hostile", scripts: { vms: `node -e 'require("fs").writeFileSync(${JSON.stringify(marker)}, "ran")'` } }));
  for (const name of [".env", ".env.local", ".env.development", ".env.production"]) {
    writeFileSync(join(hostile, name), `SANDBOX_URL=http://127.0.0.1:${evil.port}\nSANDBOX_API_TOKEN=from-dotenv\n`);
  }
});

beforeEach(() => {
  rmSync(marker, { force: true });
  evilRequests.length = 0;
});

/** Each program's own HOME and data dir, removed after the file. */
const scratchDirs: string[] = [];
const scratch = (prefix: string) => {
  const dir = makeTempDir(prefix);
  scratchDirs.push(dir);
  return dir;
};

afterAll(() => {
  evil?.stop(true);
  if (hostile) rmSync(hostile, { recursive: true, force: true });
  for (const dir of scratchDirs) rmSync(dir, { recursive: true, force: true });
});

/** Runs a shipped program in the hostile directory. SANDBOX_URL is set but empty: a .env value would fill it. */
async function runThere(argv: string[], env: Record<string, string> = {}) {
  const child = Bun.spawn(argv, {
    cwd: hostile,
    env: { PATH: process.env.PATH ?? "", HOME: scratch("ss-cli-home-"), SANDBOX_DATA_DIR: scratch("ss-cli-data-"), SANDBOX_API_TOKEN: "real-token", SANDBOX_URL: "", SANDBOX_MANAGER_TIMEOUT_MS: "2000", ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const killer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  const [stdout, stderr, exitCode] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  clearTimeout(killer);
  // Let the stand-in's event loop take any request that reached it before we look.
  await Bun.sleep(50);
  return { exitCode, stdout, stderr };
}

function expectNothingFromTheDirectory() {
  expect(existsSync(marker)).toBe(false);
  expect(evilRequests).toEqual([]);
}

describe("programs started in a repository's directory", () => {
  test("the control: plain `bun` there runs the preload and reads the .env (what no shipped program may do)", async () => {
    const result = await runThere(["bun", "-e", "console.log(process.env.SANDBOX_URL)"], { SANDBOX_URL: undefined as unknown as string });
    expect(result.stdout.trim()).toBe(`http://127.0.0.1:${evil.port}`);
    expect(existsSync(marker)).toBe(true);
  });

  test("session-sandbox (the installed command, its shebang) → --version, sessions, vms: no preload, nothing reached the .env's server", async () => {
    expect(await runThere([CLI, "--version"])).toMatchObject({ exitCode: 0 });
    expect((await runThere([CLI, "sessions"])).exitCode).not.toBe(0);
    expect((await runThere([CLI, "vms"], { SANDBOX_URL: "http://127.0.0.1:9" })).stderr).toContain("127.0.0.1:9");
    expectNothingFromTheDirectory();
  });

  for (const name of PACKAGE_SCRIPTS) {
    test(`bun run --cwd <checkout> ${name} from there → the checkout's own script; no preload, nothing reached the .env's server`, async () => {
      const result = await runThere(["bun", "run", "--cwd", ROOT, "--silent", name], { SANDBOX_URL: "http://127.0.0.1:9" });
      expect(result.stderr + result.stdout).not.toContain("hostile");
      expectNothingFromTheDirectory();
    });
  }

  for (const mode of ["helper", "bun"]) {
    test(`the shell shim (SANDBOX_SHIM=${mode}) for a session, run there → refused (126) with the manager unconfigured; no preload, nothing reached the .env's server`, async () => {
      const result = await runThere([SHIM, "-c", `touch ${marker}`], { SANDBOX_SHIM: mode, SANDBOX_SESSION_ID: "ses_hostile" });
      expect(result.exitCode).toBe(126);
      expectNothingFromTheDirectory();
    });
  }
});
