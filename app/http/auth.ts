// Bearer-token guard for every route except GET /api/health and the dashboard's static page and assets.
import { timingSafeEqual } from "node:crypto";
import { Elysia } from "elysia";
import { UnauthorizedError } from "../errors";

/** The dashboard's page and assets hold no data: it signs in with the token and calls /api with it. */
export const PUBLIC_PATHS = new Set(["/api/health", "/", "/ui/app.js", "/ui/app.css"]);

const BEARER = /^Bearer\s+(.+)$/i;

/**
 * tokensMatch (app/auth-token.ts) with the expected side hashed once, not on every request: fixed-length
 * SHA-256 digests compared in constant time, so neither content nor length leaks through timing.
 */
function tokenCheck(token: string): (presented: string) => boolean {
  const expected = Bun.SHA256.hash(token) as Uint8Array;
  return (presented) => timingSafeEqual(expected, Bun.SHA256.hash(presented) as Uint8Array);
}

export function bearerAuth(token: string) {
  const matches = tokenCheck(token);
  return new Elysia({ name: "bearer-auth" }).onRequest((context) => {
    const { request } = context;
    // The path Elysia routes on (the URL's as sent, cut before `?`), already on the context: no second URL
    // parse. Its onRequest type omits it; were it ever missing, every route would need the token (closed).
    const path = (context as unknown as { path?: string }).path;
    if (request.method === "GET" && path !== undefined && PUBLIC_PATHS.has(path)) return;
    const match = BEARER.exec(request.headers.get("authorization") ?? "");
    if (!match || !matches(match[1]!.trim())) throw new UnauthorizedError();
  });
}
