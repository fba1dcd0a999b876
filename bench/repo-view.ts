// Repository view benchmark (not a test): what serving a repository through its view (runtime/repo-fs)
// costs a guest, against the same work on a plain bind of an identical repository, in the same run and
// interleaved: a command (`true`), `git status`, `git add` + `commit` of 200 changed files, making and
// removing 1,000 small files (a package install's shape), a 64 MiB write and read, and a cold boot to the
// first command. Run with `bun run bench:repo-view` (BENCH_RUNS, default 15). Ratios are view ÷ plain.
import { mkdirSync, mkdtempSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BindMount, ExecSink, VmSpec } from "../runtime/driver";
import { cgroupDirs, detectCgroupLayout } from "../runtime/local/cgroup-layout";
import { createLocalDriver, ensureRootfs } from "../runtime/local/index";

const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const quiet: ExecSink = { stdout() {}, stderr() {} };

function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
}

function makeRepo(dir: string): void {
  mkdirSync(dir, { recursive: true });
  for (let d = 0; d < 50; d++) {
    mkdirSync(join(dir, "src", `m${d}`), { recursive: true });
    for (let f = 0; f < 40; f++) writeFileSync(join(dir, "src", `m${d}`, `f${f}.ts`), `export const v${f} = ${d * 40 + f};\n`);
  }
  const git = (...args: string[]) => Bun.spawnSync(["git", "-c", "user.name=b", "-c", "user.email=b@example.com", ...args], { cwd: dir });
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("commit", "-qm", "first");
}

const WORKLOADS: [string, string][] = [
  ["command (true)", "true"],
  ["git status (2,000 files)", "git status --porcelain >/dev/null"],
  ["git add + commit (200 changed)", "for f in src/m1*/f1*.ts; do echo x >> $f; done; git add -A && git -c user.name=g -c user.email=g@example.com commit -qm c >/dev/null"],
  ["1,000 small files made and removed", "mkdir -p tmp-many && for i in $(seq 1 1000); do echo $i > tmp-many/$i.js; done && rm -rf tmp-many"],
  ["64 MiB written and read", "dd if=/dev/zero of=big.bin bs=1M count=64 status=none && cat big.bin >/dev/null && rm big.bin"],
];

async function main(): Promise<void> {
  const image = await ensureRootfs();
  const scratch = mkdtempSync(join(tmpdir(), "ss-bench-view-"));
  const stateDir = mkdtempSync(join(tmpdir(), "ss-bench-view-state-"));
  const cgroupParent = `ss-bench-view-${scratch.slice(-6)}`;
  const driver = createLocalDriver({ stateDir, rootfsDir: image, cgroupParent });
  const plainRepo = join(scratch, "plain");
  const viewRepo = join(scratch, "view");
  makeRepo(plainRepo);
  makeRepo(viewRepo);
  const spec = (name: string, mount: BindMount): VmSpec => ({ name, image, cpus: 1, memoryMib: 512, mounts: [mount], tmpSizeMib: 64, volume: { name }, labels: {}, network: { mode: "none" } });
  const paths = { plain: plainRepo, view: viewRepo } as const;
  const mounts: Record<"plain" | "view", BindMount> = { plain: { hostPath: plainRepo }, view: { hostPath: viewRepo, guard: { keep: [] } } };
  try {
    // Cold: create → first command, interleaved.
    const cold: Record<"plain" | "view", number[]> = { plain: [], view: [] };
    for (let i = 0; i < Math.max(5, Math.floor(RUNS / 2)); i++) {
      for (const kind of ["plain", "view"] as const) {
        const name = `bench-cold-${kind}-${i}`;
        const start = performance.now();
        await driver.create(spec(name, mounts[kind]));
        await driver.exec(name, { argv: ["true"], cwd: paths[kind] }, quiet);
        cold[kind].push(performance.now() - start);
        await driver.remove(name);
      }
    }
    await driver.create(spec("bench-plain", mounts.plain));
    await driver.create(spec("bench-view", mounts.view));
    const vm = { plain: "bench-plain", view: "bench-view" } as const;
    const rows: [string, number, number][] = [["create → first command", median(cold.plain), median(cold.view)]];
    for (const [label, script] of WORKLOADS) {
      const samples: Record<"plain" | "view", number[]> = { plain: [], view: [] };
      for (let i = 0; i < RUNS; i++) {
        for (const kind of ["plain", "view"] as const) {
          const start = performance.now();
          const result = await driver.exec(vm[kind], { argv: ["bash", "-c", script], cwd: paths[kind] }, quiet);
          samples[kind].push(performance.now() - start);
          if (result.exitCode !== 0) throw new Error(`${label} failed in the ${kind} VM (exit ${result.exitCode})`);
        }
      }
      rows.push([label, median(samples.plain), median(samples.view)]);
    }
    console.log(`repository view vs plain bind, container tier, medians of ${RUNS} interleaved runs (cold: ${cold.plain.length})`);
    console.log("| workload | plain bind (ms) | view (ms) | view ÷ plain |\n| --- | --- | --- | --- |");
    for (const [label, plain, view] of rows) console.log(`| ${label} | ${plain.toFixed(1)} | ${view.toFixed(1)} | ${(view / plain).toFixed(2)}× |`);
  } finally {
    for (const vm of await driver.list({})) await driver.remove(vm.name).catch(() => {});
    const layout = detectCgroupLayout();
    for (const dir of layout ? cgroupDirs(layout, `/${cgroupParent}`) : []) {
      try {
        rmdirSync(dir);
      } catch {
        // Absent in this hierarchy.
      }
    }
    rmSync(scratch, { recursive: true, force: true });
    rmSync(stateDir, { recursive: true, force: true });
  }
}

await main();
