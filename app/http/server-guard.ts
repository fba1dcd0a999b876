// What answers around the Elysia app, at Bun.serve's level. A request whose URL Bun cannot build (a
// missing or malformed Host header: `[`, `a b`, `x:99999`) is a 400 here, since Elysia would throw on it.
// Anything else that escapes the app is a JSON 500 without details; main.ts also turns off Bun's
// development error page, which showed source lines and host paths to unauthenticated callers.
import { InvalidHostError, type DomainError } from "../errors";
import type { Logger } from "../log";

type Fetch = (request: Request) => Response | Promise<Response>;
type ServerFetch = (request: Request, server: { timeout(request: Request, seconds: number): void }) => Response | Promise<Response>;

/**
 * Requests that may stay quiet for as long as their command (or client) lives: exec output and events
 * (streams), and a Docker start, which answers once the daemon does (up to 180 s).
 */
const QUIET_FOR_LONG = [
  { method: "POST", path: /^\/api\/sessions\/[^/]+\/exec$/ },
  { method: "GET", path: /^\/api\/events$/ },
  { method: "POST", path: /^\/api\/sessions\/[^/]+\/docker\/start$/ },
];

/** Exported so a test checks which requests are exempt from the idle timeout. */
export function isQuietForLong(method: string, path: string): boolean {
  return QUIET_FOR_LONG.some((route) => route.method === method && route.path.test(path));
}

function errorResponse(error: DomainError): Response {
  return Response.json({ code: error.errorCode, message: error.message }, { status: error.status });
}

/**
 * Refuses requests without a parseable URL before they reach `fetch`, and lifts Bun's idle timeout
 * (10 s) from the routes that may stay quiet: a command quiet for longer is not an idle connection (invariant 8). Done
 * here because Elysia's handlers never see Bun's server when the app is served through `app.fetch`.
 * The streams send heartbeats for proxies in between; the exec has its own timeout.
 */
export function guardFetch(fetch: Fetch): ServerFetch {
  return (request, server) => {
    // Checked, not parsed: a URL object on every request cost more than the rest of this guard.
    const url = request.url;
    if (!URL.canParse(url)) return errorResponse(new InvalidHostError());
    if (isQuietForLong(request.method, routedPath(url))) server.timeout(request, 0);
    return fetch(request);
  };
}

/** The path as Elysia routes on it: from the first `/` after the authority up to `?` (Bun's URL is already normalized). */
function routedPath(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start === -1) return "/";
  const query = url.indexOf("?", start);
  return query === -1 ? url.slice(start) : url.slice(start, query);
}

/** Bun.serve's `error` option: the last resort for errors the app's own onError never saw. */
export function serverErrorHandler(log: Logger): (error: Error) => Response {
  return (error) => {
    if ((error as NodeJS.ErrnoException).code === "ERR_INVALID_URL") return errorResponse(new InvalidHostError());
    log.error("unhandled server error", { error: String(error) });
    return Response.json({ code: "INTERNAL", message: "internal error; the manager logged the details" }, { status: 500 });
  };
}
