// Where the manager is and how to reach it: plugin options (opencode.json tuple) over the environment.
// Shared by the plugin and the shell shim, so both always agree on the target.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

export type PluginConfig = {
  url: string;
  /** Null when no token could be found: every sandbox decision then fails closed with `problem`. */
  token: string | null;
  problem: string | null;
  /** Per manager API call (status, registration); a manager slower than this counts as unreachable. */
  managerTimeoutMs: number;
  /**
   * The one explicit opt-out of failing closed: when the manager cannot be reached, treat sessions as
   * not sandboxed and run on the host. Off unless SANDBOX_ALLOW_HOST_WHEN_UNREACHABLE=1 (or option).
   */
  allowHostWhenUnreachable: boolean;
};

export const DEFAULT_URL = "http://127.0.0.1:7878";
export const DEFAULT_MANAGER_TIMEOUT_MS = 10_000;

type Env = Record<string, string | undefined>;
type Options = Record<string, unknown>;

const str = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined);

/** The manager's default token file: `<data dir>/api-token`, data dir resolved as the manager does. */
export function defaultTokenFile(env: Env): string {
  const dataDir = env.SANDBOX_DATA_DIR || join(env.XDG_STATE_HOME || join(env.HOME || homedir(), ".local", "state"), "session-sandbox");
  return join(dataDir, "api-token");
}

export function loadPluginConfig(env: Env, options: Options = {}): PluginConfig {
  const url = (str(options.url) ?? env.SANDBOX_URL ?? DEFAULT_URL).replace(/\/+$/, "");
  const timeoutText = options.managerTimeoutMs ?? env.SANDBOX_MANAGER_TIMEOUT_MS;
  const parsedTimeout = Number(timeoutText);
  const managerTimeoutMs = timeoutText !== undefined && Number.isInteger(parsedTimeout) && parsedTimeout > 0 ? parsedTimeout : DEFAULT_MANAGER_TIMEOUT_MS;
  const allowHostWhenUnreachable = options.allowHostWhenUnreachable === true || env.SANDBOX_ALLOW_HOST_WHEN_UNREACHABLE === "1";
  const direct = str(options.token) ?? str(env.SANDBOX_API_TOKEN);
  if (direct) return { url, token: direct, problem: null, managerTimeoutMs, allowHostWhenUnreachable };
  const file = str(options.tokenFile) ?? str(env.SANDBOX_API_TOKEN_FILE) ?? defaultTokenFile(env);
  try {
    const token = readFileSync(file, "utf8").trim();
    if (token) return { url, token, problem: null, managerTimeoutMs, allowHostWhenUnreachable };
    return { url, token: null, problem: `the token file ${file} is empty`, managerTimeoutMs, allowHostWhenUnreachable };
  } catch (error) {
    const problem = `no manager token: set SANDBOX_API_TOKEN or SANDBOX_API_TOKEN_FILE (could not read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`;
    return { url, token: null, problem, managerTimeoutMs, allowHostWhenUnreachable };
  }
}
