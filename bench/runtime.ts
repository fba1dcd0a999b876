// Runtime benchmark (not a test): cold create-to-first-exec and exec `true` into a running local VM — through
// its exec agent and through `crun exec` (the agent switched off) — next to host `sh -c true` measured in the
// same run, plus 20 VMs created at once per path (wall time, memory per idle VM: the agent's cost).
import { existsSync, mkdtempSync, readFileSync, rmdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExecSink, VmSpec } from "../runtime/driver";
import { cgroupDirs, detectCgroupLayout } from "../runtime/local/cgroup-layout";
import { createLocalDriver, ensureRootfs } from "../runtime/local/index";

const RUNS = Number(process.env.BENCH_RUNS ?? 30);
const COLD_RUNS = Number(process.env.BENCH_COLD_RUNS ?? 15);
const CONCURRENT_VMS = Number(process.env.BENCH_CONCURRENT_VMS ?? 20);

const quiet: ExecSink = { stdout() {}, stderr() {} };

function stats(samplesMs: number[]): { median: number; p95: number } {
  const sorted = [...samplesMs].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN;
  return { median: at(0.5), p95: at(0.95) };
}

async function time(runs: number, fn: () => Promise<unknown>): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await fn();
    samples.push(performance.now() - start);
  }
  return samples;
}

function memAvailableKib(): number {
  return Number(/MemAvailable:\s+(\d+)/.exec(readFileSync("/proc/meminfo", "utf8"))?.[1]);
}

/** memory charged to a VM's cgroup (v1 usage_in_bytes or v2 memory.current), bytes. */
function memcgBytes(cgroupPath: string): number {
  const layout = detectCgroupLayout();
  if (!layout) return NaN;
  for (const dir of cgroupDirs(layout, cgroupPath)) {
    for (const file of ["memory.current", "memory.usage_in_bytes"]) {
      if (existsSync(join(dir, file))) return Number(readFileSync(join(dir, file), "utf8"));
    }
  }
  return NaN;
}

const image = await ensureRootfs();
const stateDir = mkdtempSync(join(tmpdir(), "ss-bench-runtime-"));
const driver = createLocalDriver({ stateDir, rootfsDir: image, cgroupParent: "session-sandbox-bench" });
const crunStateDir = mkdtempSync(join(tmpdir(), "ss-bench-runtime-crun-"));
const crunDriver = createLocalDriver({ stateDir: crunStateDir, rootfsDir: image, cgroupParent: "session-sandbox-bench", execAgent: false });
let n = 0;
const spec = (): VmSpec => {
  const name = `bench-${process.pid}-${++n}`;
  return { name, image, cpus: 1, memoryMib: 512, mounts: [], tmpSizeMib: 64, volume: { name: `${name}-data` }, labels: { bench: "runtime" }, network: { mode: "none" } };
};

try {
  // Warm up page cache and binaries so the first samples are not outliers.
  for (let i = 0; i < 3; i++) await Bun.spawn(["sh", "-c", "true"]).exited;
  const warm = spec();
  await driver.create(warm);
  await time(5, () => driver.exec(warm.name, { argv: ["true"], cwd: "/" }, quiet));
  const warmCrun = spec();
  await crunDriver.create(warmCrun);
  await time(5, () => crunDriver.exec(warmCrun.name, { argv: ["true"], cwd: "/" }, quiet));

  // Interleave host and VM exec samples so all see the same machine load.
  const host: number[] = [];
  const vmExec: number[] = [];
  const crunExec: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    host.push(...(await time(1, () => Bun.spawn(["sh", "-c", "true"]).exited)));
    vmExec.push(...(await time(1, () => driver.exec(warm.name, { argv: ["true"], cwd: "/" }, quiet))));
    crunExec.push(...(await time(1, () => crunDriver.exec(warmCrun.name, { argv: ["true"], cwd: "/" }, quiet))));
  }

  const cold: number[] = [];
  for (let i = 0; i < COLD_RUNS; i++) {
    const s = spec();
    const start = performance.now();
    await driver.create(s);
    await driver.exec(s.name, { argv: ["true"], cwd: "/" }, quiet);
    cold.push(performance.now() - start);
    await driver.remove(s.name);
  }

  /** CONCURRENT_VMS VMs created at once, one command each, left idle for a moment, measured, removed. */
  const concurrentVms = async (on: typeof driver) => {
    const before = memAvailableKib();
    const many = Array.from({ length: CONCURRENT_VMS }, spec);
    const start = performance.now();
    await Promise.all(many.map((s) => on.create(s)));
    const concurrentMs = performance.now() - start;
    // One command each, as a session's VM has had: with the agent, that leaves a handler placed for the next.
    await Promise.all(many.map((s) => on.exec(s.name, { argv: ["true"], cwd: "/" }, quiet)));
    await Bun.sleep(500);
    const perVmAvailKib = (before - memAvailableKib()) / CONCURRENT_VMS;
    const perVmMemcgKib = many.reduce((sum, s) => sum + memcgBytes(on.cgroupPath(s.name)), 0) / CONCURRENT_VMS / 1024;
    const teardownStart = performance.now();
    await Promise.all(many.map((s) => on.remove(s.name)));
    return { concurrentMs, perVmAvailKib, perVmMemcgKib, teardownMs: performance.now() - teardownStart };
  };
  const withAgent = await concurrentVms(driver);
  const withoutAgent = await concurrentVms(crunDriver);

  const h = stats(host);
  const rows: [string, { median: number; p95: number }][] = [
    ["host sh -c true (Bun.spawn)", h],
    ["exec true, exec agent", stats(vmExec)],
    ["exec true, crun exec", stats(crunExec)],
    ["cold create → first exec", stats(cold)],
  ];
  const capability = await driver.probe();
  console.log(`\nruntime: ${capability.version}; ${RUNS} exec runs, ${COLD_RUNS} cold runs; ratios are medians vs host sh -c true\n`);
  console.log(`${"measurement".padEnd(32)} ${"median ms".padStart(10)} ${"p95 ms".padStart(10)} ${"ratio".padStart(8)}`);
  for (const [name, s] of rows) {
    console.log(`${name.padEnd(32)} ${s.median.toFixed(2).padStart(10)} ${s.p95.toFixed(2).padStart(10)} ${(s.median / h.median).toFixed(1).padStart(7)}x`);
  }
  console.log(`exec agent ÷ crun exec: ${(stats(vmExec).median / stats(crunExec).median).toFixed(2)}x median`);
  for (const [label, m] of [["with the exec agent", withAgent], ["crun exec only", withoutAgent]] as const) {
    console.log(`\n${label}: ${CONCURRENT_VMS} VMs created concurrently: ${m.concurrentMs.toFixed(0)} ms wall (${(m.concurrentMs / CONCURRENT_VMS).toFixed(1)} ms/VM amortised); teardown ${m.teardownMs.toFixed(0)} ms`);
    console.log(`  memory per idle VM: ${m.perVmMemcgKib.toFixed(0)} KiB charged to its memcg; ${m.perVmAvailKib.toFixed(0)} KiB of host MemAvailable (incl. kernel objects, noisy)`);
  }
  console.log(`memory per idle VM, agent ÷ without: ${(withAgent.perVmMemcgKib / withoutAgent.perVmMemcgKib).toFixed(2)}x (budget: 1 MiB per idle VM)`);
} finally {
  for (const on of [driver, crunDriver]) for (const vm of await on.list({ bench: "runtime" })) await on.remove(vm.name);
  rmSync(stateDir, { recursive: true, force: true });
  rmSync(crunStateDir, { recursive: true, force: true });
  const layout = detectCgroupLayout();
  for (const dir of layout ? cgroupDirs(layout, "/session-sandbox-bench") : []) {
    try {
      rmdirSync(dir);
    } catch {
      // Already gone.
    }
  }
}
