// Before/after benchmark of an embedded tier: this working tree against another git revision, in one
// run, interleaved (one cold create, one exec and one removal of each side in turn), so that a noisy
// machine slows both sides alike. Usage: bun run bench/compare-revision.ts <rev>   (e.g. HEAD~5;
// BENCH_RUNS=40; BENCH_TIER=gvisor for the gVisor tier, default the container tier)
// The revision is checked out with `git worktree add` into a temp dir and removed afterwards.
import { chmodSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExecSink, RuntimeDriver, VmSpec } from "../runtime/driver";
import { prepareLocalRuntime } from "../test/runtime/local-target";
import { removeCgroupParents, stats } from "./exec-support";

const rev = process.argv[2];
if (!rev) throw new Error("usage: bun run bench/compare-revision.ts <git revision>");
const RUNS = Number(process.env.BENCH_RUNS ?? 40);
const TIER = process.env.BENCH_TIER ?? "container";
if (TIER !== "container" && TIER !== "gvisor") throw new Error(`BENCH_TIER: container or gvisor, got ${TIER}`);
const ROOT = join(import.meta.dir, "..");
const quiet: ExecSink = { stdout() {}, stderr() {} };

const tmp = mkdtempSync(join(tmpdir(), "ss-bench-compare-"));
chmodSync(tmp, 0o711); // the VMs' unprivileged uids must traverse it to their state (see createLocalDriver)
const checkout = join(tmp, "base");
const git = (...args: string[]) => {
  const result = Bun.spawnSync(["git", "-C", ROOT, ...args], { stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${result.stderr.toString()}`);
};
git("worktree", "add", "--detach", "-q", checkout, rev);
symlinkSync(join(ROOT, "node_modules"), join(checkout, "node_modules"));

const cgroupParentOf = (name: string) => `ss-bench-cmp-${name}-${process.pid}`;
type Side = { name: string; driver: RuntimeDriver; repo: string; cold: number[]; exec: number[]; remove: number[] };

/** The tier's driver factory as the tree at `tree` has it. */
async function driverFactory(tree: string): Promise<typeof import("../runtime/local/index").createLocalDriver> {
  if (TIER === "gvisor") return ((await import(join(tree, "runtime/gvisor/index.ts"))) as typeof import("../runtime/gvisor/index")).createGvisorDriver;
  return ((await import(join(tree, "runtime/local/index.ts"))) as typeof import("../runtime/local/index")).createLocalDriver;
}

async function side(name: string, tree: string): Promise<Side> {
  const create = await driverFactory(tree);
  const state = join(tmp, `${name}-state`);
  const repo = mkdtempSync(join(tmp, `${name}-repo-`));
  return { name, driver: create({ stateDir: state, rootfsDir: image, cgroupParent: cgroupParentOf(name) }), repo, cold: [], exec: [], remove: [] };
}

const image = await prepareLocalRuntime();
const sides = [await side("this", ROOT), await side("base", checkout)];
const spec = (s: Side, i: number): VmSpec => ({
  name: `cmp-${s.name}-${i}`, image, cpus: 1, memoryMib: 256, mounts: [{ hostPath: s.repo }], tmpSizeMib: 16,
  volume: { name: `cmp-${s.name}-${i}` }, labels: { bench: "compare" }, network: { mode: "none" },
});
const execTrue = (s: Side, name: string) => s.driver.exec(name, { argv: ["true"], cwd: "/" }, quiet);

try {
  for (let i = 0; i < RUNS; i++) {
    for (const s of i % 2 === 0 ? sides : [...sides].reverse()) {
      const started = performance.now();
      await s.driver.create(spec(s, i));
      await execTrue(s, spec(s, i).name);
      s.cold.push(performance.now() - started);
      const execStarted = performance.now();
      await execTrue(s, spec(s, i).name);
      s.exec.push(performance.now() - execStarted);
      const removeStarted = performance.now();
      await s.driver.remove(spec(s, i).name);
      s.remove.push(performance.now() - removeStarted);
    }
  }
  const [now, base] = sides.map((s) => ({ cold: stats(s.cold), exec: stats(s.exec), remove: stats(s.remove) }));
  console.log(`\nthis tree vs ${rev}, ${TIER} tier: ${RUNS} interleaved runs each (cold create → first exec, one exec of \`true\`, removal)\n`);
  console.log("measurement                  this median / p95 ms   base median / p95 ms   this ÷ base (medians)");
  const labels = { cold: "cold create → first exec", exec: "exec true into running VM", remove: "remove (VM and volume)" };
  for (const key of ["cold", "exec", "remove"] as const) {
    const label = labels[key];
    console.log(`${label.padEnd(28)} ${now![key].median.toFixed(2).padStart(8)} / ${now![key].p95.toFixed(2).padEnd(10)} ${base![key].median.toFixed(2).padStart(8)} / ${base![key].p95.toFixed(2).padEnd(10)} ${(now![key].median / base![key].median).toFixed(3)}×`);
  }
} finally {
  for (const s of sides) for (const vm of await s.driver.list({ bench: "compare" })) await s.driver.remove(vm.name).catch(() => {});
  removeCgroupParents(sides.map((s) => cgroupParentOf(s.name)));
  git("worktree", "remove", "--force", checkout);
  rmSync(tmp, { recursive: true, force: true });
}
