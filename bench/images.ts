// Image benchmark (not a test), `bun run bench:images`:
//  1. cold create → first output with the default (toolchain) image vs the minimal one (shell tools only,
//     SANDBOX_ROOTFS_VARIANT=minimal), interleaved in the same run; ratio default / minimal.
//  2. building the built-in image plus one Debian package (scripts/extend-rootfs.sh, from the Debian
//     mirror), against a plain `cp -a` of the built-in image in the same run.
//  3. pulling the default image as an OCI image from a registry on loopback (skopeo + umoci, the manager's
//     own pull code), against the same `cp -a`; and the second use of that reference (cached by digest).
// BENCH_SKIP_BUILD=1 skips 2 (it needs the Debian mirror). Cleans up every VM, cgroup and temp dir it makes.
import { DEFAULT_MAX_IMAGE_MIB } from "../app/services/settings";
import { chmodSync, mkdtempSync, rmdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseReference } from "../app/images/image-choice";
import { pullRootfs, resolveDigest } from "../app/images/oci-pull";
import { EXTEND_ROOTFS_SCRIPT } from "../app/images/image-service";
import type { VmSpec } from "../runtime/driver";
import { cgroupDirs, detectCgroupLayout } from "../runtime/local/cgroup-layout";
import { createLocalDriver, ensureRootfs } from "../runtime/local/index";
import { BUILD_ROOTFS_SCRIPT } from "../runtime/local/rootfs";
import { startRegistry } from "../test/fixtures/oci-registry";

const COLD_RUNS = Number(process.env.BENCH_COLD_RUNS ?? 10);
const CGROUP_PARENT = "session-sandbox-bench-images";

function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? NaN;
}

function run(argv: string[], env: Record<string, string> = {}): number {
  const start = performance.now();
  const result = Bun.spawnSync(argv, { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`${argv.join(" ")} failed: ${result.stderr.toString().slice(-2000)}`);
  return performance.now() - start;
}

const defaultImage = await ensureRootfs();
process.stderr.write("building (or reusing) the minimal rootfs…\n");
run(["bash", BUILD_ROOTFS_SCRIPT], { SANDBOX_ROOTFS_VARIANT: "minimal" });
const minimalImage = Bun.spawnSync(["bash", BUILD_ROOTFS_SCRIPT, "--print-path"], { env: { ...process.env, SANDBOX_ROOTFS_VARIANT: "minimal" } }).stdout.toString().trim();
const sizeMib = (dir: string) => Math.round(Number.parseInt(Bun.spawnSync(["du", "-sxm", dir]).stdout.toString(), 10));

const work = mkdtempSync(join(tmpdir(), "ss-bench-images-"));
// The VMs run as unprivileged uids that must traverse down to their state dir (and the pulled image).
chmodSync(work, 0o711);
const driver = createLocalDriver({ stateDir: join(work, "state"), rootfsDir: defaultImage, cgroupParent: CGROUP_PARENT });
let n = 0;
const spec = (image: string): VmSpec => {
  const name = `bench-img-${process.pid}-${++n}`;
  return { name, image, cpus: 1, memoryMib: 512, mounts: [], tmpSizeMib: 64, volume: { name: `${name}-data` }, labels: { bench: "images" }, network: { mode: "none" } };
};
async function coldFirstOutput(image: string): Promise<number> {
  const s = spec(image);
  let first = 0;
  const start = performance.now();
  await driver.create(s);
  await driver.exec(s.name, { argv: ["echo", "first"], cwd: "/" }, { stdout: () => void (first ||= performance.now()), stderr() {} });
  const ms = (first || performance.now()) - start;
  await driver.remove(s.name);
  return ms;
}

const registry = await startRegistry();
try {
  // 1. cold create → first output, interleaved so both see the same load.
  await coldFirstOutput(defaultImage);
  await coldFirstOutput(minimalImage);
  const withDefault: number[] = [];
  const withMinimal: number[] = [];
  for (let i = 0; i < COLD_RUNS; i++) {
    withDefault.push(await coldFirstOutput(defaultImage));
    withMinimal.push(await coldFirstOutput(minimalImage));
  }

  // The baseline of 2 and 3: copying the built-in image on the same disk.
  const copyMs = run(["cp", "-a", "--reflink=auto", defaultImage, join(work, "copy")]);
  rmSync(join(work, "copy"), { recursive: true, force: true });

  // 2. the built-in image plus a Debian package.
  let buildMs: number | undefined;
  if (!process.env.BENCH_SKIP_BUILD) buildMs = run(["bash", EXTEND_ROOTFS_SCRIPT, defaultImage, join(work, "recipe"), "htop"]);
  rmSync(join(work, "recipe"), { recursive: true, force: true });

  // 3. the default image as an OCI image on a loopback registry, pulled by the manager's own code.
  process.stderr.write("packing the default image as an OCI image and pushing it to the loopback registry…\n");
  const layout = join(work, "layout");
  run(["umoci", "init", "--layout", layout]);
  run(["umoci", "new", "--image", `${layout}:v1`]);
  run(["umoci", "unpack", "--image", `${layout}:v1`, join(work, "bundle")]);
  run(["cp", "-a", `${defaultImage}/.`, join(work, "bundle/rootfs/")]);
  const packMs = run(["umoci", "repack", "--image", `${layout}:v1`, join(work, "bundle")]);
  rmSync(join(work, "bundle"), { recursive: true, force: true });
  run(["skopeo", "copy", "--dest-tls-verify=false", `oci:${layout}:v1`, `docker://${registry.address}/bench/default:v1`]);
  rmSync(layout, { recursive: true, force: true });
  const parsed = parseReference(`${registry.address}/bench/default:v1`);
  const pullStart = performance.now();
  const digest = await resolveDigest(parsed);
  await pullRootfs(parsed, digest, join(work, "pulled"), () => undefined, DEFAULT_MAX_IMAGE_MIB * 1024 * 1024);
  const pullMs = performance.now() - pullStart;
  const pulledCold = await coldFirstOutput(join(work, "pulled"));

  const d = median(withDefault);
  const m = median(withMinimal);
  console.log(`\nimages: default ${defaultImage} (${sizeMib(defaultImage)} MiB), minimal ${minimalImage} (${sizeMib(minimalImage)} MiB); ${COLD_RUNS} cold runs each, interleaved\n`);
  console.log(`${"measurement".padEnd(58)} ${"median ms".padStart(10)} ${"ratio".padStart(8)}`);
  console.log(`${"cold create → first output, minimal image (baseline)".padEnd(58)} ${m.toFixed(1).padStart(10)} ${"1.00x".padStart(8)}`);
  console.log(`${"cold create → first output, default image".padEnd(58)} ${d.toFixed(1).padStart(10)} ${`${(d / m).toFixed(2)}x`.padStart(8)}`);
  console.log(`${"cold create → first output, default image pulled via OCI".padEnd(58)} ${pulledCold.toFixed(1).padStart(10)} ${`${(pulledCold / m).toFixed(2)}x`.padStart(8)}`);
  console.log(`\n${"one-off operation".padEnd(58)} ${"ms".padStart(10)} ${"vs cp -a".padStart(8)}`);
  console.log(`${"cp -a of the default image (baseline)".padEnd(58)} ${copyMs.toFixed(0).padStart(10)} ${"1.00x".padStart(8)}`);
  if (buildMs !== undefined) console.log(`${"build: default image + htop (extend-rootfs.sh, Debian mirror)".padEnd(58)} ${buildMs.toFixed(0).padStart(10)} ${`${(buildMs / copyMs).toFixed(2)}x`.padStart(8)}`);
  console.log(`${"pull: default image as OCI from loopback (skopeo + umoci)".padEnd(58)} ${pullMs.toFixed(0).padStart(10)} ${`${(pullMs / copyMs).toFixed(2)}x`.padStart(8)}`);
  console.log(`${"(packing it as OCI for the registry, umoci repack)".padEnd(58)} ${packMs.toFixed(0).padStart(10)} ${`${(packMs / copyMs).toFixed(2)}x`.padStart(8)}`);
  console.log(`second session with the same reference: 0 ms of pulling (cached by digest ${digest.slice(0, 19)}…; see test/images/oci-images.test.ts)`);
} finally {
  await registry.stop();
  for (const vm of await driver.list({ bench: "images" })) await driver.remove(vm.name);
  rmSync(work, { recursive: true, force: true });
  const layout = detectCgroupLayout();
  for (const dir of layout ? cgroupDirs(layout, `/${CGROUP_PARENT}`) : []) {
    try {
      rmdirSync(dir);
    } catch {
      // already gone
    }
  }
}
