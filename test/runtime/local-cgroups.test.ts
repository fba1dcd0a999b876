// Host-side view of the local driver's cgroups: limits as specified, per-exec sub-cgroups, cleanup,
// and the cgroup v2 code path exercised on this host's real cgroup2 mount.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import type { VmSpec } from "../../runtime/driver";
import { cgroupDirs, detectCgroupLayout, type CgroupLayout } from "../../runtime/local/cgroup-layout";
import { cgroupEmpty, createSubCgroup, killCgroup, listSubCgroups, processesIn, removeCgroup } from "../../runtime/local/cgroup-tree";
import { sh } from "./exec-capture";
import { eventually } from "../actors/fixture";
import { expectNoLeaksAndCleanUp, makeLocalFixture, type LocalFixture } from "./local-target";

const layout = detectCgroupLayout();

/** The file holding `key` for a VM cgroup, in whichever hierarchy has it. */
function readCgroupFile(cgroupPath: string, file: string): string {
  const dir = cgroupDirs(layout!, cgroupPath).find((d) => existsSync(`${d}/${file}`));
  if (!dir) throw new Error(`${file} not found for ${cgroupPath}`);
  return readFileSync(`${dir}/${file}`, "utf8").trim();
}

describe("local driver cgroups", () => {
  let fixture: LocalFixture;
  const labels = { suite: `cgroups-${process.pid}` };
  const spec = (name: string): VmSpec => ({
    name,
    image: fixture.image,
    cpus: 0.5,
    memoryMib: 300,
    mounts: [],
    tmpSizeMib: 16,
    volume: { name: `${name}-data` },
    labels,
    network: { mode: "none" },
  });

  beforeAll(async () => {
    fixture = await makeLocalFixture();
  }, 600_000);

  afterAll(async () => {
    for (const vm of (await fixture?.driver.list(labels)) ?? []) await fixture.driver.remove(vm.name);
    if (fixture) expectNoLeaksAndCleanUp(fixture);
  }, 120_000);

  test(`create → VM cgroup carries the memory, cpu and pids limits (${layout?.kind} layout)`, async () => {
    const name = `cg-${process.pid}-limits`;
    await fixture.driver.create(spec(name));
    const path = fixture.driver.cgroupPath(name);
    if (layout?.kind === "v2") {
      expect(readCgroupFile(path, "memory.max")).toBe(String(300 << 20));
      expect(readCgroupFile(path, "memory.swap.max")).toBe("0");
      expect(readCgroupFile(path, "cpu.max")).toBe("50000 100000");
    } else {
      expect(readCgroupFile(path, "memory.limit_in_bytes")).toBe(String(300 << 20));
      expect(readCgroupFile(path, "memory.memsw.limit_in_bytes")).toBe(String(300 << 20));
      expect(readCgroupFile(path, "cpu.cfs_quota_us")).toBe("50000");
      expect(readCgroupFile(path, "cpu.cfs_period_us")).toBe("100000");
    }
    expect(readCgroupFile(path, "pids.max")).toBe("1024");
  });

  test("exec → its own sub-cgroup, kept while its background process lives, gone after; one empty spare for the next", async () => {
    const name = `cg-${process.pid}-subs`;
    await fixture.driver.create(spec(name));
    const path = fixture.driver.cgroupPath(name);
    // The spare holds the exec agent's handler placed for the next command: not a command's process. Nor is
    // a handler on its way out (exiting or a zombie, its cmdline reads empty) or a process gone since the
    // cgroup was read. Every command process here has a command line.
    const isCommandProcess = (pid: number) => {
      try {
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
        return cmdline !== "" && !cmdline.startsWith("/run/vm-exec-agent\0");
      } catch {
        return false;
      }
    };
    const busy = () => listSubCgroups(layout!, path).filter((sub) => processesIn(layout!, `${path}/${sub}`).some(isCommandProcess));
    const subCount = () => listSubCgroups(layout!, path).length;
    // The driver tidies sub-cgroups (and makes the next command's spare) just after a command's result, and
    // the guest's init reaps its orphans on its own time: poll (bounded by eventually's 15 s: a loaded
    // machine delays both) instead of guessing when.
    await sh(fixture.driver, name, "true");
    await eventually(() => busy().length === 0 && subCount() <= 1);
    const started = await sh(fixture.driver, name, "sleep 1000 >/dev/null 2>&1 & echo $!");
    const kept = busy();
    expect(kept).toHaveLength(1); // its sub-cgroup is kept: the background process lives on
    await sh(fixture.driver, name, `kill ${started.stdout.trim()}`);
    await eventually(() => processesIn(layout!, `${path}/${kept[0]}`).length === 0); // the sleep is gone
    // Each exec sweeps empty sub-cgroups of earlier ones. A sub-cgroup whose last process just exited outlasted
    // one sweep once in CI (cause not pinned down; a v1 rmdir refused while the kernel finishes the exit is
    // the likely one). The next exec's sweep removes it, so each poll runs one; the bound is unchanged.
    await eventually(async () => (await sh(fixture.driver, name, "true"), subCount() <= 1));
    expect(busy()).toEqual([]);
  });

  test("VM whose init exits on its own → inspect says stopped, exec refused, start brings it back", async () => {
    const name = `cg-${process.pid}-died`;
    await fixture.driver.create(spec(name));
    await sh(fixture.driver, name, "kill -TERM 1"); // tini forwards it to its child and exits: a guest "poweroff"
    // tini notices its child's exit on its next 1 s sigtimedwait tick; poll the driver's own view
    // (bounded by eventually's 15 s, which a loaded CI machine needs) rather than sleeping a fixed time.
    await eventually(async () => (await fixture.driver.inspect(name))?.status !== "running").catch(() => undefined);
    expect((await fixture.driver.inspect(name))?.status).toBe("stopped");
    expect(await sh(fixture.driver, name, "true").catch((e: unknown) => e)).toBeInstanceOf(Error);
    await fixture.driver.start(name);
    expect((await sh(fixture.driver, name, "echo back")).stdout).toBe("back\n");
  });

  test("a VM cgroup without a VM record (a crun that outlived a crashed create's sweep) → the next clean-up kills it and removes it; another state dir's stays", async () => {
    const name = `cg-${process.pid}-stray`;
    await fixture.driver.create(spec(name));
    const init = Number(readFileSync(`${fixture.stateDir}/vms/${name}/pid`, "utf8"));
    // What the late crun leaves: the VM's processes in its cgroup, and no directory or record of the VM.
    rmSync(`${fixture.stateDir}/vms/${name}`, { recursive: true, force: true });
    const otherStateDirs = cgroupDirs(layout!, `/${fixture.cgroupParent}/0123abcd.${name}`);
    for (const dir of otherStateDirs) mkdirSync(dir, { recursive: true });
    try {
      expect(await fixture.driver.cleanUpIncomplete!()).toContain(`cgroup of vm ${name}`);
      expect(cgroupDirs(layout!, fixture.driver.cgroupPath(name)).filter((dir) => existsSync(dir))).toEqual([]);
      await eventually(() => !existsSync(`/proc/${init}`)); // killed, and reaped by whoever adopted it
      expect(otherStateDirs.every((dir) => existsSync(dir))).toBe(true);
    } finally {
      for (const dir of otherStateDirs) rmdirSync(dir);
      await fixture.driver.removeVolume!(`${name}-data`); // kept by the clean-up: it may hold data
    }
  });

  test("stop and remove → the VM's cgroups are gone from every hierarchy", async () => {
    const name = `cg-${process.pid}-stop`;
    await fixture.driver.create(spec(name));
    await sh(fixture.driver, name, "sleep 1000 >/dev/null 2>&1 &");
    const dirs = cgroupDirs(layout!, fixture.driver.cgroupPath(name));
    expect(dirs.some((d) => existsSync(d))).toBe(true);
    await fixture.driver.stop(name);
    expect(dirs.filter((d) => existsSync(d))).toEqual([]);
    await fixture.driver.start(name);
    await fixture.driver.remove(name);
    expect(dirs.filter((d) => existsSync(d))).toEqual([]);
  });
});

// The v2 branch of cgroup-tree (cgroup.kill, cgroup.events) cannot drive a VM on a hybrid host, but it
// can run against the host's real cgroup2 mount with host processes; that is what this suite does.
const unifiedRoot = layout?.kind === "v2" ? layout.unifiedRoot : layout?.unifiedRoot;
describe.skipIf(!unifiedRoot)("cgroup v2 tree on this host's cgroup2 mount", () => {
  const v2: CgroupLayout = { kind: "v2", unifiedRoot: unifiedRoot ?? "/" };
  const vmPath = `/ss-test-v2-${process.pid}`;

  afterAll(async () => {
    await killCgroup(v2, vmPath);
    for (const sub of listSubCgroups(v2, vmPath)) removeCgroup(v2, `${vmPath}/${sub}`);
    removeCgroup(v2, vmPath);
  });

  test("kill a sub-cgroup → its whole tree dies (setsid and orphans too), sibling survives, rmdir works", async () => {
    mkdirSync(`${unifiedRoot}${vmPath}`);
    createSubCgroup(v2, vmPath, "exec-a");
    createSubCgroup(v2, vmPath, "exec-b");
    // Each shell waits for a line on stdin, so it forks only after it has been moved into its cgroup.
    const spawnIn = (sub: string, script: string) => {
      const proc = Bun.spawn(["sh", "-c", `read -r _; ${script}`], { stdin: "pipe", stdout: "pipe", stderr: "inherit" });
      writeFileSync(`${unifiedRoot}${vmPath}/${sub}/cgroup.procs`, String(proc.pid));
      proc.stdin.write("go\n");
      proc.stdin.flush();
      return proc;
    };
    const victim = spawnIn("exec-a", "sleep 1000 & setsid sleep 1001 & (sleep 1002 &); echo ready; wait");
    const survivor = spawnIn("exec-b", "echo ready; exec sleep 1003");
    const reader = victim.stdout.getReader();
    await reader.read(); // "ready": the children exist
    await survivor.stdout.getReader().read();
    expect(cgroupEmpty(v2, `${vmPath}/exec-a`)).toBe(false);
    expect(await killCgroup(v2, `${vmPath}/exec-a`)).toBe(true);
    expect(cgroupEmpty(v2, `${vmPath}/exec-a`)).toBe(true);
    expect(await victim.exited).toBe(137);
    expect(cgroupEmpty(v2, `${vmPath}/exec-b`)).toBe(false);
    expect(removeCgroup(v2, `${vmPath}/exec-a`)).toBe(true);
    expect(listSubCgroups(v2, vmPath)).toEqual(["exec-b"]);
    expect(await killCgroup(v2, vmPath)).toBe(true);
    expect(await survivor.exited).toBe(137);
    expect(removeCgroup(v2, `${vmPath}/exec-b`)).toBe(true);
    rmdirSync(`${unifiedRoot}${vmPath}`);
  });
});
