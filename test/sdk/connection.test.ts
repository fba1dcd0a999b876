// The one connection resolver (sdk/connection.ts: option → environment → file → default), and the C shim
// helper held to the same table of cases: each case's environment is resolved by both, and both must agree
// with what the table says. The one documented difference: the helper speaks plain HTTP only.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { resolveConnection } from "../../sdk/connection";
import { loadPluginConfig } from "../../plugin/config";
import { makeTempDir } from "../helpers";

const ROOT = join(import.meta.dir, "../..");
let dir: string;
let helper: string;

beforeAll(() => {
  dir = makeTempDir("ss-connection-");
  helper = join(dir, "shim-helper");
  const built = Bun.spawnSync(["sh", join(ROOT, "plugin/shim-helper/build.sh"), helper], { stderr: "pipe" });
  if (built.exitCode !== 0) throw new Error(`the shim helper did not build: ${built.stderr.toString()}`);
  const file = (path: string, text: string) => {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  };
  file("files/token", "  from-file \n");
  file("files/empty", "");
  file("data/api-token", "from-data-dir\n");
  file("xdg/session-sandbox/api-token", "from-xdg\n");
  file("home/.local/state/session-sandbox/api-token", "from-home\n");
  mkdirSync(join(dir, "empty-home"), { recursive: true });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Resolved = { url: string; urlProblem: boolean; token: string | null; tokenProblem: boolean; managerTimeoutMs: number };
type Case = { name: string; env: Record<string, string>; expected: Partial<Resolved>; helperDiffers?: Partial<Resolved> };

const DEFAULT_URL = "http://127.0.0.1:7878";
/** `@` at the start of a value is the test's scratch directory. */
const CASES: Case[] = [
  { name: "nothing set → the default URL; no token (the default file is missing)", env: {}, expected: { url: DEFAULT_URL, urlProblem: false, token: null, tokenProblem: true, managerTimeoutMs: 10_000 } },
  { name: "SANDBOX_URL, trailing slashes dropped; SANDBOX_PORT ignored beside it", env: { SANDBOX_URL: "http://127.0.0.1:9000//", SANDBOX_PORT: "1" }, expected: { url: "http://127.0.0.1:9000", urlProblem: false } },
  { name: "SANDBOX_URL empty → unset: host and port decide", env: { SANDBOX_URL: "", SANDBOX_PORT: "8000" }, expected: { url: "http://127.0.0.1:8000", urlProblem: false } },
  { name: "SANDBOX_HOST 0.0.0.0 → loopback", env: { SANDBOX_HOST: "0.0.0.0", SANDBOX_PORT: "8001" }, expected: { url: "http://127.0.0.1:8001", urlProblem: false } },
  { name: "SANDBOX_HOST :: → [::1]", env: { SANDBOX_HOST: "::" }, expected: { url: "http://[::1]:7878", urlProblem: false } },
  { name: "SANDBOX_HOST ::1 → bracketed", env: { SANDBOX_HOST: "::1" }, expected: { url: "http://[::1]:7878", urlProblem: false } },
  { name: "SANDBOX_PORT 0 → a problem", env: { SANDBOX_PORT: "0" }, expected: { urlProblem: true } },
  { name: "SANDBOX_PORT 70000 → a problem", env: { SANDBOX_PORT: "70000" }, expected: { urlProblem: true } },
  { name: "SANDBOX_PORT abc → a problem", env: { SANDBOX_PORT: "abc" }, expected: { urlProblem: true } },
  { name: "SANDBOX_URL ftp:// → a problem", env: { SANDBOX_URL: "ftp://x" }, expected: { urlProblem: true } },
  { name: "SANDBOX_URL not a URL → a problem", env: { SANDBOX_URL: "not a url" }, expected: { urlProblem: true } },
  { name: "SANDBOX_URL with credentials → a problem", env: { SANDBOX_URL: "http://user:pw@127.0.0.1:1" }, expected: { urlProblem: true } },
  { name: "SANDBOX_URL https → fine (the helper speaks plain HTTP only: SANDBOX_SHIM=bun)", env: { SANDBOX_URL: "https://manager.internal:7878" }, expected: { url: "https://manager.internal:7878", urlProblem: false }, helperDiffers: { urlProblem: true } },
  { name: "SANDBOX_API_TOKEN → it, no file read", env: { SANDBOX_API_TOKEN: "direct", SANDBOX_API_TOKEN_FILE: "@/files/missing" }, expected: { token: "direct", tokenProblem: false } },
  { name: "SANDBOX_API_TOKEN empty → the file (trimmed)", env: { SANDBOX_API_TOKEN: "", SANDBOX_API_TOKEN_FILE: "@/files/token" }, expected: { token: "from-file", tokenProblem: false } },
  { name: "SANDBOX_DATA_DIR → its api-token", env: { SANDBOX_DATA_DIR: "@/data", XDG_STATE_HOME: "@/xdg" }, expected: { token: "from-data-dir" } },
  { name: "XDG_STATE_HOME → session-sandbox/api-token under it", env: { XDG_STATE_HOME: "@/xdg", HOME: "@/home" }, expected: { token: "from-xdg" } },
  { name: "HOME → ~/.local/state/session-sandbox/api-token", env: { HOME: "@/home" }, expected: { token: "from-home" } },
  { name: "an empty token file → no token, a problem", env: { SANDBOX_API_TOKEN_FILE: "@/files/empty" }, expected: { token: null, tokenProblem: true } },
  { name: "SANDBOX_MANAGER_TIMEOUT_MS 2500 → 2500", env: { SANDBOX_MANAGER_TIMEOUT_MS: "2500" }, expected: { managerTimeoutMs: 2500 } },
  { name: "SANDBOX_MANAGER_TIMEOUT_MS 1e3 → the default (decimal digits only)", env: { SANDBOX_MANAGER_TIMEOUT_MS: "1e3" }, expected: { managerTimeoutMs: 10_000 } },
  { name: "SANDBOX_MANAGER_TIMEOUT_MS 0 → the default", env: { SANDBOX_MANAGER_TIMEOUT_MS: "0" }, expected: { managerTimeoutMs: 10_000 } },
  { name: "SANDBOX_MANAGER_TIMEOUT_MS -5 → the default", env: { SANDBOX_MANAGER_TIMEOUT_MS: "-5" }, expected: { managerTimeoutMs: 10_000 } },
];

/** The case's environment, with `@` expanded and HOME pointing at an empty directory unless the case sets it. */
function envOf(testCase: Case): Record<string, string> {
  const env: Record<string, string> = { HOME: join(dir, "empty-home") };
  for (const [key, value] of Object.entries(testCase.env)) env[key] = value.startsWith("@") ? join(dir, value.slice(1)) : value;
  return env;
}

function bySdk(env: Record<string, string>): Resolved {
  const c = resolveConnection({}, env);
  return { url: c.url, urlProblem: c.urlProblem !== null, token: c.token, tokenProblem: c.tokenProblem !== null, managerTimeoutMs: c.managerTimeoutMs };
}

function byHelper(env: Record<string, string>): Resolved {
  const result = Bun.spawnSync([helper, "--print-config"], { env: { PATH: process.env.PATH ?? "", ...env }, stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`the helper failed: ${result.stderr.toString()}`);
  return JSON.parse(result.stdout.toString()) as Resolved;
}

describe("one connection resolver: option → environment → file → default", () => {
  for (const testCase of CASES) {
    test(`${testCase.name} (the SDK and the C shim helper alike)`, () => {
      const env = envOf(testCase);
      expect(bySdk(env)).toMatchObject(testCase.expected);
      const fromHelper = byHelper(env);
      expect(fromHelper).toMatchObject({ ...testCase.expected, ...testCase.helperDiffers });
      // Everything the table does not name agrees between the two as well.
      expect({ ...fromHelper, ...testCase.helperDiffers }).toEqual({ ...bySdk(env), ...testCase.helperDiffers });
    });
  }

  test("options come before the environment: url, token, token file, data dir, timeout", () => {
    const env = { SANDBOX_URL: "http://127.0.0.1:1", SANDBOX_API_TOKEN: "from-env", SANDBOX_MANAGER_TIMEOUT_MS: "5", HOME: join(dir, "empty-home") };
    expect(resolveConnection({ url: "http://127.0.0.1:2/", token: "from-option", managerTimeoutMs: 7 }, env)).toMatchObject({ url: "http://127.0.0.1:2", token: "from-option", tokenSource: "option", managerTimeoutMs: 7 });
    expect(resolveConnection({ tokenFile: join(dir, "files/token") }, { HOME: join(dir, "empty-home") })).toMatchObject({ token: "from-file", tokenSource: "token file" });
    expect(resolveConnection({ dataDir: join(dir, "data") }, { SANDBOX_DATA_DIR: join(dir, "elsewhere") })).toMatchObject({ token: "from-data-dir" });
  });

  test("the plugin's config is the resolver's: a URL that cannot be used leaves no token, so every decision fails closed with the reason", () => {
    const config = loadPluginConfig({ SANDBOX_URL: "ftp://x", SANDBOX_API_TOKEN: "t" });
    expect(config.token).toBeNull();
    expect(config.problem).toContain("not an http(s) URL");
    expect(loadPluginConfig({ SANDBOX_PORT: "8002", SANDBOX_API_TOKEN: "t" })).toMatchObject({ url: "http://127.0.0.1:8002", token: "t", problem: null });
  });
});
