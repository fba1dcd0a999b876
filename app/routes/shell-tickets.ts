// POST /api/sessions/:id/shell/tickets: a single-use ticket for the session's shell WebSocket
// (app/services/shell-tickets.ts), for browsers, which cannot send the Authorization header on a WebSocket.
import { Type } from "@sinclair/typebox";
import { Elysia, t } from "elysia";
import { principalOf } from "../http/auth";
import { errors, SessionParams } from "../http/schemas";
import type { SessionsService } from "../services/sessions";
import type { ShellTickets } from "../services/shell-tickets";

export function shellTicketRoutes(sessions: Pick<SessionsService, "get">, tickets: ShellTickets) {
  return new Elysia({ tags: ["exec"] }).post(
    "/api/sessions/:id/shell/tickets",
    ({ params, request, set }) => {
      sessions.get(params.id); // a session whose lineage is broken or too deep is refused here, as on every session route
      set.status = 201;
      return tickets.issue(params.id, principalOf(request));
    },
    {
      params: SessionParams,
      response: {
        201: t.Object({
          ticket: t.String({ description: "Open GET /api/sessions/:id/shell?ticket=<it> without a token: once, for this session, before expiresAt" }),
          expiresAt: Type.Integer({ description: "Unix epoch milliseconds (10 s from now)" }),
        }),
        ...errors(400, 401, 404, 409, 422),
      },
      detail: { operationId: "createShellTicket", summary: "A single-use, 10-second ticket to open this session's shell WebSocket without the token in its URL (browsers cannot set headers on a WebSocket)" },
    },
  );
}
