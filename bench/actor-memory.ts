// Manager memory per actor Worker: N bare Workers vs N session actor Workers, each set in a fresh Bun process,
// rounds interleaved: idle actors (local; tiered local+gVisor, as the manager runs them) and live ones (tiered,
// each has booted its VM and run `true`); plus the module graph an actor Worker evaluates. The same with the
// whole manager around it: bench:exec, line (iii).
import { heapStats } from "bun:jsc";
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ActorHandle, workerTransport } from "../workers/actor-handle";
import type { VmSpec } from "../runtime/driver";
import type { DriverConfig } from "../workers/protocol";
import { prepareLocalRuntime } from "../test/runtime/local-target";
import { procStatus, removeCgroupParents } from "./exec-support";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const WORKERS = Number(process.env.BENCH_WORKERS ?? 20);
const ALL_VARIANTS = ["bare", "actor-local", "actor-tiered", "actor-live"] as const;
type Variant = (typeof ALL_VARIANTS)[number];
/** BENCH_VARIANTS=bare,actor-live runs only those. */
const VARIANTS = ALL_VARIANTS.filter((v) => (process.env.BENCH_VARIANTS?.split(",") ?? ALL_VARIANTS).includes(v));
const CGROUP_PARENT = `ss-bench-actor-memory-${process.pid}`;

/** RSS (KiB) after a GC and a quiet second: the median of 5 reads. */
async function settledRssKib(): Promise<number> {
  Bun.gc(true);
  await Bun.sleep(800);
  const reads: number[] = [];
  for (let i = 0; i < 5; i++) {
    reads.push(procStatus(process.pid).rssKib);
    await Bun.sleep(150);
  }
  return reads.sort((a, b) => a - b)[2]!;
}

function driverConfig(variant: Variant, stateDir: string, rootfsDir: string | undefined): DriverConfig {
  const local = { kind: "local", stateDir: join(stateDir, "local"), rootfsDir, cgroupParent: CGROUP_PARENT } as const;
  if (variant === "actor-local") return local;
  return { kind: "tiered", defaultTier: "container", tiers: { container: local, gvisor: { kind: "gvisor", stateDir: join(stateDir, "gvisor"), rootfsDir, cgroupParent: CGROUP_PARENT } } };
}

/** Boots the actor's VM and runs `true` in it, as a session's first command does. */
async function bootAndRun(handle: ActorHandle, image: string): Promise<void> {
  const spec: VmSpec = { name: handle.vmName, image, cpus: 1, memoryMib: 256, mounts: [], tmpSizeMib: 64, volume: { name: handle.vmName }, labels: {}, network: { mode: "none" } };
  const { done } = handle.exec(spec, { argv: ["sh", "-c", "true"], cwd: "/", env: {}, timeoutMs: 60_000 }, { onStarted() {}, onChunk() {} });
  const outcome = await done;
  if (outcome.exitCode !== 0) throw new Error(`true exited ${outcome.exitCode} in ${handle.vmName}`);
}

/** Starts one Worker of `variant` and waits until it has answered (an actor: its first discover); returns its stop. */
async function start(variant: Variant, stateDir: string, index: number, image: string | undefined): Promise<() => Promise<unknown>> {
  if (variant === "bare") {
    const worker = new Worker(new URL("./bare-worker.ts", import.meta.url));
    const answered = Promise.withResolvers<void>();
    worker.onmessage = () => answered.resolve();
    worker.postMessage({ type: "ping" });
    await answered.promise;
    return async () => worker.terminate();
  }
  const vmName = `ocm-session-bench${String(index).padStart(7, "0")}`;
  const hooks = { onState() {}, onLog() {}, onIdle() {}, onExit() {} };
  const handle = new ActorHandle(vmName, workerTransport(vmName, driverConfig(variant, stateDir, image)), hooks);
  await handle.discover();
  if (variant === "actor-live") await bootAndRun(handle, image!);
  return async () => {
    if (variant === "actor-live") await handle.remove("manual");
    handle.retire();
  };
}

/** Child: KiB of RSS each Worker adds, after one warm-up Worker (one-time costs excluded). */
async function child(variant: Variant): Promise<void> {
  const stateDir = mkdtempSync(join(tmpdir(), "ss-bench-actor-memory-"));
  // The VMs' unprivileged uids must traverse the runtime state's ancestors (see bench/exec.ts).
  chmodSync(stateDir, 0o711);
  const image = variant === "actor-live" ? await prepareLocalRuntime() : undefined;
  const stops: (() => Promise<unknown>)[] = [];
  try {
    stops.push(await start(variant, stateDir, 0, image));
    const before = await settledRssKib();
    const heapBefore = heapStats().heapSize;
    for (let i = 1; i <= WORKERS; i++) stops.push(await start(variant, stateDir, i, image));
    const after = await settledRssKib();
    const mainHeapKib = (heapStats().heapSize - heapBefore) / 1024 / WORKERS;
    console.log(JSON.stringify({ variant, kibPerWorker: (after - before) / WORKERS, mainHeapKib }));
  } finally {
    for (const stop of stops) await stop();
    const left = removeCgroupParents([CGROUP_PARENT]);
    rmSync(stateDir, { recursive: true, force: true });
    if (left.length > 0) throw new Error(`cgroups left: ${left.join(", ")}`);
  }
}

/** The modules an actor Worker evaluates: the static import graph of its entry (type-only imports dropped). */
function moduleGraph(): { modules: number; bytes: number; builtins: string[] } {
  const transpiler = new Bun.Transpiler({ loader: "ts" });
  const seen = new Set<string>();
  const builtins = new Set<string>();
  let bytes = 0;
  const visit = (path: string) => {
    if (seen.has(path)) return;
    seen.add(path);
    const source = readFileSync(path, "utf8");
    bytes += statSync(path).size;
    for (const { path: spec, kind } of transpiler.scanImports(source)) {
      if (kind !== "import-statement") continue; // import() runs only when a config asks for it
      if (spec.startsWith(".")) visit(Bun.resolveSync(spec, dirname(path)));
      else builtins.add(spec);
    }
  };
  visit(fileURLToPath(new URL("../workers/session-actor.worker.ts", import.meta.url)));
  return { modules: seen.size, bytes, builtins: [...builtins].sort() };
}

async function runChild(args: string[]): Promise<Record<string, unknown>> {
  const proc = Bun.spawn([process.execPath, import.meta.path, ...args], { stdout: "pipe", stderr: "inherit" });
  const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  if (code !== 0) throw new Error(`child ${args.join(" ")} exited ${code}`);
  return JSON.parse(out.trim().split("\n").at(-1)!);
}

async function parent(): Promise<void> {
  const samples = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
  const mainHeap = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const variant of VARIANTS) {
      const result = await runChild(["--child", variant]);
      samples.get(variant)!.push(result.kibPerWorker as number);
      mainHeap.get(variant)!.push(result.mainHeapKib as number);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const mib = (kib: number) => `${(kib / 1024).toFixed(2)} MiB`;
  console.log(`\nmanager RSS per Worker: ${WORKERS} Workers per fresh process after one warm-up, ${ROUNDS} rounds interleaved`);
  console.log(`(main heap: the main thread's live JS heap per Worker, the handle and the Worker object; included in the RSS)\n`);
  console.log(`${"variant".padEnd(16)} ${"median".padStart(10)} ${"min".padStart(10)} ${"max".padStart(10)} ${"main heap".padStart(10)}   vs bare`);
  const bare = median(samples.get("bare") ?? [NaN]);
  for (const [variant, xs] of samples) {
    const m = median(xs);
    const delta = variant === "bare" ? "" : `${(m / bare).toFixed(2)}x, +${mib(m - bare)}`;
    const heap = `${median(mainHeap.get(variant)!).toFixed(1)} KiB`;
    console.log(`${variant.padEnd(16)} ${mib(m).padStart(10)} ${mib(Math.min(...xs)).padStart(10)} ${mib(Math.max(...xs)).padStart(10)} ${heap.padStart(10)}   ${delta}`);
  }
  const graph = moduleGraph();
  console.log(`\nan actor Worker evaluates ${graph.modules} of our modules (${(graph.bytes / 1024).toFixed(0)} KiB of source) and ${graph.builtins.join(", ")}`);
}

const [flag, variant] = process.argv.slice(2);
if (flag === "--child") await child(variant as Variant);
else await parent();
