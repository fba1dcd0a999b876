// The local driver's stats(): CPU, memory and pids from a real VM's cgroups on this host's layout, disk
// from its volume's ext4 image, and the v2 CPU reader on this host's real cgroup2 mount.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, rmdirSync, writeFileSync } from "node:fs";
import type { VmSpec } from "../../runtime/driver";
import { detectCgroupLayout } from "../../runtime/local/cgroup-layout";
import { readCgroupStats } from "../../runtime/local/vm-stats";
import { sh } from "./exec-capture";
import { expectNoLeaksAndCleanUp, makeLocalFixture, type LocalFixture } from "./local-target";

const MIB = 1 << 20;
const layout = detectCgroupLayout();

describe(`local driver stats (${layout?.kind} layout)`, () => {
  let fixture: LocalFixture;
  const labels = { suite: `stats-${process.pid}` };
  const name = `st-${process.pid}`;
  const spec = (): VmSpec => ({
    name,
    image: fixture.image,
    cpus: 1,
    memoryMib: 256,
    mounts: [],
    tmpSizeMib: 64,
    volume: { name: `${name}-data` },
    diskMib: 128,
    labels,
    network: { mode: "none" },
  });

  beforeAll(async () => {
    fixture = await makeLocalFixture();
    await fixture.driver.create(spec());
  }, 600_000);

  afterAll(async () => {
    for (const vm of (await fixture?.driver.list(labels)) ?? []) await fixture.driver.remove(vm.name);
    if (fixture) expectNoLeaksAndCleanUp(fixture);
  }, 120_000);

  test("running VM → its limits, a live pid count and its volume's size", async () => {
    const stats = await fixture.driver.stats!(name);
    expect(stats).toMatchObject({ name, status: "running" });
    expect(stats!.usage!.memoryLimitBytes).toBe(256 * MIB);
    expect(stats!.usage!.pidsLimit).toBe(1024);
    expect(stats!.usage!.pids).toBeGreaterThanOrEqual(1); // tini, at least
    // ext4 keeps some of the image for its metadata and journal
    expect(stats!.disk!.sizeBytes).toBeGreaterThan(100 * MIB);
    expect(stats!.disk!.sizeBytes).toBeLessThanOrEqual(128 * MIB);
  });

  test("busy loop, 40 MiB in memory, 30 MiB on disk, 5 sleepers → each counter moves by about that much", async () => {
    const before = (await fixture.driver.stats!(name))!;
    const script = [
      // Work until the shell itself has used 0.8 s of CPU (utime + stime, in 1/100 s): on a loaded host a
      // second of wall time holds less CPU, and the counter must move by what was used, not by the clock.
      "while :; do set -- $(cat /proc/$$/stat); [ $((${14} + ${15})) -ge 80 ] && break; i=0; while [ $i -lt 5000 ]; do i=$((i+1)); done; done",
      "head -c 40m /dev/zero > /tmp/fill", // tmpfs: counted as the VM's memory
      "head -c 30m /dev/urandom > /home/agent/blob && sync",
      "for n in 1 2 3 4 5; do sleep 1000 >/dev/null 2>&1 & done; echo started",
    ].join("; ");
    expect((await sh(fixture.driver, name, script)).stdout).toContain("started");
    const after = (await fixture.driver.stats!(name))!;
    expect(after.usage!.cpuSeconds - before.usage!.cpuSeconds).toBeGreaterThan(0.5);
    expect(after.usage!.memoryBytes - before.usage!.memoryBytes).toBeGreaterThan(35 * MIB);
    expect(after.usage!.pids - before.usage!.pids).toBeGreaterThanOrEqual(5);
    expect(after.disk!.usedBytes - before.disk!.usedBytes).toBeGreaterThan(28 * MIB);
    await sh(fixture.driver, name, "rm -f /tmp/fill /home/agent/blob; pkill sleep; true");
  });

  test("stopped VM → no usage, its volume still measured; unknown VM → undefined", async () => {
    await fixture.driver.stop(name);
    const stats = await fixture.driver.stats!(name);
    expect(stats).toMatchObject({ name, status: "stopped", usage: null });
    expect(stats!.disk!.sizeBytes).toBeGreaterThan(100 * MIB);
    expect(await fixture.driver.stats!("no-such-vm")).toBeUndefined();
    expect(await fixture.driver.stats!("../etc")).toBeUndefined();
  });
});

// A hybrid host's VMs live in v1 hierarchies, so the v2 reader runs against the real cgroup2 mount with a
// host process. Without controllers there (this host enables none on it) only cpu.stat exists: memory and
// pids read as 0 and the limits as none, which is what this checks for them.
const unifiedRoot = layout?.kind === "v2" ? layout.unifiedRoot : layout?.unifiedRoot;
describe.skipIf(!unifiedRoot)("v2 stats on this host's cgroup2 mount", () => {
  const path = `/ss-test-stats-${process.pid}`;
  afterAll(() => rmdirSync(`${unifiedRoot}${path}`));

  test("busy process in a v2 cgroup → its CPU seconds grow; no cgroup → undefined", async () => {
    const v2 = { kind: "v2" as const, unifiedRoot: unifiedRoot! };
    expect(readCgroupStats(v2, path)).toBeUndefined();
    mkdirSync(`${unifiedRoot}${path}`);
    // A fixed amount of work, not of wall time: on a loaded machine the same second holds less CPU.
    const proc = Bun.spawn(["sh", "-c", "read -r _; i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"], { stdin: "pipe" });
    writeFileSync(`${unifiedRoot}${path}/cgroup.procs`, String(proc.pid));
    proc.stdin.write("go\n");
    proc.stdin.flush();
    await proc.exited;
    const stats = readCgroupStats(v2, path)!;
    // The cgroup counted what the process itself says it used (its rusage), all of it.
    const cpu = proc.resourceUsage()!.cpuTime;
    const ownSeconds = Number(cpu.user + cpu.system) / 1e6;
    expect(ownSeconds).toBeGreaterThan(0.05);
    expect(stats.cpuSeconds).toBeGreaterThanOrEqual(ownSeconds * 0.9);
    expect(stats.pids).toBe(0);
  });
});
