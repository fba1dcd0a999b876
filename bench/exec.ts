// Exec benchmark: `true` via SDK→HTTP→manager→actor→local runtime vs the raw local driver vs host spawn, a new
// session's first command vs the raw driver's create → first exec, and manager RSS per idle session (two batches of 1,000) and per live actor (50);
// ends with the targets' rows 1–4 (docs/performance.md), each as a ratio against its baseline measured in this same run.
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExecSink, VmSpec } from "../runtime/driver";
import { createLocalDriver } from "../runtime/local/index";
import { createClient, type SandboxClient } from "../sdk/index";
import { startManager, type ManagerProcess } from "../test/manager-process";
import { prepareLocalRuntime } from "../test/runtime/local-target";
import { bareWorkerKib, makeRepo, removeCgroupParents, settledRss, stateLeftovers, stats, timed, type Stats } from "./exec-support";

const RUNS = Number(process.env.BENCH_RUNS ?? 200);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 20);
const IDLE_SESSIONS = Number(process.env.BENCH_IDLE_SESSIONS ?? 1000);
const ACTORS = Number(process.env.BENCH_ACTORS ?? 50);
/** Registrations before the idle-session baseline: the first ones pay one-time growth (Elysia compiling routes, statements). */
const SESSION_WARMUP = Number(process.env.BENCH_SESSION_WARMUP ?? 50);
/** Fresh processes of N bare Workers each (bench/actor-memory.ts) for row 3's baseline. */
const BARE_WORKER_RUNS = Number(process.env.BENCH_BARE_WORKER_RUNS ?? 3);
const FIRST_COMMAND_TARGET_MS = 40;

let interrupted = false;
process.on("SIGINT", () => void (interrupted = true));
const checkInterrupt = () => {
  if (interrupted) throw new Error("interrupted");
};

const quiet: ExecSink = { stdout() {}, stderr() {} };
const tag = randomBytes(4).toString("hex");
const managerParent = `ss-bench-${tag}`;
const rawParent = `ss-bench-${tag}-raw`;
const tmp = mkdtempSync(join(tmpdir(), "ss-bench-exec-"));
const dataDir = join(tmp, "data");
// The VMs' unprivileged uids must traverse every ancestor of the runtime state (<data dir>/runtime/local);
// a 0700 data dir (what the manager creates by default) makes crun fail with EACCES, so pre-create it 0711.
chmodSync(tmp, 0o711);
mkdirSync(dataDir, { mode: 0o711 });
const managerState = join(dataDir, "runtime", "local");
const rawState = join(tmp, "raw-state");
const image = await prepareLocalRuntime();
const raw = createLocalDriver({ stateDir: rawState, rootfsDir: image, cgroupParent: rawParent });
const rawLabels = { bench: `exec-${tag}` };
let manager: ManagerProcess | undefined;
let client: SandboxClient | undefined;

const kib = (n: number) => `${(n / 1024).toFixed(1)} MiB`;
const ratio = (a: Stats, b: Stats) => `${(a.median / b.median).toFixed(1)}x median, ${(a.p95 / b.p95).toFixed(1)}x p95`;

try {
  manager = await startManager(dataDir, { SANDBOX_CGROUP_PARENT: managerParent, SANDBOX_RUNTIME: "local", SANDBOX_ROOTFS_DIR: image });
  const pid = manager.proc.pid;
  client = createClient({ url: manager.url, token: manager.token });
  const health = await client.health();
  if (health.runtime.name !== "local") throw new Error(`manager has no local runtime: ${health.runtime.reason}`);

  // 2. Manager memory: at start, with idle sessions (after a warm-up batch), with live actors (each owning a running VM).
  const atStart = await settledRss(pid);
  for (let i = 0; i < SESSION_WARMUP; i++) await client.sessions.register({ id: `ses_warm_${i}`, directory: join(tmp, "repos", "idle") });
  const afterWarmup = await settledRss(pid);
  for (let i = 0; i < IDLE_SESSIONS; i++) {
    if (i % 100 === 0) checkInterrupt();
    await client.sessions.register({ id: `ses_idle_${i}`, directory: join(tmp, "repos", "idle") });
  }
  const afterFirstBatch = await settledRss(pid);
  // A second batch: what one more session costs once the first batch's one-time growth is paid.
  for (let i = 0; i < IDLE_SESSIONS; i++) {
    if (i % 100 === 0) checkInterrupt();
    await client.sessions.register({ id: `ses_idle2_${i}`, directory: join(tmp, "repos", "idle") });
  }
  const withSessions = await settledRss(pid);
  await client.settings.patch({ maxRunningVms: ACTORS });
  const repos = Array.from({ length: ACTORS }, (_, i) => makeRepo(join(tmp, "repos", `r${i}`)));
  // A new session's first command (actor Worker, boot, `true`, through the full path), interleaved with its
  // baseline: the raw driver's create of a fresh VM with the same resources, then `true` in it (alternating
  // which goes first, so both see the same load and the same state of their spare disks).
  const boots: number[] = [];
  const rawBoots: number[] = [];
  let rawBootSpec: ((i: number) => VmSpec) | undefined;
  const fullBoot = (i: number) => timed(async () => {
    const result = await client!.run(`ses_live_${i}`, { command: "true", cwd: repos[i]! });
    if (result.exitCode !== 0) throw new Error(`first exec in ses_live_${i} exited ${result.exitCode}: ${result.stderr}`);
  });
  const rawBoot = (i: number) => timed(async () => {
    const spec = rawBootSpec!(i);
    await raw.create(spec);
    const r = await raw.exec(spec.name, { argv: ["sh", "-c", "true"], cwd: "/" }, quiet);
    if (r.exitCode !== 0) throw new Error(`raw first exec in ${spec.name} exited ${r.exitCode}`);
  });
  for (let i = 0; i < ACTORS; i++) {
    checkInterrupt();
    await client.sessions.register({ id: `ses_live_${i}`, directory: repos[i]! });
    if (!rawBootSpec) {
      const { cpus, memoryMib } = (await client.sandbox.get(`ses_live_${i}`)).resources.effective;
      rawBootSpec = (n) => ({
        name: `ssb-${tag}-boot${n}`, image, cpus, memoryMib, mounts: [], tmpSizeMib: Math.min(512, Math.max(1, Math.floor(memoryMib / 4))),
        volume: { name: `ssb-${tag}-boot${n}` }, labels: rawLabels, network: { mode: "none" },
      });
    }
    if (i % 2 === 0) {
      boots.push(await fullBoot(i));
      rawBoots.push(await rawBoot(i));
    } else {
      rawBoots.push(await rawBoot(i));
      boots.push(await fullBoot(i));
    }
  }
  const running = (await client.vms.list()).vms.filter((vm) => vm.status === "running").length;
  if (running !== ACTORS) throw new Error(`expected ${ACTORS} running VMs, the manager lists ${running}`);
  const withActors = await settledRss(pid);

  // 1. Exec `true` latency over three paths, interleaved so each sees the same machine load.
  const session = "ses_live_0";
  const effective = (await client.sandbox.get(session)).resources.effective;
  const spec: VmSpec = {
    name: `ssb-${tag}-raw`, image, cpus: effective.cpus, memoryMib: effective.memoryMib, mounts: [],
    tmpSizeMib: Math.min(512, Math.max(1, Math.floor(effective.memoryMib / 4))), volume: { name: `ssb-${tag}-raw` }, labels: rawLabels, network: { mode: "none" },
  };
  await raw.create(spec);
  const paths: [string, () => Promise<unknown>][] = [
    ["c. host: Bun.spawn sh -c true", () => Bun.spawn(["sh", "-c", "true"], { stdio: ["ignore", "ignore", "ignore"] }).exited],
    ["b. raw: local driver exec (in-process)", async () => {
      const r = await raw.exec(spec.name, { argv: ["sh", "-c", "true"], cwd: "/" }, quiet);
      if (r.exitCode !== 0) throw new Error(`raw exec exited ${r.exitCode}`);
    }],
    ["a. full: SDK→HTTP→manager→actor→local", async () => {
      const r = await client!.run(session, { command: "true", cwd: repos[0]! });
      if (r.exitCode !== 0) throw new Error(`full exec exited ${r.exitCode}: ${r.stderr}`);
    }],
  ];
  const samples = paths.map(() => [] as number[]);
  for (let i = 0; i < WARMUP; i++) for (const [, fn] of paths) await fn();
  for (let i = 0; i < RUNS; i++) {
    if (i % 10 === 0) checkInterrupt();
    for (const [p, [, fn]] of paths.entries()) samples[p]!.push(await timed(fn));
  }
  // The same paths back to back (a block of each, in the same order), as an agent's burst of commands
  // meets them: no other work between two commands leaves each thread of the manager idle before its next.
  const blocks: number[][] = paths.map(() => []);
  for (const [p, [, fn]] of paths.entries()) {
    checkInterrupt();
    for (let i = 0; i < RUNS; i++) blocks[p]!.push(await timed(fn));
  }
  const afterRuns = await settledRss(pid);
  const [host, rawStats, full] = samples.map(stats) as [Stats, Stats, Stats];
  const [hostBlock, , fullBlock] = blocks.map(stats) as [Stats, Stats, Stats];

  console.log(`\nexec \`true\` latency: ${RUNS} runs per path after ${WARMUP} warm-up runs each, interleaved; runtime ${health.runtime.version}`);
  console.log(`(measured with ${SESSION_WARMUP + 2 * IDLE_SESSIONS + ACTORS} sessions registered and ${ACTORS} idle VMs/actors alive in the manager)\n`);
  console.log(`${"path".padEnd(42)} ${"median ms".padStart(10)} ${"p95 ms".padStart(10)}`);
  for (const [name, s] of [[paths[2]![0], full], [paths[1]![0], rawStats], [paths[0]![0], host]] as const) {
    console.log(`${name.padEnd(42)} ${s.median.toFixed(2).padStart(10)} ${s.p95.toFixed(2).padStart(10)}`);
  }
  console.log(`\nratio full/host: ${ratio(full, host)}`);
  console.log(`ratio raw/host:  ${ratio(rawStats, host)}`);
  console.log(`ratio full/raw:  ${ratio(full, rawStats)}`);
  console.log(`back to back (${RUNS} of each in a row): full ${fullBlock.median.toFixed(2)} ms, host ${hostBlock.median.toFixed(2)} ms → ${ratio(fullBlock, hostBlock)}`);

  const [boot, rawFirst] = [stats(boots), stats(rawBoots)];
  console.log(`\nfirst command of a new session: ${ACTORS} sessions, each interleaved with a raw create → first exec of a fresh VM\n`);
  console.log(`${"path".padEnd(42)} ${"median ms".padStart(10)} ${"p95 ms".padStart(10)}`);
  console.log(`${"a. full: first `true` of a new session".padEnd(42)} ${boot.median.toFixed(2).padStart(10)} ${boot.p95.toFixed(2).padStart(10)}`);
  console.log(`${"b. raw: create → first exec (in-process)".padEnd(42)} ${rawFirst.median.toFixed(2).padStart(10)} ${rawFirst.p95.toFixed(2).padStart(10)}`);
  console.log(`ratio full/raw:  ${ratio(boot, rawFirst)}`);

  console.log(`\nmanager memory (VmRSS of pid ${pid}, settled; the VMs' own memory is in their cgroups, not here)\n`);
  console.log(`${"state".padEnd(44)} ${"RSS".padStart(10)} ${"threads".padStart(8)}   delta`);
  const line = (name: string, s: { rssKib: number; threads: number }, delta = "") =>
    console.log(`${name.padEnd(44)} ${kib(s.rssKib).padStart(10)} ${String(s.threads).padStart(8)}   ${delta}`);
  line("(i) right after start", atStart);
  line(`(i') + ${SESSION_WARMUP} warm-up sessions (one-time growth)`, afterWarmup, `${kib(afterWarmup.rssKib - atStart.rssKib)} vs (i)`);
  const perSession = (afterFirstBatch.rssKib - afterWarmup.rssKib) / IDLE_SESSIONS;
  line(`(ii) + ${IDLE_SESSIONS} registered idle sessions`, afterFirstBatch, `${perSession.toFixed(2)} KiB per session vs (i') (${kib(afterFirstBatch.rssKib - afterWarmup.rssKib)} total)`);
  const perMoreSession = (withSessions.rssKib - afterFirstBatch.rssKib) / IDLE_SESSIONS;
  line(`(ii') + ${IDLE_SESSIONS} more`, withSessions, `${perMoreSession.toFixed(2)} KiB per session vs (ii) (${kib(withSessions.rssKib - afterFirstBatch.rssKib)} total)`);
  const perActor = (withActors.rssKib - withSessions.rssKib) / ACTORS;
  line(`(iii) + ${ACTORS} live actors, ${ACTORS} running VMs`, withActors, `${perActor.toFixed(0)} KiB per actor (${kib(withActors.rssKib - withSessions.rssKib)} total)`);
  line(`(iv) after the ${(WARMUP + 2 * RUNS) * paths.length} latency runs (info)`, afterRuns, `${kib(afterRuns.rssKib - withActors.rssKib)} vs (iii)`);

  // Row 3's baseline: RSS per bare Bun Worker, each run in a fresh process (bench/actor-memory.ts --child bare).
  const bareRuns: number[] = [];
  for (let i = 0; i < BARE_WORKER_RUNS; i++) bareRuns.push(await bareWorkerKib());
  const bare = stats(bareRuns).median;

  const row = (what: string, now: string, target: string) => console.log(`${what.padEnd(56)} ${now.padEnd(44)} ${target}`);
  console.log(`\nissue 16, rows 1–4 (each against its baseline measured in this run)\n`);
  row("row", "this run", "target");
  row("1. exec `true`, full path ÷ host `sh -c true`", `${(full.median / host.median).toFixed(1)}x median (p95 ${(full.p95 / host.p95).toFixed(1)}x); back to back ${(fullBlock.median / hostBlock.median).toFixed(1)}x`, "≤ 2.5x");
  row("2. first command of a new session ÷ raw create → exec", `${(boot.median / rawFirst.median).toFixed(2)}x median (p95 ${(boot.p95 / rawFirst.p95).toFixed(2)}x)`, "");
  row("   its median against the target", `${boot.median.toFixed(1)} ms = ${(boot.median / FIRST_COMMAND_TARGET_MS).toFixed(2)}x the target`, `≤ ${FIRST_COMMAND_TARGET_MS} ms`);
  row("3. manager memory per live actor ÷ a bare Worker", `${(perActor / bare).toFixed(2)}x (${kib(perActor)} vs ${kib(bare)}, bare: ${bareRuns.map((k) => kib(k)).join(", ")})`, "≤ 1.5 MiB");
  row(`4. manager memory per idle session (after ${SESSION_WARMUP} warm-up)`, `${perSession.toFixed(2)} KiB = ${(perSession / 2).toFixed(2)}x the target`, "≤ 2 KiB");
  row(`   the next ${IDLE_SESSIONS} (one-time growth paid)`, `${perMoreSession.toFixed(2)} KiB = ${(perMoreSession / 2).toFixed(2)}x the target`, "≤ 2 KiB");
} finally {
  const problems: string[] = [];
  const attempt = async (what: string, fn: () => Promise<unknown> | unknown) => {
    try {
      await fn();
    } catch (error) {
      problems.push(`${what}: ${(error as Error).message}`);
    }
  };
  await attempt("raw VM removal", async () => {
    for (const vm of await raw.list(rawLabels)) await raw.remove(vm.name);
  });
  if (manager && manager.proc.exitCode === null && client) {
    await attempt("sweep via SDK", async () => {
      await client!.vms.sweep({ idleForMs: 0 });
      const left = (await client!.vms.list()).vms.map((vm) => vm.name);
      if (left.length > 0) throw new Error(`the manager still lists ${left.join(", ")}`);
    });
  }
  await attempt("manager stop", () => manager?.stop());
  // Fallback for a manager that died or could not sweep: remove what its runtime state still holds.
  await attempt("leftover manager VMs", async () => {
    if (!existsSync(managerState)) return;
    const fallback = createLocalDriver({ stateDir: managerState, rootfsDir: image, cgroupParent: managerParent });
    const left = await fallback.list({});
    for (const vm of left) await fallback.remove(vm.name);
    if (left.length > 0) throw new Error(`removed ${left.length} VMs the sweep missed`);
  });
  for (const [name, dir] of [["manager", managerState], ["raw", rawState]]) {
    const left = stateLeftovers(dir!);
    if (left.length > 0) problems.push(`${name} runtime state left: ${left.join(", ")}`);
  }
  const cgroupsLeft = removeCgroupParents([managerParent, rawParent]);
  if (cgroupsLeft.length > 0) problems.push(`cgroups left: ${cgroupsLeft.join("; ")}`);
  await attempt("temp dir removal", () => rmSync(tmp, { recursive: true, force: true }));
  if (existsSync(tmp)) problems.push(`temp dir left: ${tmp}`);
  if (manager && manager.proc.exitCode === null) problems.push(`manager pid ${manager.proc.pid} still running`);
  if (problems.length > 0) {
    console.error(`\nCLEANUP FAILED, left behind:\n  ${problems.join("\n  ")}`);
    process.exitCode = 1;
  } else {
    console.log(`\ncleanup: every VM, volume, runtime state dir, temp dir and cgroup parent (${managerParent}, ${rawParent}) removed; manager stopped — nothing left`);
  }
}
