// What answers around the Elysia app, at Bun.serve's level. A request whose URL Bun cannot build (a
// missing or malformed Host header: `[`, `a b`, `x:99999`) is a 400 here, since Elysia would throw on it.
// Anything else that escapes the app is a JSON 500 without details; main.ts also turns off Bun's
// development error page, which showed source lines and host paths to unauthenticated callers.
import { InvalidHostError, type DomainError } from "../errors";
import type { Logger } from "../log";

type Fetch = (request: Request) => Response | Promise<Response>;

function errorResponse(error: DomainError): Response {
  return Response.json({ code: error.errorCode, message: error.message }, { status: error.status });
}

/** Refuses requests without a parseable URL before they reach `fetch`. */
export function guardFetch(fetch: Fetch): Fetch {
  return (request) => (URL.canParse(request.url) ? fetch(request) : errorResponse(new InvalidHostError()));
}

/** Bun.serve's `error` option: the last resort for errors the app's own onError never saw. */
export function serverErrorHandler(log: Logger): (error: Error) => Response {
  return (error) => {
    if ((error as NodeJS.ErrnoException).code === "ERR_INVALID_URL") return errorResponse(new InvalidHostError());
    log.error("unhandled server error", { error: String(error) });
    return Response.json({ code: "INTERNAL", message: "internal error; the manager logged the details" }, { status: 500 });
  };
}
