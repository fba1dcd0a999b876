// /api/sessions: register, list, get and delete OpenCode sessions.
import { Elysia, t } from "elysia";
import { jsonObjectBody } from "../http/json-body";
import { ActivityReport, DeletedSessions, ListedSession, errors, RegisterSessionBody, Session, SessionActivity, SessionParams } from "../http/schemas";
import { principalOf } from "../http/auth";
import type { Services } from "../services";

export function sessionRoutes({ sessions, sessionAccess, users, activity, settings }: Services) {
  /** The session's activity as shown; with holdWhileBusy off nothing holds a VM. */
  const activityOf = (sessionID: string) => {
    const view = activity.viewOf(sessionID);
    return view && { ...view, holds: view.holds && settings.get().holdWhileBusy };
  };
  const withActivity = <T extends { id: string }>(session: T) => ({ ...session, activity: activityOf(session.id) });
  return new Elysia({ prefix: "/api/sessions", tags: ["sessions"] })
    .post(
      "",
      ({ body, status, request }) => {
        const { session, created } = sessionAccess.register(principalOf(request), body);
        return created ? status(201, session) : status(200, session);
      },
      {
        parse: jsonObjectBody,
        body: RegisterSessionBody,
        response: { 200: Session, 201: Session, ...errors(400, 401, 403, 404, 409, 413, 415, 422) },
        detail: { operationId: "registerSession", summary: "Register a session (201), or confirm an identical registration (200). Different data for a known id is a 409." },
      },
    )
    .get("", ({ request }) => {
      const principal = principalOf(request);
      if (principal.kind === "admin") return { sessions: sessions.list().map(withActivity) };
      // A user sees the sessions of the roots it registered, and nothing of anyone else's.
      const own = new Set(users.rootsOf(principal.uid));
      return { sessions: sessions.list().filter((session) => session.rootSessionID !== null && own.has(session.rootSessionID)).map(withActivity) };
    }, {
      response: { 200: t.Object({ sessions: t.Array(ListedSession) }), ...errors(401) },
      detail: { operationId: "listSessions", summary: "List every registered session; rootSessionID is null where a stored parent chain is broken" },
    })
    .get("/:id", ({ params }) => sessions.get(params.id), {
      params: SessionParams,
      response: { 200: Session, ...errors(400, 401, 404, 409, 422) },
      detail: { operationId: "getSession", summary: "Get a session with its root" },
    })
    .post(
      "/:id/activity",
      ({ params, body }) => {
        const { rootSessionID } = sessions.get(params.id);
        activity.report(params.id, rootSessionID, body.state, body.state === "retry" ? (body.attempt ?? null) : null);
        return activityOf(params.id)!;
      },
      {
        params: SessionParams,
        parse: jsonObjectBody,
        body: ActivityReport,
        response: { 200: SessionActivity, ...errors(400, 401, 404, 409, 413, 415, 422) },
        detail: {
          operationId: "reportSessionActivity",
          summary:
            "Report what a session's agent is doing (the OpenCode plugin does, from OpenCode's events). A working session (busy, or retrying up to 3 times) holds its root's VM: the idle sweep never removes it and the cap never evicts it (holdWhileBusy), for at most maxHoldMinutes per busy stretch and while reports keep coming (a busy one is repeated every 60 s; after 180 s without, it counts as quiescent). The idle time counts from the root's last activity as well as its last command.",
        },
      },
    )
    .delete("/:id", ({ params }) => ({ deleted: sessions.delete(params.id) }), {
      params: SessionParams,
      response: { 200: DeletedSessions, ...errors(401, 404, 422) },
      detail: { operationId: "deleteSession", summary: "Delete a session and all its descendants" },
    });
}
