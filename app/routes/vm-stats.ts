// GET /api/vms/stats and GET /api/vms/:name/stats: what each VM uses now, read from the runtime.
import { Type } from "@sinclair/typebox";
import { Elysia, t } from "elysia";
import { errors, VmParams } from "../http/schemas";
import type { VmStatsService } from "../services/vm-stats";
import { principalOf } from "../http/auth";
import { vmFilterFor } from "../http/user-access";
import type { UsersService } from "../services/users";

const bytes = (description: string) => t.Nullable(Type.Integer({ minimum: 0, description }));

const VmStats = t.Object(
  {
    name: t.String(),
    rootSessionID: t.Nullable(t.String()),
    status: t.UnionEnum(["absent", "booting", "running", "stopping", "stopped", "removing"]),
    available: t.Boolean({ description: "False when the runtime cannot report usage (a microVM's processes are not host cgroups, or no runtime); then every number is null" }),
    reason: t.Nullable(t.String({ description: "Why usage is not available" })),
    cpuSeconds: t.Nullable(t.Number({ minimum: 0, description: "Cumulative CPU time of the VM's processes; null unless it runs. Two reads give a CPU percentage" })),
    memoryBytes: bytes("Memory in use without reclaimable page cache (what `docker stats` shows), /tmp included; null unless it runs"),
    memoryLimitBytes: bytes("The VM's memory limit"),
    pids: t.Nullable(Type.Integer({ minimum: 0, description: "Processes and threads" })),
    pidsLimit: t.Nullable(Type.Integer({ minimum: 0 })),
    diskUsedBytes: bytes("Used in the home volume's filesystem"),
    diskSizeBytes: bytes("Size of the home volume's filesystem (about diskMib)"),
    at: Type.Integer({ description: "When it was read, Unix epoch milliseconds" }),
  },
  { description: "A VM's usage now, read from its cgroups and its volume at request time" },
);

export function vmStatsRoutes(stats: VmStatsService, users: Pick<UsersService, "rootsOf">) {
  return new Elysia({ prefix: "/api/vms", tags: ["vms"] })
    .get("/stats", async ({ request }) => {
      const visible = vmFilterFor(users, principalOf(request));
      return { vms: (await stats.all()).filter((vm) => visible(vm.name)) };
    }, {
      response: { 200: t.Object({ vms: t.Array(VmStats) }), ...errors(401) },
      detail: { operationId: "listVmStats", summary: "Usage of every VM the manager knows: CPU seconds, memory, pids, disk" },
    })
    .get("/:name/stats", ({ params }) => stats.of(params.name), {
      params: VmParams,
      response: { 200: VmStats, ...errors(401, 404, 422) },
      detail: { operationId: "getVmStats", summary: "One VM's usage now: CPU seconds, memory, pids and their limits, its home volume's disk" },
    });
}
