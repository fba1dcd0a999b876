// Test wiring for the gvisor driver: the local target's fixture (temp state dir, leak checks) with the
// driver built by createGvisorDriver, plus what only this tier needs — its processes and host-side reads.
import { expect } from "bun:test";
import { readFileSync, rmdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { cgroupDirs, detectCgroupLayout } from "../../runtime/local/cgroup-layout";
import { createGvisorDriver } from "../../runtime/gvisor/index";
import type { CpuStats } from "./contract-suite";
import { expectNoLeaksAndCleanUp, makeLocalFixture, type LocalFixture } from "./local-target";

export function makeGvisorFixture(): Promise<LocalFixture> {
  return makeLocalFixture(createGvisorDriver);
}

/**
 * After a real manager ran on the gvisor tier (SANDBOX_RUNTIME=gvisor, its runtime dir beside `dataDir`):
 * removes any VM and volume it left, both dirs, and the (empty) parent of its VMs' cgroups, which runsc
 * leaves behind.
 */
export async function removeGvisorManagerState(dataDir: string, rootfsDir: string, cgroupParent: string): Promise<void> {
  const gvisor = createGvisorDriver({ stateDir: join(`${dataDir}-runtime`, "gvisor"), rootfsDir, cgroupParent });
  for (const vm of await gvisor.list({})) await gvisor.remove(vm.name);
  for (const volume of (await gvisor.listVolumes?.()) ?? []) await gvisor.removeVolume?.(volume);
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(`${dataDir}-runtime`, { recursive: true, force: true });
  const layout = detectCgroupLayout();
  for (const dir of layout ? cgroupDirs(layout, `/${cgroupParent}`) : []) {
    try {
      rmdirSync(dir);
    } catch {
      // Absent in this hierarchy.
    }
  }
}

/** runsc processes (sandbox, gofer, exec) whose command line names this fixture's state dir. */
export function runscProcesses(fixture: LocalFixture): string[] {
  const ps = Bun.spawnSync(["ps", "-eo", "pid=,args="], { stdout: "pipe" }).stdout.toString();
  return ps.split("\n").filter((line) => /runsc/.test(line) && line.includes(fixture.stateDir));
}

/** The local target's leak checks, and no runsc sandbox, gofer or exec left running. */
export function expectNoGvisorLeaksAndCleanUp(fixture: LocalFixture): void {
  const processes = runscProcesses(fixture);
  expectNoLeaksAndCleanUp(fixture);
  expect(processes).toEqual([]);
}

function readNumber(path: string): number {
  return Number(readFileSync(path, "utf8").trim());
}

function readKeyed(path: string): Map<string, number> {
  return new Map(readFileSync(path, "utf8").trim().split("\n").map((line) => {
    const [key = "", value = "0"] = line.split(" ");
    return [key, Number(value)] as const;
  }));
}

/** The VM's CPU counters from its host cgroup, where runsc puts the Sentry (v1 cpu + cpuacct, or v2). */
export function hostCpuStats(fixture: LocalFixture, name: string): CpuStats {
  const layout = detectCgroupLayout();
  if (!layout) throw new Error("no cgroup filesystem");
  const path = fixture.driver.cgroupPath(name);
  if (layout.kind === "v2") {
    const stat = readKeyed(`${cgroupDirs(layout, path)[0]}/cpu.stat`);
    return { usageUs: stat.get("usage_usec") ?? 0, nrThrottled: stat.get("nr_throttled") ?? 0, throttledUs: stat.get("throttled_usec") ?? 0 };
  }
  const dirOf = (controller: string) => {
    const entry = [...layout.hierarchies.entries()].find(([key]) => key.split(",").includes(controller));
    if (!entry) throw new Error(`no ${controller} hierarchy`);
    return entry[1] + path;
  };
  const stat = readKeyed(`${dirOf("cpu")}/cpu.stat`);
  return {
    usageUs: Math.round(readNumber(`${dirOf("cpuacct")}/cpuacct.usage`) / 1000),
    nrThrottled: stat.get("nr_throttled") ?? 0,
    throttledUs: Math.round((stat.get("throttled_time") ?? 0) / 1000),
  };
}
