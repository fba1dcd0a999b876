// What every admin script shares: exit codes (0 ok, 1 failed, 2 usage, 3 unreachable), one-line errors
// with the fix, --json errors, --help, and finding the manager and its token from the environment.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { parseJson, runScript, startAdminManager, type AdminManager } from "./fixture";

const SCRIPTS = ["vms", "sessions", "settings", "sandbox", "resources", "network", "rm", "prune", "doctor", "secrets", "stats"] as const;
/** Arguments that make each script reach for the manager. */
const ARGS: Record<(typeof SCRIPTS)[number], string[]> = {
  vms: [],
  sessions: [],
  settings: [],
  sandbox: ["ses_x", "on"],
  resources: ["ses_x", "--cpus", "1"],
  network: ["ses_x", "none"],
  rm: ["ocm-session-000000000000"],
  prune: ["--dry-run"],
  doctor: [],
  secrets: ["ses_x", "grant", "API_TOKEN"],
  stats: [],
};
type ErrorJson = { error: { code: string; message: string; fix: string | null; exitCode: number } };

let m: AdminManager;
let closedUrl: string;
beforeAll(async () => {
  m = await startAdminManager();
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  closedUrl = `http://127.0.0.1:${server.port}`;
  server.stop(true);
}, 60_000);
afterAll(async () => m?.cleanup(), 60_000);

describe("admin scripts", () => {
  test.each(SCRIPTS)("%s with the manager down → exit 3 (doctor: 1), one line with how to start it", async (name) => {
    const result = await runScript(name, ARGS[name], { SANDBOX_URL: closedUrl, SANDBOX_API_TOKEN: "t" });
    if (name === "doctor") {
      expect(result.exitCode).toBe(1);
      expect(result.stdout).toContain(`FAIL  manager`);
      return;
    }
    expect(result.exitCode).toBe(3);
    expect(result.stdout).toBe("");
    expect(result.stderr.split("\n")).toHaveLength(2); // one line and its newline
    expect(result.stderr).toStartWith(`${name}: cannot reach the manager at ${closedUrl}`);
    expect(result.stderr).toEndWith("— fix: start it with `bash scripts/start.sh` (or point SANDBOX_URL at the running manager)\n");
    const json = parseJson<ErrorJson>(await runScript(name, [...ARGS[name], "--json"], { SANDBOX_URL: closedUrl, SANDBOX_API_TOKEN: "t" }));
    expect(json.error).toMatchObject({ code: "MANAGER_UNREACHABLE", exitCode: 3 });
  });

  test.each(SCRIPTS)("%s --help → usage and the exit codes, exit 0; an unknown option → exit 2", async (name) => {
    const help = await runScript(name, ["--help"], {});
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toStartWith(`usage: bun run ${name}`);
    expect(help.stdout).toContain("exit codes: 0 ok, 1 the operation failed, 2 usage error, 3 the manager is unreachable");
    const bad = await runScript(name, ["--no-such-option"], m.env);
    expect(bad).toEqual({ exitCode: 2, stdout: "", stderr: `${name}: Unknown option '--no-such-option' — fix: see \`bun run ${name} --help\`\n` });
  });

  test("no SANDBOX_API_TOKEN → the token file of SANDBOX_DATA_DIR; SANDBOX_HOST/SANDBOX_PORT instead of SANDBOX_URL", async () => {
    const port = new URL(m.manager.url).port;
    const result = await runScript("settings", ["--json"], { SANDBOX_HOST: "127.0.0.1", SANDBOX_PORT: port, SANDBOX_DATA_DIR: m.dataDir });
    expect(result.exitCode).toBe(0);
    expect(parseJson<{ enabled: boolean }>(result).enabled).toBe(true);
  });

  test("no token anywhere → exit 1, and the fix says where it looked", async () => {
    const result = await runScript("vms", [], { SANDBOX_URL: m.manager.url, SANDBOX_DATA_DIR: `${m.dataDir}-nowhere` });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain(`fix: no manager token: set SANDBOX_API_TOKEN or SANDBOX_API_TOKEN_FILE (could not read ${m.dataDir}-nowhere/api-token: ENOENT); set SANDBOX_API_TOKEN`);
  });

  test("a wrong token → exit 1 with the manager's reason; a bad SANDBOX_URL → exit 2", async () => {
    const wrong = await runScript("sessions", [], { SANDBOX_URL: m.manager.url, SANDBOX_API_TOKEN: "wrong" });
    expect(wrong.exitCode).toBe(1);
    expect(wrong.stderr).toStartWith("sessions: missing or wrong bearer token");
    const badUrl = await runScript("sessions", [], { SANDBOX_URL: "not a url", SANDBOX_API_TOKEN: "t" });
    expect(badUrl).toEqual({ exitCode: 2, stdout: "", stderr: 'sessions: SANDBOX_URL="not a url" is not a URL — fix: set it like http://127.0.0.1:7878, or unset it\n' });
  });
});
