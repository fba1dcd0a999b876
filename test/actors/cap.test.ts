// The global cap over the real runtime: LRU eviction of an idle VM, and a refusal naming the limit when
// no VM qualifies. Time is a manual clock, so "idle for the exec timeout" needs no sleeping.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { VmCapReachedError } from "../../sdk/index";
import { eventually, makeActorFixture, type ActorFixture } from "./fixture";

let f: ActorFixture;
const repos: Record<string, string> = {};
beforeAll(async () => {
  f = await makeActorFixture();
  await f.client.settings.patch({ maxRunningVms: 2, execTimeoutMs: 1_000 });
  for (const id of ["ses_1", "ses_2", "ses_3"]) {
    repos[id] = f.makeRepo(id);
    await f.client.sessions.register({ id, directory: repos[id]! });
  }
}, 600_000);
afterAll(async () => f?.teardown(), 120_000);

const run = (id: string, command = "true") => f.client.run(id, { command, cwd: repos[id]! });
const vmOf = async (id: string) => (await f.client.sandbox.get(id)).vmName;
const runningInRuntime = async () => (await f.driver.list({})).filter((vm) => vm.status === "running").length;

describe("global cap", () => {
  test("cap 2, a third session → the least recently used idle VM is stopped for it", async () => {
    await run("ses_1");
    f.clock.advance(500);
    await run("ses_2");
    f.clock.advance(2_000); // both idle past the exec timeout; ses_1 used longer ago
    await run("ses_3");
    const vms = Object.fromEntries((await f.client.vms.list()).vms.map((vm) => [vm.name, vm]));
    expect(vms[await vmOf("ses_1")]).toMatchObject({ status: "stopped", lastStopReason: "cap" });
    expect(vms[await vmOf("ses_2")]?.status).toBe("running");
    expect(vms[await vmOf("ses_3")]?.status).toBe("running");
    expect(await runningInRuntime()).toBe(2);
  });

  test("no VM idle for the exec timeout → refused with a reason naming the limit and the holders", async () => {
    await run("ses_2");
    await run("ses_3");
    const error = await run("ses_1").catch((e) => e);
    expect(error).toBeInstanceOf(VmCapReachedError);
    expect(error.status).toBe(429);
    expect(error.message).toContain("limit of 2 running VMs (maxRunningVms)");
    expect(error.message).toContain(await vmOf("ses_2"));
    expect(error.message).toContain(await vmOf("ses_3"));
    // The files API waits for a place like any command, and is refused the same way.
    for (const files of [f.client.files.read("ses_1", "/etc/hostname"), f.client.files.write("ses_1", "/tmp/x", "x")]) {
      expect(await files.catch((e: unknown) => e)).toBeInstanceOf(VmCapReachedError);
    }
    expect(await runningInRuntime()).toBe(2);
  });

  test("busy VMs are never evicted, however long ago they started", async () => {
    const long2 = f.client.run("ses_2", { command: "sleep 2", cwd: repos.ses_2!, timeoutMs: 30_000 });
    const long3 = f.client.run("ses_3", { command: "sleep 2", cwd: repos.ses_3!, timeoutMs: 30_000 });
    // Both commands admitted (counted as running by the supervisor) before the clock moves.
    const busy = async () => (await f.client.vms.list()).vms.filter((vm) => vm.runningExecs > 0).map((vm) => vm.name).sort();
    const expected = [await vmOf("ses_2"), await vmOf("ses_3")].sort();
    await eventually(async () => (await busy()).join() === expected.join());
    f.clock.advance(60_000);
    expect(await run("ses_1").catch((e) => e)).toBeInstanceOf(VmCapReachedError);
    expect((await long2).exitCode).toBe(0);
    expect((await long3).exitCode).toBe(0);
  });

  test("a lowered cap → idle VMs over it are stopped", async () => {
    await f.client.settings.patch({ maxRunningVms: 1 });
    await eventually(async () => (await runningInRuntime()) === 1);
  });
});
