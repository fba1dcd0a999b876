// The event stream and metrics over the real runtime: a run that boots, evicts, toggles off, deletes and
// sweeps sees the matching events in order with their reasons, and /metrics (parsed as Prometheus text)
// counts exactly what happened.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import type { SandboxEvent } from "../../sdk/index";
import { NotSandboxedError } from "../../sdk/index";
import { eventually, makeActorFixture, type ActorFixture } from "../actors/fixture";

let f: ActorFixture;
let repo: string;
const seen: SandboxEvent[] = [];
const stop = new AbortController();
let vm: { ses_e1: string; ses_e2: string; ses_e3: string };

beforeAll(async () => {
  f = await makeActorFixture();
  repo = f.makeRepo();
  await f.client.settings.patch({ maxRunningVms: 1, execTimeoutMs: 1_000, idleStopMinutes: 30 });
  for (const id of ["ses_e1", "ses_e2", "ses_e3"]) await f.client.sessions.register({ id, directory: repo });
  const name = async (id: string) => (await f.client.sandbox.get(id)).vmName;
  vm = { ses_e1: await name("ses_e1"), ses_e2: await name("ses_e2"), ses_e3: await name("ses_e3") };
  void (async () => {
    for await (const event of f.client.events(stop.signal)) seen.push(event);
  })();
  await eventually(() => f.events.subscriberCount() > 2); // ours, besides the manager's stop recorder and logger
}, 600_000);
afterAll(async () => {
  stop.abort();
  await f?.teardown();
}, 120_000);

const vmEvents = () => seen.filter((e): e is Extract<SandboxEvent, { type: "vm" }> => e.type === "vm").map((e) => [e.vmName, e.status, e.reason]);
const waitFor = (vmName: string, status: string) => eventually(() => seen.some((e) => e.type === "vm" && e.vmName === vmName && e.status === status));

describe("events and metrics", () => {
  test("boot, evict, toggle off, delete, sweep → the matching events, in order, with reasons", async () => {
    await f.client.run("ses_e1", { command: "true", cwd: repo, callID: "call-1" });
    f.clock.advance(2_000);
    await f.client.run("ses_e2", { command: "exit 3", cwd: repo, callID: "call-2" }); // evicts e1 (cap 1)
    await f.client.sandbox.set("ses_e2", { sandboxed: false });
    await waitFor(vm.ses_e2, "removed");
    expect(await f.client.run("ses_e2", { command: "true", cwd: repo }).catch((e) => e)).toBeInstanceOf(NotSandboxedError);
    await f.client.run("ses_e1", { command: "true", cwd: repo });
    await f.client.sessions.delete("ses_e1");
    await waitFor(vm.ses_e1, "removed");
    await f.client.run("ses_e3", { command: "true", cwd: repo });
    f.clock.advance(31 * 60_000);
    expect(await f.supervisor.sweep()).toEqual([vm.ses_e3]);
    await waitFor(vm.ses_e3, "removed");

    expect(vmEvents()).toEqual([
      [vm.ses_e1, "booting", null],
      [vm.ses_e1, "running", null],
      [vm.ses_e1, "evicted", "cap"],
      [vm.ses_e2, "booting", null],
      [vm.ses_e2, "running", null],
      [vm.ses_e2, "removed", "toggle-off"],
      [vm.ses_e1, "booting", null],
      [vm.ses_e1, "running", null],
      [vm.ses_e1, "removed", "deleted"],
      [vm.ses_e3, "booting", null],
      [vm.ses_e3, "running", null],
      [vm.ses_e3, "removed", "idle"],
    ]);
    const execs = seen.filter((e) => e.type === "exec").map((e) => (e.type === "exec" ? [e.phase, e.callID, e.exitCode] : []));
    expect(execs.slice(0, 4)).toEqual([
      ["started", "call-1", null],
      ["finished", "call-1", 0],
      ["started", "call-2", null],
      ["finished", "call-2", 3],
    ]);
  });

  test("why did my sandbox stop → the session's lastStop and the VM list say", async () => {
    const e2 = await f.client.sandbox.get("ses_e2");
    expect(e2.lastStop).toMatchObject({ vmName: vm.ses_e2, status: "removed", reason: "toggle-off" });
    expect((await f.client.sandbox.get("ses_e3")).lastStop).toMatchObject({ status: "removed", reason: "idle" });
  });

  test("/metrics → valid Prometheus text whose counters match the run", async () => {
    const text = await (await f.request("GET", "/metrics")).text();
    const families = parsePrometheusTextFormat(text) as { name: string; metrics: { value?: string; labels?: Record<string, string>; count?: string }[] }[];
    const value = (name: string, labels: Record<string, string> = {}) => {
      const family = families.find((m) => m.name === name);
      const metric = family?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
      return Number(metric?.value ?? metric?.count ?? NaN);
    };
    expect(value("sandbox_vm_boots_total")).toBe(4);
    expect(value("sandbox_vm_boot_duration_seconds")).toBe(4);
    expect(value("sandbox_vm_evictions_total")).toBe(1);
    expect(value("sandbox_vm_removals_total", { reason: "toggle-off" })).toBe(1);
    expect(value("sandbox_vm_removals_total", { reason: "deleted" })).toBe(1);
    expect(value("sandbox_vm_removals_total", { reason: "idle" })).toBe(1);
    expect(value("sandbox_execs_total", { outcome: "ok" })).toBe(3);
    expect(value("sandbox_execs_total", { outcome: "nonzero" })).toBe(1);
    expect(value("sandbox_exec_duration_seconds")).toBe(4);
    expect(value("sandbox_exec_refusals_total", { reason: "not_sandboxed" })).toBe(1);
    expect(value("sandbox_running_vms")).toBe(0);
    expect(value("sandbox_max_running_vms")).toBe(1);
  });
});
