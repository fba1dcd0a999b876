// The raw Eden treaty client of the manager's API, typed by the server's routes. Used by createClient
// (client.ts), whose public types hide it, and by this repository's own tests; the published SDK's
// declarations never name it, so they need none of the server's types.
import { treaty } from "@elysiajs/eden";
import type { App } from "../app/index";
import type { ClientOptions } from "./client-options";

export function createEdenApi({ url, token, timeoutMs = 30_000, fetcher }: ClientOptions) {
  return treaty<App>(url, {
    parseDate: false,
    headers: { authorization: `Bearer ${token}` },
    fetcher: fetcher as never,
    onRequest: () => ({ signal: AbortSignal.timeout(timeoutMs) }),
  }).api;
}

