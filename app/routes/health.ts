// GET /api/health: the only route that needs no token. Says whether a runtime is usable.
import { Elysia } from "elysia";
import { Health } from "../http/schemas";
import type { HostLimits } from "../services/host-limits";
import type { TierAvailability } from "../../runtime/isolation";

export type RuntimeStatus = {
  name: string | null;
  available: boolean;
  version: string | null;
  reason: string;
  /** For each runtime not in use, why not. */
  notUsed: Record<string, string>;
  /** Which isolation tiers this manager can run a session in, and why not the others (runtime/isolation.ts). */
  tiers?: TierAvailability;
};

export function healthRoutes(version: string, host: HostLimits, runtimeStatus: () => RuntimeStatus) {
  return new Elysia({ tags: ["health"] }).get("/api/health", () => ({ status: "ok" as const, version, runtime: runtimeStatus(), host }), {
    response: { 200: Health },
    detail: { operationId: "getHealth", security: [], summary: "Liveness, version, runtime in use (or why none is), host limits. No token needed." },
  });
}
