// Helpers for bench/exec.ts: latency stats, a process's RSS, a bare Worker's RSS, temp git repos, cgroup-parent cleanup.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cgroupDirs, detectCgroupLayout } from "../runtime/local/cgroup-layout";
import { percentile } from "./load";

export type Stats = { median: number; p95: number };

export function stats(samplesMs: number[]): Stats {
  const sorted = [...samplesMs].sort((a, b) => a - b);
  return { median: percentile(sorted, 50), p95: percentile(sorted, 95) };
}

/** Milliseconds one call of `fn` takes. */
export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** VmRSS (KiB) and thread count of a live process, from /proc/<pid>/status. */
export function procStatus(pid: number): { rssKib: number; threads: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? NaN);
  return { rssKib: field("VmRSS"), threads: field("Threads") };
}

/** RSS after the process has been left alone for a moment: the median of 5 reads over ~1 s, after 1 s. */
export async function settledRss(pid: number): Promise<{ rssKib: number; threads: number }> {
  await Bun.sleep(1000);
  const reads: { rssKib: number; threads: number }[] = [];
  for (let i = 0; i < 5; i++) {
    reads.push(procStatus(pid));
    await Bun.sleep(200);
  }
  reads.sort((a, b) => a.rssKib - b.rssKib);
  return reads[2]!;
}

/** KiB of RSS one bare Bun Worker adds: bench/actor-memory.ts's `bare` variant, in a fresh process. */
export async function bareWorkerKib(): Promise<number> {
  const script = new URL("./actor-memory.ts", import.meta.url).pathname;
  const proc = Bun.spawn([process.execPath, script, "--child", "bare"], { stdout: "pipe", stderr: "inherit" });
  const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  if (code !== 0) throw new Error(`bench/actor-memory.ts --child bare exited ${code}`);
  return (JSON.parse(out.trim().split("\n").at(-1)!) as { kibPerWorker: number }).kibPerWorker;
}

/** A fresh git repository at `dir` with one file in it. */
export function makeRepo(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const init = Bun.spawnSync(["git", "init", "-q", dir]);
  if (init.exitCode !== 0) throw new Error(`git init ${dir} failed: ${init.stderr.toString()}`);
  writeFileSync(join(dir, "README.md"), "# bench\n");
  return dir;
}

/** Every directory a top-level cgroup `parent` can occupy: each v1 hierarchy, and the cgroup2 mount if any. */
function parentDirs(parent: string): string[] {
  const layout = detectCgroupLayout();
  if (!layout) return [];
  const dirs = cgroupDirs(layout, `/${parent}`);
  if (layout.kind === "hybrid" && layout.unifiedRoot) dirs.push(`${layout.unifiedRoot}/${parent}`);
  return dirs;
}

/** rmdirs the (empty) cgroup parents; returns what is still there afterwards (a leaked VM keeps its parent busy). */
export function removeCgroupParents(parents: string[]): string[] {
  const left: string[] = [];
  for (const dir of parents.flatMap(parentDirs)) {
    if (!existsSync(dir)) continue;
    try {
      rmdirSync(dir);
    } catch {
      const children = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory());
      left.push(children.length > 0 ? children.map((c) => `${dir}/${c.name}`).join(", ") : dir);
    }
  }
  return left;
}

/** Names in a local-runtime state dir's vms/, volumes/ and uid-slots/ (all empty when nothing leaked). */
export function stateLeftovers(stateDir: string): string[] {
  return ["vms", "volumes", "uid-slots"].flatMap((sub) => {
    const dir = join(stateDir, sub);
    return existsSync(dir) ? readdirSync(dir).map((name) => `${sub}/${name}`) : [];
  });
}
