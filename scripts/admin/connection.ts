// Where the manager is and which token to send, from the environment; reads the token file, never creates it.
import { readFileSync } from "node:fs";
import { tokenPath } from "../../app/auth-token";
import { resolveDataDir } from "../../app/config";
import { UsageError } from "./errors";

type Env = Record<string, string | undefined>;

export type Connection = {
  url: string;
  /** Empty when none was found: the manager then answers 401 and `tokenProblem` says why. */
  token: string;
  tokenSource: "SANDBOX_API_TOKEN" | "token file" | "none";
  /** Why no token was found, for the fix of an UnauthorizedError. */
  tokenProblem: string | undefined;
};

/** SANDBOX_URL, else http://SANDBOX_HOST:SANDBOX_PORT (defaults 127.0.0.1:7878; a wildcard host means loopback). */
export function managerUrl(env: Env): string {
  if (env.SANDBOX_URL) {
    let parsed: URL;
    try {
      parsed = new URL(env.SANDBOX_URL);
    } catch {
      throw new UsageError(`SANDBOX_URL=${JSON.stringify(env.SANDBOX_URL)} is not a URL`, "set it like http://127.0.0.1:7878, or unset it");
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      throw new UsageError(`SANDBOX_URL=${JSON.stringify(env.SANDBOX_URL)} is not an http(s) URL`, "set it like http://127.0.0.1:7878");
    }
    return env.SANDBOX_URL.replace(/\/+$/, "");
  }
  let host = env.SANDBOX_HOST || "127.0.0.1";
  // The manager may listen on every interface; a client talks to it over loopback.
  if (host === "0.0.0.0") host = "127.0.0.1";
  if (host === "::") host = "::1";
  if (host.includes(":") && !host.startsWith("[")) host = `[${host}]`;
  const port = env.SANDBOX_PORT || "7878";
  if (!/^\d{1,5}$/.test(port) || Number(port) === 0 || Number(port) > 65535) {
    throw new UsageError(`SANDBOX_PORT=${JSON.stringify(port)} is not a port the manager can be reached on`, "set SANDBOX_URL, or SANDBOX_PORT to the port in the manager's \"manager listening\" log line");
  }
  return `http://${host}:${port}`;
}

/** SANDBOX_API_TOKEN, else `<data dir>/api-token` (as app/auth-token.ts stores it). */
export function findToken(env: Env): Pick<Connection, "token" | "tokenSource" | "tokenProblem"> {
  if (env.SANDBOX_API_TOKEN) return { token: env.SANDBOX_API_TOKEN, tokenSource: "SANDBOX_API_TOKEN", tokenProblem: undefined };
  const path = tokenPath(resolveDataDir(env));
  try {
    const token = readFileSync(path, "utf8").trim();
    if (token) return { token, tokenSource: "token file", tokenProblem: undefined };
    return { token: "", tokenSource: "none", tokenProblem: `SANDBOX_API_TOKEN is unset and ${path} is empty` };
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    return { token: "", tokenSource: "none", tokenProblem: `SANDBOX_API_TOKEN is unset and ${path} cannot be read (${reason})` };
  }
}

export function resolveConnection(env: Env): Connection {
  return { url: managerUrl(env), ...findToken(env) };
}
