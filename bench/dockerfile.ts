// What a Dockerfile image costs: a cold build (new content each run: a gVisor build VM booted from the
// pulled base, WORKDIR, COPY and two RUN steps, the export and umoci's unpack), against the floor any build
// pays, a gVisor VM of the same base booted for one command and removed, and the cached path a second
// session takes (the Dockerfile read and the content digest, found ready). Interleaved in one run.
//
//   bun run bench:dockerfile        (BENCH_RUNS, default 5)
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildFromDockerfile } from "../app/images/dockerfile-build";
import { readDockerfileSource } from "../app/images/dockerfile-source";
import { parseReference } from "../app/images/image-choice";
import { pullRootfs } from "../app/images/oci-pull";
import { startRegistry } from "../test/fixtures/oci-registry";
import { makeTempDir } from "../test/helpers";
import { expectNoGvisorLeaksAndCleanUp, makeGvisorFixture } from "../test/runtime/gvisor-target";
import { stats, timed } from "./exec-support";

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const MIB = 2 ** 20;
const fixture = await makeGvisorFixture();
const registry = await startRegistry();
const scratch = makeTempDir("ss-bench-dockerfile-");
const repo = makeTempDir("ss-bench-dockerfile-repo-");

try {
  const digest = await registry.push("bench/base", "1", "bench-base");
  const base = join(scratch, "base");
  await pullRootfs(parseReference(`${registry.address}/bench/base:1`), digest, base, () => {}, 256 * MIB);
  mkdirSync(join(repo, ".opencode-sandbox"));
  writeFileSync(join(repo, "app.txt"), "app\n");
  const dockerfile = (run: number) =>
    [`FROM ${registry.address}/bench/base:1`, `ARG RUN=${run}`, "WORKDIR /opt/app", "COPY app.txt ./", 'RUN echo "build $RUN" > /etc/built', "RUN cat app.txt >> /etc/built"].join("\n");
  const floor: number[] = [];
  const cold: number[] = [];
  const cached: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    floor.push(
      await timed(async () => {
        const name = `bench-floor-${i}`;
        await fixture.driver.create({ name, image: base, cpus: 1, memoryMib: 256, mounts: [], tmpSizeMib: 16, volume: { name }, labels: {}, network: { mode: "none" } });
        await fixture.driver.exec(name, { argv: ["true"], cwd: "/" }, { stdout() {}, stderr() {} });
        await fixture.driver.remove(name);
      }),
    );
    writeFileSync(join(repo, ".opencode-sandbox/Dockerfile"), dockerfile(i));
    const source = readDockerfileSource(repo, ".opencode-sandbox/Dockerfile", 256 * MIB);
    const rootfs = join(scratch, `image-${i}`);
    cold.push(
      await timed(() =>
        buildFromDockerfile({ driver: fixture.driver, plan: source.plan, bases: { [`${registry.address}/bench/base:1`]: base }, contextDir: source.directory, rootfs, vmName: `bench-build-${i}`, labels: {}, cpus: 1, memoryMib: 512, limitBytes: 256 * MIB, stepTimeoutMs: 60_000, onLine: () => {} }),
      ),
    );
    cached.push(
      await timed(async () => {
        const again = readDockerfileSource(repo, ".opencode-sandbox/Dockerfile", 256 * MIB);
        if (again.digest !== source.digest || !existsSync(rootfs)) throw new Error("the cached build was not found");
      }),
    );
  }
  const [f, c, h] = [stats(floor), stats(cold), stats(cached)];
  console.log(`\n${RUNS} runs each, interleaved, gVisor tier (runsc --platform=ptrace)\n`);
  console.log(`${"path".padEnd(58)} ${"median ms".padStart(10)} ${"p95 ms".padStart(10)}`);
  console.log(`${"a. floor: boot the base as a VM, one command, remove".padEnd(58)} ${f.median.toFixed(1).padStart(10)} ${f.p95.toFixed(1).padStart(10)}`);
  console.log(`${"b. cold build: 4 steps, export, unpack, publish".padEnd(58)} ${c.median.toFixed(1).padStart(10)} ${c.p95.toFixed(1).padStart(10)}`);
  console.log(`${"c. cached: read the Dockerfile, digest, found".padEnd(58)} ${h.median.toFixed(2).padStart(10)} ${h.p95.toFixed(2).padStart(10)}`);
  console.log(`\nratio cold build/floor: ${(c.median / f.median).toFixed(2)}x median; cached/floor: ${(h.median / f.median).toFixed(4)}x median`);
} finally {
  for (const vm of await fixture.driver.list({})) await fixture.driver.remove(vm.name);
  await registry.stop();
  rmSync(scratch, { recursive: true, force: true });
  rmSync(repo, { recursive: true, force: true });
  expectNoGvisorLeaksAndCleanUp(fixture);
}
