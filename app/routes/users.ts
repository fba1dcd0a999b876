// /api/users: host users with a token of their own (docs/non-root.md). Only the manager's own token reaches
// these routes (app/http/user-access.ts lists nothing here for users).
import { Elysia, t } from "elysia";
import { Type } from "@sinclair/typebox";
import { jsonObjectBody } from "../http/json-body";
import { errors } from "../http/schemas";
import type { Services } from "../services";

const UserName = t.String({ pattern: "^[a-z_][a-z0-9_-]{0,31}$", description: "A login name of this host (not root)" });
const UserView = t.Object({
  name: t.String(),
  uid: Type.Integer(),
  createdAt: Type.Integer({ description: "Unix epoch milliseconds" }),
  sessions: Type.Integer({ description: "Root sessions this user registered that are still registered" }),
});

export function userRoutes({ users }: Services) {
  return new Elysia({ prefix: "/api/users", tags: ["users"] })
    .post("", ({ body, status }) => status(201, users.add(body.name)), {
      parse: jsonObjectBody,
      body: t.Object({ name: UserName }, { additionalProperties: false }),
      response: {
        201: t.Object({ name: t.String(), uid: Type.Integer(), token: t.String({ description: "Shown once: only its SHA-256 is kept" }) }),
        ...errors(400, 401, 403, 409, 413, 415, 422),
      },
      detail: { operationId: "addUser", summary: "Give an account of this host a token of its own: it may register and use its own sessions only" },
    })
    .get("", () => ({ users: users.list() }), {
      response: { 200: t.Object({ users: t.Array(UserView) }), ...errors(401, 403) },
      detail: { operationId: "listUsers", summary: "The users with a token of their own" },
    })
    .delete("/:name", ({ params }) => {
      users.remove(params.name);
      return { removed: params.name };
    }, {
      params: t.Object({ name: UserName }),
      response: { 200: t.Object({ removed: t.String() }), ...errors(401, 403, 404, 422) },
      detail: { operationId: "removeUser", summary: "Take a user's token away at once (its sessions stay until deleted)" },
    });
}
