// /api/secrets: the secrets configured on the manager (names, hosts, scope), so a human can see what may
// be granted. Never a value, nor the environment variable that holds it.
import { Elysia, t } from "elysia";
import { ConfiguredSecret, errors } from "../http/schemas";
import type { Services } from "../services";

export function secretRoutes({ secretGrants }: Services) {
  return new Elysia({ tags: ["secrets"] }).get("/api/secrets", () => ({ secrets: secretGrants.configured() }), {
    response: { 200: t.Object({ secrets: t.Array(ConfiguredSecret) }), ...errors(401, 403) },
    detail: { operationId: "listSecrets", summary: "The configured secrets (SANDBOX_SECRETS): name, hosts and scope; grant one to a root session with PUT /api/session-sandbox/:id {\"secrets\": [...]}" },
  });
}
