// /api/vms: what VMs the supervisor knows, and removing one by name.
import { Elysia, t } from "elysia";
import { Type } from "@sinclair/typebox";
import { jsonObjectBody } from "../http/json-body";
import { errors, Vm, VmParams } from "../http/schemas";
import type { Supervisor } from "../supervisor/supervisor";
import type { BindMount } from "../../runtime/driver";
import { principalOf } from "../http/auth";
import { vmFilterFor } from "../http/user-access";
import type { UsersService } from "../services/users";

/** The directories a VM mounts, without any nested inside another (a linked worktree's main git dir can be). */
function topLevelMounts(mounts: BindMount[]): string[] {
  const paths = mounts.map((m) => m.hostPath);
  return paths.filter((path) => !paths.some((other) => path.startsWith(`${other}/`)));
}

export function vmRoutes(supervisor: Supervisor, users: Pick<UsersService, "rootsOf">) {
  return new Elysia({ prefix: "/api/vms", tags: ["vms"] })
    .get(
      "",
      ({ request }) => {
        const visible = vmFilterFor(users, principalOf(request));
        return {
          vms: supervisor.list().filter((r) => visible(r.vmName)).map((r) => ({
            name: r.vmName,
            rootSessionID: r.rootSessionID,
            status: r.status,
            spec: r.spec && { cpus: r.spec.cpus, memoryMib: r.spec.memoryMib, tmpSizeMib: r.spec.tmpSizeMib, mounts: topLevelMounts(r.spec.mounts), image: r.spec.image },
            createdAt: r.createdAt,
            lastUsedAt: r.lastUsedAt,
            runningExecs: r.activeExecs,
            lastStopReason: r.lastStopReason,
          })),
        };
      },
      { response: { 200: t.Object({ vms: t.Array(Vm) }), ...errors(401) }, detail: { operationId: "listVms", summary: "Every VM the manager knows, with status, spec and use times" } },
    )
    .post(
      "/sweep",
      async ({ body }) => ({ removed: await supervisor.sweep(body.idleForMs, { dryRun: body.dryRun ?? false }), dryRun: body.dryRun ?? false }),
      {
        parse: jsonObjectBody,
        body: t.Object(
          {
            idleForMs: t.Optional(Type.Integer({ minimum: 0, description: "Default: max(idleStopMinutes, execTimeoutMs); given, the reason is \"manual\"" })),
            dryRun: t.Optional(t.Boolean({ description: "Only list what would be removed" })),
          },
          { additionalProperties: false },
        ),
        response: { 200: t.Object({ removed: t.Array(t.String()), dryRun: t.Boolean() }), ...errors(400, 401, 403, 413, 415, 422) },
        detail: { operationId: "sweepVms", summary: "Run the idle sweep now: remove every VM (and its volume) unused for idleForMs; dryRun only lists them" },
      },
    )
    .delete(
      "/:name",
      async ({ params }) => {
        await supervisor.removeByName(params.name);
        return { removed: params.name };
      },
      {
        params: VmParams,
        response: { 200: t.Object({ removed: t.String() }), ...errors(401, 403, 404, 422, 503) },
        detail: { operationId: "removeVm", summary: "Remove a VM and its data volume (its running commands are cancelled)" },
      },
    );
}
