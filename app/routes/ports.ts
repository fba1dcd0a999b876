// POST/GET /api/sessions/:id/ports and DELETE /api/sessions/:id/ports/:port: ports of the session's VM
// forwarded to the manager's host (app/services/ports.ts). A child session names its root's VM.
import { Type } from "@sinclair/typebox";
import { Elysia, t } from "elysia";
import { jsonObjectBody } from "../http/json-body";
import { errors, SessionParams, SessionId } from "../http/schemas";
import type { PortsService } from "../services/ports";

const PortNumber = Type.Integer({ minimum: 1, maximum: 65535 });
const Forward = t.Object({
  port: Type.Integer({ description: "The port inside the VM" }),
  hostPort: Type.Integer({ description: "The port on the manager's host" }),
  url: t.String({ description: "http://<host>:<hostPort>/, for a browser" }),
  openedAt: Type.Integer({ description: "Unix epoch milliseconds" }),
  connections: Type.Integer({ description: "Connections relayed right now" }),
});
const OpenPortBody = t.Object(
  { port: PortNumber, hostPort: t.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: "Default: a free port" })) },
  { additionalProperties: false },
);

export function portRoutes(ports: PortsService) {
  return new Elysia({ tags: ["ports"] })
    .post(
      "/api/sessions/:id/ports",
      ({ params, body, set }) => {
        set.status = 201;
        return ports.open(params.id, body);
      },
      {
        params: SessionParams,
        parse: jsonObjectBody,
        body: OpenPortBody,
        response: { 201: Forward, ...errors(400, 401, 404, 409, 413, 415, 422) },
        detail: { operationId: "openPort", summary: "Forward a port of the session's VM to the manager's host (loopback by default); TCP, so HTTP, WebSockets and SSE alike" },
      },
    )
    .get("/api/sessions/:id/ports", ({ params }) => ({ ports: ports.list(params.id) }), {
      params: SessionParams,
      response: { 200: t.Object({ ports: t.Array(Forward) }), ...errors(400, 401, 404, 409, 422) },
      detail: { operationId: "listPorts", summary: "The session's forwarded ports" },
    })
    .delete("/api/sessions/:id/ports/:port", ({ params }) => ports.close(params.id, params.port), {
      params: t.Object({ id: SessionId, port: t.Numeric({ minimum: 1, maximum: 65535 }) }),
      response: { 200: Forward, ...errors(400, 401, 404, 409, 422) },
      detail: { operationId: "closePort", summary: "Close a forward: its listener and its connections" },
    });
}
