// Bearer-token guard for every route except GET /api/health.
import { Elysia } from "elysia";
import { tokensMatch } from "../auth-token";
import { UnauthorizedError } from "../errors";

export const PUBLIC_PATHS = new Set(["/api/health"]);

export function bearerAuth(token: string) {
  return new Elysia({ name: "bearer-auth" }).onRequest(({ request }) => {
    const path = new URL(request.url).pathname;
    if (request.method === "GET" && PUBLIC_PATHS.has(path)) return;
    const header = request.headers.get("authorization") ?? "";
    const match = /^Bearer\s+(.+)$/i.exec(header);
    if (!match || !tokensMatch(token, match[1]!.trim())) throw new UnauthorizedError();
  });
}
