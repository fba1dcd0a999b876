// /api/session-sandbox/:id: a session's sandbox mode and resources.
import { Elysia } from "elysia";
import { jsonObjectBody } from "../http/json-body";
import { errors, SessionParams, SessionSandbox, SessionSandboxUpdate } from "../http/schemas";
import { ForbiddenError } from "../errors";
import { principalOf } from "../http/auth";
import type { Services } from "../services";

export function sessionSandboxRoutes({ sessionSandbox }: Services) {
  return new Elysia({ prefix: "/api/session-sandbox", tags: ["session-sandbox"] })
    .get("/:id", ({ params }) => sessionSandbox.get(params.id), {
      params: SessionParams,
      response: { 200: SessionSandbox, ...errors(400, 401, 404, 409, 422) },
      detail: { operationId: "getSessionSandbox", summary: "A session's effective sandbox mode, its source, resources and VM name" },
    })
    .put("/:id", ({ params, body, request }) => {
      // Secrets are the manager's: a user's token may use what was granted, never grant.
      if (body.secrets !== undefined && principalOf(request).kind !== "admin") throw new ForbiddenError("granting or revoking secrets");
      return sessionSandbox.update(params.id, body);
    }, {
      params: SessionParams,
      parse: jsonObjectBody,
      body: SessionSandboxUpdate,
      response: { 200: SessionSandbox, ...errors(400, 401, 403, 404, 409, 413, 415, 422) },
      detail: {
        operationId: "updateSessionSandbox",
        summary:
          "Toggle a root session's sandbox, set or clear (null) its resource, network and image overrides, and replace its secret grants; " +
          "a change of network policy or secrets, or a toggle-off, cuts the VM's open egress connections at once",
      },
    });
}
