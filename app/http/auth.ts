// Bearer-token guard for every route except GET /api/health and the dashboard's static page and assets.
import { Elysia } from "elysia";
import { tokensMatch } from "../auth-token";
import { UnauthorizedError } from "../errors";

/** The dashboard's page and assets hold no data: it signs in with the token and calls /api with it. */
export const PUBLIC_PATHS = new Set(["/api/health", "/", "/ui/app.js", "/ui/app.css"]);

export function bearerAuth(token: string) {
  return new Elysia({ name: "bearer-auth" }).onRequest(({ request }) => {
    const path = new URL(request.url).pathname;
    if (request.method === "GET" && PUBLIC_PATHS.has(path)) return;
    const header = request.headers.get("authorization") ?? "";
    const match = /^Bearer\s+(.+)$/i.exec(header);
    if (!match || !tokensMatch(token, match[1]!.trim())) throw new UnauthorizedError();
  });
}
