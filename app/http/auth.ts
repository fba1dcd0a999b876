// Bearer-token guard for every route except GET /api/health and the dashboard's static page and assets.
// The manager's own token may ask anything; a user's token (app/services/users.ts) only what
// app/http/user-access.ts lists. Who asked is kept per request for the routes that answer per user.
import { timingSafeEqual } from "node:crypto";
import { Elysia } from "elysia";
import { UnauthorizedError } from "../errors";
import type { Principal } from "../services/users";
import type { ShellTickets } from "../services/shell-tickets";
import { authorizeUser, type UserAccess } from "./user-access";

/** The dashboard's page and assets hold no data: it signs in with the token and calls /api with it. */
const PUBLIC_PATHS = new Set(["/api/health", "/", "/ui/app.js", "/ui/app.css", "/ui/terminal.js", "/ui/terminal.css"]);

const BEARER = /^Bearer\s+(.+)$/i;

/** Who made each request past the guard. A request without one (a public path) owns nothing. */
const principals = new WeakMap<Request, Principal>();
const NOBODY: Principal = { kind: "user", name: "nobody", uid: -1, gid: -1 };

export function principalOf(request: Request): Principal {
  return principals.get(request) ?? NOBODY;
}

/**
 * Whether a presented token is `token`, the expected side hashed once, not on every request: fixed-length
 * SHA-256 digests compared in constant time, so neither content nor length leaks through timing.
 * Exported so a test can check the comparison itself.
 */
export function tokenCheck(token: string): (presented: string) => boolean {
  const expected = Bun.SHA256.hash(token) as Uint8Array;
  return (presented) => timingSafeEqual(expected, Bun.SHA256.hash(presented) as Uint8Array);
}

/** The shell's WebSocket, the one route a browser opens with a ticket (app/services/shell-tickets.ts) instead of the token. */
const SHELL_PATH = /^\/api\/sessions\/([^/]+)\/shell$/;

/**
 * `access`: the users' tokens and what they may do; without it only the manager's own token is accepted.
 * `tickets`: single-use tickets for the shell WebSocket, which a browser cannot give a header.
 */
export function bearerAuth(token: string, access?: UserAccess, tickets?: ShellTickets) {
  const matches = tokenCheck(token);
  return new Elysia({ name: "bearer-auth" }).onRequest((context) => {
    const { request } = context;
    // The path Elysia routes on (the URL's as sent, cut before `?`), already on the context: no second URL
    // parse. Its onRequest type omits it; were it ever missing, every route would need the token (closed).
    const path = (context as unknown as { path?: string }).path;
    if (request.method === "GET" && path !== undefined && PUBLIC_PATHS.has(path)) return;
    const match = BEARER.exec(request.headers.get("authorization") ?? "");
    const presented = match?.[1]?.trim();
    const shell = request.method === "GET" && !presented ? SHELL_PATH.exec(path ?? "") : null;
    if (shell && tickets) {
      const ticket = new URL(request.url).searchParams.get("ticket");
      const principal = ticket ? tickets.redeem(ticket, decodeURIComponent(shell[1]!)) : undefined;
      if (!principal) throw new UnauthorizedError("the shell ticket is unknown, already used, expired or for another session; ask for a new one (POST /api/sessions/:id/shell/tickets)");
      return void principals.set(request, principal);
    }
    if (presented && matches(presented)) return void principals.set(request, { kind: "admin" });
    const user = presented ? access?.users.authenticate(presented) : undefined;
    if (!user || user.kind !== "user") throw new UnauthorizedError();
    principals.set(request, user);
    authorizeUser(access!, user, request.method, path ?? "");
  });
}
