// Recovery on the gvisor tier: a manager that restarts after a crash (a new driver over the same state)
// finds its running gVisor VMs and drives them; startup clean-up removes what a crash half-made — a VM
// directory without its record (its Sentry and gofer included) and prepared mounts of a VM that is gone;
// runsc's delete still kills a sandbox that runs (its shortcut is only for one whose processes exited).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { VmSpec } from "../../runtime/driver";
import { hostMountsDir } from "../../runtime/gvisor/gvisor-config";
import { attachHostMounts } from "../../runtime/gvisor/host-mounts";
import { createGvisorDriver } from "../../runtime/gvisor/index";
import { Runsc, runscId } from "../../runtime/gvisor/runsc";
import { processExited } from "../../runtime/proc-stat";
import { detectCgroupLayout } from "../../runtime/local/cgroup-layout";
import { sh } from "./exec-capture";
import { expectNoGvisorLeaksAndCleanUp, makeGvisorFixture, runscProcesses } from "./gvisor-target";
import type { LocalFixture } from "./local-target";

describe("gvisor recovery", () => {
  let fixture: LocalFixture;
  let source: string;
  const labels = { suite: `gvisor-recovery-${process.pid}` };
  const spec = (name: string): VmSpec => ({
    name, image: fixture.image, cpus: 1, memoryMib: 256, mounts: [], tmpSizeMib: 16, volume: { name: `${name}-data` }, labels, network: { mode: "none" },
  });
  /** What a restarted manager builds: a fresh driver over the same state dir and cgroup parent. */
  const restarted = () => createGvisorDriver({ stateDir: fixture.stateDir, rootfsDir: fixture.image, cgroupParent: fixture.cgroupParent });

  beforeAll(async () => {
    fixture = await makeGvisorFixture();
    source = mkdtempSync(join(tmpdir(), "ss-recovery-src-"));
  }, 600_000);

  afterAll(async () => {
    const driver = restarted();
    for (const vm of await driver.list(labels)) await driver.remove(vm.name);
    for (const volume of (await driver.listVolumes?.()) ?? []) await driver.removeVolume?.(volume);
    rmSync(source, { recursive: true, force: true });
    if (fixture) expectNoGvisorLeaksAndCleanUp(fixture);
  }, 120_000);

  test("restart → the running VM is listed, runs commands and survives clean-up", async () => {
    const name = `rec-${process.pid}-a`;
    await fixture.driver.create(spec(name));
    await sh(fixture.driver, name, "echo before > /tmp/t");
    const driver = restarted();
    expect((await driver.inspect(name))?.status).toBe("running");
    expect(await driver.cleanUpIncomplete!()).toEqual([]);
    expect((await sh(driver, name, "cat /tmp/t")).stdout).toBe("before\n");
  });

  test("a VM directory without its record → its Sentry and gofer killed, everything but the volume removed", async () => {
    const name = `rec-${process.pid}-b`;
    await fixture.driver.create(spec(name));
    unlinkSync(join(fixture.stateDir, "vms", name, "vm.json")); // a crash before create wrote the record
    const driver = restarted();
    expect(await driver.cleanUpIncomplete!()).toContain(`vm ${name}`);
    expect(existsSync(join(fixture.stateDir, "vms", name))).toBe(false);
    expect(existsSync(hostMountsDir(fixture.stateDir, name))).toBe(false);
    expect(runscProcesses(fixture).filter((line) => line.includes(`/vms/${name}/`))).toEqual([]);
    await driver.removeVolume!(`${name}-data`);
  });

  test("runsc's delete of a sandbox whose processes still run → they are killed (the shortcut that only removes runsc's files is for exited ones)", async () => {
    const name = `rec-${process.pid}-c`;
    await fixture.driver.create(spec(name));
    const runscRoot = join(fixture.stateDir, "runsc");
    const state = JSON.parse(readFileSync(join(runscRoot, `${runscId(name)}_sandbox:${runscId(name)}.state`), "utf8")) as { goferPid: number; sandbox: { pid: number } };
    const runsc = new Runsc({ runscPath: Bun.which("runsc") ?? "runsc", runscRoot, stateDir: fixture.stateDir, layout: detectCgroupLayout(), binaries: () => { throw new Error("not booting"); } });
    await runsc.delete(name);
    expect([state.sandbox.pid, state.goferPid].filter((pid) => !processExited(pid))).toEqual([]);
    expect(readdirSync(runscRoot).filter((file) => file.includes(runscId(name)))).toEqual([]);
    await fixture.driver.remove(name);
  });

  test("prepared mounts of a VM that is gone → detached and removed", async () => {
    const dir = hostMountsDir(fixture.stateDir, `rec-${process.pid}-ghost`);
    await attachHostMounts(dir, [{ source, target: join(dir, "mount-0"), kind: "dir", readOnly: true, recursive: false }]);
    expect(await restarted().cleanUpIncomplete!()).toContain(`gvisor host mounts of rec-${process.pid}-ghost`);
    expect(existsSync(dir)).toBe(false);
    expect(existsSync(source)).toBe(true);
  });
});
