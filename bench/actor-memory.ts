// Manager memory per actor Worker: N bare Workers vs N session actor Workers (local, and tiered local+gVisor
// as the manager runs them by default), each set in a fresh Bun process, rounds interleaved; plus the
// module graph an actor Worker evaluates. Live actors with running VMs: bench:exec, line (iii).
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ActorHandle, workerTransport } from "../workers/actor-handle";
import type { DriverConfig } from "../workers/protocol";
import { procStatus } from "./exec-support";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const WORKERS = Number(process.env.BENCH_WORKERS ?? 20);
const VARIANTS = ["bare", "actor-local", "actor-tiered"] as const;
type Variant = (typeof VARIANTS)[number];

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

function driverConfig(variant: Variant, stateDir: string): DriverConfig {
  const local = { kind: "local", stateDir: join(stateDir, "local"), cgroupParent: "ss-bench-actor-memory" } as const;
  if (variant !== "actor-tiered") return local;
  return { kind: "tiered", defaultTier: "container", tiers: { container: local, gvisor: { kind: "gvisor", stateDir: join(stateDir, "gvisor"), cgroupParent: "ss-bench-actor-memory" } } };
}

/** Starts one Worker of `variant` and waits until it has answered (an actor: its first discover). */
async function start(variant: Variant, stateDir: string, index: number): Promise<() => void> {
  if (variant === "bare") {
    const worker = new Worker(new URL("./bare-worker.ts", import.meta.url));
    const answered = Promise.withResolvers<void>();
    worker.onmessage = () => answered.resolve();
    worker.postMessage({ type: "ping" });
    await answered.promise;
    return () => worker.terminate();
  }
  const vmName = `ocm-session-bench${String(index).padStart(7, "0")}`;
  const hooks = { onState() {}, onLog() {}, onIdle() {}, onExit() {} };
  const handle = new ActorHandle(vmName, workerTransport(vmName, driverConfig(variant, stateDir)), hooks);
  await handle.discover();
  return () => handle.retire();
}

/** Child: KiB of RSS each Worker adds, after one warm-up Worker (one-time costs excluded). */
async function child(variant: Variant): Promise<void> {
  const stateDir = mkdtempSync(join(tmpdir(), "ss-bench-actor-memory-"));
  try {
    const stops = [await start(variant, stateDir, 0)];
    const before = await settledRssKib();
    for (let i = 1; i <= WORKERS; i++) stops.push(await start(variant, stateDir, i));
    const after = await settledRssKib();
    console.log(JSON.stringify({ variant, kibPerWorker: (after - before) / WORKERS }));
    for (const stop of stops) stop();
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
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
  for (let round = 0; round < ROUNDS; round++) {
    for (const variant of VARIANTS) samples.get(variant)!.push((await runChild(["--child", variant])).kibPerWorker as number);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const mib = (kib: number) => `${(kib / 1024).toFixed(2)} MiB`;
  console.log(`\nmanager RSS per Worker: ${WORKERS} Workers per fresh process after one warm-up, ${ROUNDS} rounds interleaved\n`);
  console.log(`${"variant".padEnd(16)} ${"median".padStart(10)} ${"min".padStart(10)} ${"max".padStart(10)}   vs bare`);
  const bare = median(samples.get("bare")!);
  for (const [variant, xs] of samples) {
    const m = median(xs);
    const delta = variant === "bare" ? "" : `${(m / bare).toFixed(2)}x, +${mib(m - bare)}`;
    console.log(`${variant.padEnd(16)} ${mib(m).padStart(10)} ${mib(Math.min(...xs)).padStart(10)} ${mib(Math.max(...xs)).padStart(10)}   ${delta}`);
  }
  const graph = moduleGraph();
  console.log(`\nan actor Worker evaluates ${graph.modules} of our modules (${(graph.bytes / 1024).toFixed(0)} KiB of source) and ${graph.builtins.join(", ")}`);
}

const [flag, variant] = process.argv.slice(2);
if (flag === "--child") await child(variant as Variant);
else await parent();
