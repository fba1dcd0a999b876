// The idle sweep and retirement over the real runtime: VMs unused for max(idleStopMinutes,
// execTimeoutMs) go with their volumes; leftovers adopted at startup count from manager boot; actors
// with no VM are retired; disabling sandboxing removes every VM.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { recoverVms } from "../../app/supervisor/recovery";
import { eventually, makeActorFixture, type ActorFixture } from "./fixture";

let f: ActorFixture;
let repo: string;
beforeAll(async () => {
  f = await makeActorFixture();
  await f.client.settings.patch({ idleStopMinutes: 1, execTimeoutMs: 1_000 });
  repo = f.makeRepo();
  for (const id of ["ses_s1", "ses_s2"]) await f.client.sessions.register({ id, directory: repo });
}, 600_000);
afterAll(async () => f?.teardown(), 120_000);

describe("idle sweep", () => {
  test("a VM unused for idleStopMinutes → removed with its volume; a recently used one stays", async () => {
    await f.client.run("ses_s1", { command: "echo x > ~/f", cwd: repo });
    f.clock.advance(45_000);
    await f.client.run("ses_s2", { command: "true", cwd: repo });
    f.clock.advance(20_000); // s1 idle 65 s, s2 idle 20 s
    const removed = await f.supervisor.sweep();
    const s1 = (await f.client.sandbox.get("ses_s1")).vmName;
    expect(removed).toEqual([s1]);
    expect(await f.driver.inspect(s1)).toBeUndefined();
    expect((await f.client.vms.list()).vms.map((vm) => vm.name)).toEqual([(await f.client.sandbox.get("ses_s2")).vmName]);
  });

  test("the threshold is max(idleStopMinutes, execTimeoutMs)", async () => {
    await f.client.settings.patch({ execTimeoutMs: 120_000 });
    f.clock.advance(61_000); // s2 idle 81 s: past 1 minute, not past 2
    expect(await f.supervisor.sweep()).toEqual([]);
    f.clock.advance(40_000);
    expect(await f.supervisor.sweep()).toEqual([(await f.client.sandbox.get("ses_s2")).vmName]);
    await f.client.settings.patch({ execTimeoutMs: 1_000 });
  });

  test("an actor with no VM and no work → retired", async () => {
    await eventually(() => f.supervisor.liveActors() === 0);
    await f.client.run("ses_s1", { command: "true", cwd: repo });
    expect(f.supervisor.liveActors()).toBe(1);
    await f.supervisor.sweep(0);
    await eventually(() => f.supervisor.liveActors() === 0);
  });

  test("leftovers found at startup → adopted, counted idle from manager boot, then swept", async () => {
    await f.client.run("ses_s1", { command: "true", cwd: repo });
    const vmName = (await f.client.sandbox.get("ses_s1")).vmName;
    // A second manager over the same database and runtime state: as after a restart.
    const { makeTestApp } = await import("../helpers");
    const restarted = makeTestApp({ dataDir: f.dataDir, now: () => f.clock.now, runtime: { stateDir: f.stateDir, cgroupParent: f.cgroupParent, image: f.image } });
    try {
      await recoverVms(f.driver, restarted);
      expect((await restarted.client.vms.list()).vms.map((vm) => [vm.name, vm.status, vm.lastUsedAt])).toEqual([[vmName, "running", f.clock.now]]);
      f.clock.advance(59_000);
      expect(await restarted.supervisor.sweep()).toEqual([]);
      f.clock.advance(2_000);
      expect(await restarted.supervisor.sweep()).toEqual([vmName]);
      expect(await f.driver.inspect(vmName)).toBeUndefined();
    } finally {
      restarted.supervisor.close();
    }
  });

  test("startup recovery → VMs of deleted or toggled-off sessions are removed, live ones adopted", async () => {
    for (const id of ["ses_r_keep", "ses_r_del", "ses_r_off"]) {
      await f.client.sessions.register({ id, directory: repo });
      await f.client.run(id, { command: "true", cwd: repo });
    }
    const names = Object.fromEntries(await Promise.all(["ses_r_keep", "ses_r_del", "ses_r_off"].map(async (id) => [id, (await f.client.sandbox.get(id)).vmName])));
    // Change the database behind the running VMs' back, as a crash between the write and the removal would.
    f.db.run("DELETE FROM sessions WHERE id = 'ses_r_del'");
    f.db.run("UPDATE sessions SET sandboxed = 0 WHERE id = 'ses_r_off'");
    const { makeTestApp } = await import("../helpers");
    const restarted = makeTestApp({ dataDir: f.dataDir, now: () => f.clock.now, runtime: { stateDir: f.stateDir, cgroupParent: f.cgroupParent, image: f.image } });
    try {
      await recoverVms(f.driver, restarted);
      expect((await f.driver.list({})).map((vm) => vm.name).sort()).toEqual([names.ses_r_keep].sort());
      expect((await restarted.client.vms.list()).vms.map((vm) => vm.name)).toEqual([names.ses_r_keep]);
    } finally {
      restarted.supervisor.close();
    }
  });

  test("sandboxing disabled server-wide → every VM removed", async () => {
    await f.client.run("ses_s1", { command: "true", cwd: repo });
    await f.client.settings.patch({ enabled: false });
    await eventually(async () => (await f.driver.list({})).length === 0);
    await f.client.settings.patch({ enabled: true });
  });
});
