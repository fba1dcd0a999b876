// Where the manager is and which token to send: the SDK's one resolver (sdk/connection.ts), with a URL that
// cannot be used turned into a usage error (exit 2). Reads the token file, never creates it.
import { resolveConnection as resolve, type TokenSource } from "../sdk/connection";
import { UsageError } from "./errors";

type Env = Record<string, string | undefined>;

export type Connection = {
  url: string;
  /** Empty when none was found: the manager then answers 401 and `tokenProblem` says why. */
  token: string;
  tokenSource: TokenSource;
  /** Why no token was found, for the fix of an UnauthorizedError. */
  tokenProblem: string | undefined;
};

/**
 * SANDBOX_URL, else http://SANDBOX_HOST:SANDBOX_PORT (defaults 127.0.0.1:7878; a wildcard host means loopback).
 * Exported so a test checks the defaults and their order.
 */
export function managerUrl(env: Env): string {
  const { url, urlProblem } = resolve({}, env);
  if (urlProblem) throw new UsageError(urlProblem.reason, urlProblem.fix);
  return url;
}

export function resolveConnection(env: Env): Connection {
  const url = managerUrl(env);
  const { token, tokenSource, tokenProblem } = resolve({}, env);
  return { url, token: token ?? "", tokenSource, tokenProblem: tokenProblem ?? undefined };
}
