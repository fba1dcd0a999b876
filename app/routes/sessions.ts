// /api/sessions: register, list, get and delete OpenCode sessions.
import { Elysia, t } from "elysia";
import { parseJsonObject } from "../http/json-body";
import { DeletedSessions, ListedSession, ErrorBody, RegisterSessionBody, Session, SessionParams } from "../http/schemas";
import type { Services } from "../services";

export function sessionRoutes({ sessions }: Services) {
  return new Elysia({ prefix: "/api/sessions" })
    .post(
      "",
      ({ body, status }) => {
        const { session, created } = sessions.register(body);
        return created ? status(201, session) : status(200, session);
      },
      {
        parse: parseJsonObject,
        body: RegisterSessionBody,
        response: { 200: Session, 201: Session, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody, 413: ErrorBody, 415: ErrorBody, 422: ErrorBody },
        detail: { summary: "Register a session (201), or confirm an identical registration (200). Different data for a known id is a 409." },
      },
    )
    .get("", () => ({ sessions: sessions.list() }), {
      response: { 200: t.Object({ sessions: t.Array(ListedSession) }), 401: ErrorBody },
      detail: { summary: "List every registered session; rootSessionID is null where a stored parent chain is broken" },
    })
    .get("/:id", ({ params }) => sessions.get(params.id), {
      params: SessionParams,
      response: { 200: Session, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody },
      detail: { summary: "Get a session with its root" },
    })
    .delete("/:id", ({ params }) => ({ deleted: sessions.delete(params.id) }), {
      params: SessionParams,
      response: { 200: DeletedSessions, 401: ErrorBody, 404: ErrorBody, 422: ErrorBody },
      detail: { summary: "Delete a session and all its descendants" },
    });
}
