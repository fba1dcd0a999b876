// Isolation tiers benchmark (not a test): the same workloads on the host, in a local (crun) VM and in a
// gvisor (runsc) VM, in one run, each as a ratio to the host. exec `true` into a running VM; cold create
// (create → the first command's output); two system-call-heavy workloads: `find /usr -type f | wc -l` over
// the guest image and `git status` in a repository of 10,000 files; and an idle VM's memory. Medians (and
// p95) over BENCH_RUNS; samples interleaved across tiers so all see the same machine load. msb (microVM)
// cannot run here (no usable KVM), so it has no column.
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExecSink, RuntimeDriver, VmSpec } from "../runtime/driver";
import { createGvisorDriver } from "../runtime/gvisor/index";
import { cgroupDirs, detectCgroupLayout } from "../runtime/local/cgroup-layout";
import { createLocalDriver } from "../runtime/local/index";
import { prepareLocalRuntime } from "../test/runtime/local-target";
import { stats, timed, type Stats } from "./exec-support";

const RUNS = Number(process.env.BENCH_RUNS ?? 20);
const COLD_RUNS = Number(process.env.BENCH_COLD_RUNS ?? 8);
const WORK_RUNS = Number(process.env.BENCH_WORK_RUNS ?? 5);
const REPO_FILES = Number(process.env.BENCH_REPO_FILES ?? 10_000);

const quiet: ExecSink = { stdout() {}, stderr() {} };
const cgroupParent = `ss-bench-tiers-${process.pid}`;
const tmp = mkdtempSync(join(tmpdir(), "ss-bench-tiers-"));
// The VMs' unprivileged uids must traverse it to reach their state and the repository (see bench/exec.ts).
chmodSync(tmp, 0o711);
const image = await prepareLocalRuntime();
const tiers: [string, RuntimeDriver][] = [
  ["local (crun)", createLocalDriver({ stateDir: join(tmp, "local"), rootfsDir: image, cgroupParent })],
  ["gvisor (runsc)", createGvisorDriver({ stateDir: join(tmp, "gvisor"), rootfsDir: image, cgroupParent })],
];

/** A git repository of REPO_FILES small files in 100 directories, committed, so `git status` walks it all. */
function makeRepo(dir: string): void {
  mkdirSync(dir, { recursive: true });
  for (let d = 0; d < 100; d++) {
    mkdirSync(join(dir, `d${d}`));
    for (let f = 0; f < REPO_FILES / 100; f++) writeFileSync(join(dir, `d${d}`, `f${f}.txt`), `${d}/${f}\n`);
  }
  const git = (...args: string[]) => execFileSync("git", ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid", ...args], { cwd: dir, stdio: "ignore" });
  git("init", "-q");
  git("add", "-A");
  git("commit", "-q", "-m", "files");
}

async function sh(command: string, cwd = "/"): Promise<number> {
  return Bun.spawn(["sh", "-c", command], { cwd, stdout: "ignore", stderr: "ignore" }).exited;
}

const repo = join(tmp, "repo");
let n = 0;
const spec = (): VmSpec => {
  const name = `bt-${process.pid}-${++n}`;
  return { name, image, cpus: 2, memoryMib: 1024, mounts: [{ hostPath: repo }], tmpSizeMib: 64, volume: { name: `${name}-data` }, labels: { bench: "tiers" }, network: { mode: "none" } };
};

/** One measurement: how the host does it, and how a VM does it. */
type Workload = { name: string; runs: number; host: () => Promise<unknown>; vm: (driver: RuntimeDriver, vm: string) => Promise<unknown> };

const inVm = (command: string, cwd = "/") => async (driver: RuntimeDriver, vm: string) => {
  const result = await driver.exec(vm, { argv: ["sh", "-c", command], cwd }, quiet);
  if (result.exitCode !== 0) throw new Error(`${command} exited ${result.exitCode} in ${vm}`);
};

const workloads: Workload[] = [
  { name: "exec true", runs: RUNS, host: () => Bun.spawn(["true"]).exited, vm: (driver, vm) => driver.exec(vm, { argv: ["true"], cwd: "/" }, quiet) },
  { name: "find /usr -type f | wc -l", runs: WORK_RUNS, host: () => sh(`find ${image}/usr -type f | wc -l`), vm: inVm("find /usr -type f | wc -l") },
  { name: `git status (${REPO_FILES} files)`, runs: WORK_RUNS, host: () => sh("git status --porcelain", repo), vm: inVm("git -c safe.directory='*' status --porcelain", repo) },
];

try {
  makeRepo(repo);
  const running = new Map<string, string>();
  for (const [tier, driver] of tiers) {
    const s = spec();
    await driver.create(s);
    running.set(tier, s.name);
  }
  const samples = new Map<string, number[]>();
  const add = (key: string, ms: number) => samples.set(key, [...(samples.get(key) ?? []), ms]);
  for (const workload of workloads) {
    // One warm-up of each, then interleaved samples.
    await workload.host();
    for (const [tier, driver] of tiers) await workload.vm(driver, running.get(tier)!);
    for (let i = 0; i < workload.runs; i++) {
      add(`${workload.name}|host`, await timed(workload.host));
      for (const [tier, driver] of tiers) add(`${workload.name}|${tier}`, await timed(() => workload.vm(driver, running.get(tier)!)));
    }
  }
  // Cold create: create → the first command's output. The host's counterpart is a fresh `sh -c 'echo ready'`.
  for (let i = 0; i < COLD_RUNS; i++) {
    add("cold create → first output|host", await timed(() => sh("echo ready")));
    for (const [tier, driver] of tiers) {
      const s = spec();
      add(`cold create → first output|${tier}`, await timed(async () => {
        await driver.create(s);
        await driver.exec(s.name, { argv: ["echo", "ready"], cwd: "/" }, quiet);
      }));
      await driver.remove(s.name);
    }
  }

  // Memory of an idle VM: what its host cgroup holds (the driver's stats: page cache left out), once settled.
  const idleMib = new Map<string, number>();
  for (const [tier, driver] of tiers) {
    const s = spec();
    await driver.create(s);
    await Bun.sleep(2000);
    idleMib.set(tier, ((await driver.stats?.(s.name))?.usage?.memoryBytes ?? NaN) / 1024 / 1024);
    await driver.remove(s.name);
  }

  const versions = await Promise.all(tiers.map(async ([, driver]) => (await driver.probe()).version));
  console.log(`\n${versions.join("; ")}; host ${process.arch}, ${navigator.hardwareConcurrency} CPUs`);
  console.log(`medians (p95) in ms; ratio = tier median / host median; exec ${RUNS} runs, workloads ${WORK_RUNS}, cold ${COLD_RUNS}\n`);
  const columns = ["host", ...tiers.map(([tier]) => tier)];
  console.log(`${"measurement".padEnd(34)}${columns.map((c) => c.padStart(26)).join("")}`);
  for (const name of [...workloads.map((w) => w.name), "cold create → first output"]) {
    const host: Stats = stats(samples.get(`${name}|host`)!);
    const cells = columns.map((column) => {
      const s = stats(samples.get(`${name}|${column}`)!);
      const ratio = column === "host" ? "" : ` ${(s.median / host.median).toFixed(1)}x`;
      return `${s.median.toFixed(1)} (${s.p95.toFixed(1)})${ratio}`.padStart(26);
    });
    console.log(`${name.padEnd(34)}${cells.join("")}`);
  }
  console.log(`\nmemory of an idle VM (host cgroup, page cache left out): ${[...idleMib].map(([tier, mib]) => `${tier} ${mib.toFixed(1)} MiB`).join(", ")}`);
  console.log("msb (microVM): not measured: it needs a usable /dev/kvm, and this host's is kvm_pvm (no nested virtualisation).");
} finally {
  for (const [, driver] of tiers) for (const vm of await driver.list({ bench: "tiers" })) await driver.remove(vm.name);
  rmSync(tmp, { recursive: true, force: true });
  const layout = detectCgroupLayout();
  for (const dir of layout ? cgroupDirs(layout, `/${cgroupParent}`) : []) {
    try {
      rmdirSync(dir);
    } catch {
      // Already gone.
    }
  }
}
