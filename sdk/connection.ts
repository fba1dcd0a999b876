// Where the manager is and which token to send: the one resolver every client uses (the plugin, its Bun
// shim, the CLI, the forge example; the C shim helper keeps its own code, held to the same table of cases by
// test/sdk/connection.test.ts). Each setting comes from the first of: an option → the environment → a file
// → the default. It reads files (node:fs), so it is its own entry, not part of sdk/index.ts, which stays
// loadable in a browser (test/sdk-bundle.test.ts). It carries no server code either.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

type Env = Record<string, string | undefined>;

export const DEFAULT_MANAGER_URL = "http://127.0.0.1:7878";
export const DEFAULT_MANAGER_TIMEOUT_MS = 10_000;
/** The token file's name in the manager's data directory. */
export const TOKEN_FILE = "api-token";

export type ConnectionOptions = {
  /** The manager's base URL; else SANDBOX_URL, else http://SANDBOX_HOST:SANDBOX_PORT (127.0.0.1:7878). */
  url?: string;
  /** The API token itself; else SANDBOX_API_TOKEN, else the token file. */
  token?: string;
  /** Where the token is; else SANDBOX_API_TOKEN_FILE, else `<dataDir>/api-token`. */
  tokenFile?: string;
  /** The manager's data directory; else SANDBOX_DATA_DIR, else `$XDG_STATE_HOME/session-sandbox` (~/.local/state). */
  dataDir?: string;
  /** Per API call; else SANDBOX_MANAGER_TIMEOUT_MS, else 10 s. */
  managerTimeoutMs?: number;
};

export type TokenSource = "option" | "SANDBOX_API_TOKEN" | "token file" | "none";

export type Connection = {
  /** Without a trailing slash. Meaningless when `urlProblem` is set. */
  url: string;
  /** Why the configured URL (or host and port) cannot be used, and what to do; null when it can. */
  urlProblem: { reason: string; fix: string } | null;
  /** Null when none was found: `tokenProblem` says why. */
  token: string | null;
  tokenSource: TokenSource;
  tokenProblem: string | null;
  managerTimeoutMs: number;
};

/** An empty value counts as unset, everywhere (`SANDBOX_URL=` is no URL, not an empty one). */
const given = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined);

/** The manager's data directory, as the manager itself resolves it (app/config.ts uses this too). */
export function resolveDataDir(env: Env, option?: string): string {
  return given(option) ?? given(env.SANDBOX_DATA_DIR) ?? join(given(env.XDG_STATE_HOME) ?? join(given(env.HOME) ?? homedir(), ".local", "state"), "session-sandbox");
}

function resolveUrl(env: Env, option?: string): Pick<Connection, "url" | "urlProblem"> {
  const explicit = given(option) ?? given(env.SANDBOX_URL);
  const named = given(option) ? `the url option ${JSON.stringify(explicit)}` : `SANDBOX_URL=${JSON.stringify(explicit)}`;
  if (explicit) {
    let parsed: URL;
    try {
      parsed = new URL(explicit);
    } catch {
      return { url: explicit, urlProblem: { reason: `${named} is not a URL`, fix: `set it like ${DEFAULT_MANAGER_URL}, or unset it` } };
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      return { url: explicit, urlProblem: { reason: `${named} is not an http(s) URL`, fix: `set it like ${DEFAULT_MANAGER_URL}` } };
    }
    if (!parsed.hostname || parsed.username || parsed.password) {
      return { url: explicit, urlProblem: { reason: `${named} has no host, or has credentials in it`, fix: "give the manager's address only; the token goes in SANDBOX_API_TOKEN" } };
    }
    return { url: explicit.replace(/\/+$/, ""), urlProblem: null };
  }
  let host = given(env.SANDBOX_HOST) ?? "127.0.0.1";
  // The manager may listen on every interface; a client talks to it over loopback.
  if (host === "0.0.0.0") host = "127.0.0.1";
  if (host === "::") host = "::1";
  if (host.includes(":") && !host.startsWith("[")) host = `[${host}]`;
  const port = given(env.SANDBOX_PORT) ?? "7878";
  const url = `http://${host}:${port}`;
  if (!/^\d{1,5}$/.test(port) || Number(port) === 0 || Number(port) > 65535) {
    return {
      url,
      urlProblem: { reason: `SANDBOX_PORT=${JSON.stringify(port)} is not a port the manager can be reached on`, fix: `set SANDBOX_URL, or SANDBOX_PORT to the port in the manager's "manager listening" log line` },
    };
  }
  return { url, urlProblem: null };
}

function resolveToken(env: Env, options: ConnectionOptions): Pick<Connection, "token" | "tokenSource" | "tokenProblem"> {
  if (given(options.token)) return { token: options.token!, tokenSource: "option", tokenProblem: null };
  if (given(env.SANDBOX_API_TOKEN)) return { token: env.SANDBOX_API_TOKEN!, tokenSource: "SANDBOX_API_TOKEN", tokenProblem: null };
  const file = given(options.tokenFile) ?? given(env.SANDBOX_API_TOKEN_FILE) ?? join(resolveDataDir(env, options.dataDir), TOKEN_FILE);
  try {
    const token = readFileSync(file, "utf8").trim();
    if (token) return { token, tokenSource: "token file", tokenProblem: null };
    return { token: null, tokenSource: "none", tokenProblem: `no manager token: SANDBOX_API_TOKEN is unset and the token file ${file} is empty` };
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    return {
      token: null,
      tokenSource: "none",
      tokenProblem: `no manager token: set SANDBOX_API_TOKEN or SANDBOX_API_TOKEN_FILE (could not read ${file}: ${reason})`,
    };
  }
}

/** A positive whole number of ms (decimal digits only in the environment), else the default. */
function resolveTimeout(env: Env, option?: number): number {
  if (option !== undefined) return Number.isInteger(option) && option > 0 ? option : DEFAULT_MANAGER_TIMEOUT_MS;
  const text = given(env.SANDBOX_MANAGER_TIMEOUT_MS);
  return text !== undefined && /^\d+$/.test(text) && Number(text) > 0 ? Number(text) : DEFAULT_MANAGER_TIMEOUT_MS;
}

/** A plugin's options as OpenCode hands them over (opencode.json, untyped): the connection settings among them. */
export function connectionOptionsFrom(options: Record<string, unknown>): ConnectionOptions {
  const text = (value: unknown) => (typeof value === "string" ? given(value) : undefined);
  const timeout = options.managerTimeoutMs;
  return { url: text(options.url), token: text(options.token), tokenFile: text(options.tokenFile), managerTimeoutMs: typeof timeout === "number" ? timeout : undefined };
}

/** Resolves every connection setting; never throws (a problem is reported in `urlProblem` / `tokenProblem`). */
export function resolveConnection(options: ConnectionOptions = {}, env: Env = process.env): Connection {
  return { ...resolveUrl(env, options.url), ...resolveToken(env, options), managerTimeoutMs: resolveTimeout(env, options.managerTimeoutMs) };
}
