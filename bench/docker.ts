// What Docker in a gVisor VM costs (docs/docker.md): the daemon ready after the first command of a fresh
// docker VM (boot, the helper's install and `sandbox-docker start` until `docker version` shows a server),
// against the floor, the same VM booted for one command; and `docker run --rm` of a small image in a running
// docker VM, against a plain command in that VM. Interleaved in one run; the image is the Docker guest image
// (scripts/build-docker-rootfs.sh, built once and cached).
//
//   bun run bench:docker        (BENCH_RUNS, default 5)
import { DOCKER_HELPER, INSTALL_AND_RUN } from "../app/services/docker-helper";
import type { VmSpec } from "../runtime/driver";
import { GUEST_HOME } from "../runtime/guest-layout";
import { expectNoGvisorLeaksAndCleanUp, makeGvisorFixture } from "../test/runtime/gvisor-target";
import { stats, timed } from "./exec-support";

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const built = Bun.spawnSync(["bash", `${import.meta.dir}/../scripts/build-docker-rootfs.sh`], { stdout: "pipe", stderr: "inherit" });
if (built.exitCode !== 0) throw new Error("scripts/build-docker-rootfs.sh failed");
const image = built.stdout.toString().trim();
const fixture = await makeGvisorFixture();

const spec = (name: string): VmSpec => ({
  name, image, cpus: 2, memoryMib: 1024, mounts: [], tmpSizeMib: 64, volume: { name }, diskMib: 512, labels: {}, network: { mode: "none" }, docker: true,
});

/** `sh -c script` with its arguments in the VM; throws with the output unless it exits 0. */
async function sh(name: string, script: string, ...args: string[]): Promise<void> {
  let out = "";
  const collect = (chunk: Uint8Array) => void (out += Buffer.from(chunk).toString());
  const result = await fixture.driver.exec(name, { argv: ["sh", "-c", script, ...args], cwd: "/", env: { HOME: GUEST_HOME }, timeoutMs: 300_000 }, { stdout: collect, stderr: collect });
  if (result.exitCode !== 0) throw new Error(`${args.at(-1) ?? script} → exit ${result.exitCode}: ${out}`);
}

/** The helper installed and `sandbox-docker start` run, as the manager's start route does. */
const startDocker = (name: string) => sh(name, INSTALL_AND_RUN, "sandbox-docker", DOCKER_HELPER, "start");

try {
  const floor: number[] = [];
  const cold: number[] = [];
  const plain: number[] = [];
  const run: number[] = [];
  // One VM kept running for the warm paths, with a small image built in it.
  await fixture.driver.create(spec("bench-docker-warm"));
  await startDocker("bench-docker-warm");
  await sh("bench-docker-warm", "mkdir -p /tmp/img && cd /tmp/img && cp /bin/busybox . && printf '%s\\n' 'FROM scratch' 'COPY busybox /bin/busybox' > Dockerfile && docker build -q -t bench/busybox . >/dev/null");
  for (let i = 0; i < RUNS; i++) {
    floor.push(
      await timed(async () => {
        await fixture.driver.create(spec(`bench-docker-floor-${i}`));
        await sh(`bench-docker-floor-${i}`, "true");
      }),
    );
    await fixture.driver.remove(`bench-docker-floor-${i}`);
    cold.push(
      await timed(async () => {
        await fixture.driver.create(spec(`bench-docker-cold-${i}`));
        await startDocker(`bench-docker-cold-${i}`);
      }),
    );
    await fixture.driver.remove(`bench-docker-cold-${i}`);
    plain.push(await timed(() => sh("bench-docker-warm", "/bin/busybox true")));
    run.push(await timed(() => sh("bench-docker-warm", "docker run --rm bench/busybox /bin/busybox true")));
  }
  const [f, c, p, r] = [stats(floor), stats(cold), stats(plain), stats(run)];
  console.log(`\n${RUNS} runs each, interleaved, gVisor tier (runsc --platform=ptrace), docker VMs of 2 CPUs and 1 GiB\n`);
  console.log(`${"path".padEnd(62)} ${"median ms".padStart(10)} ${"p95 ms".padStart(10)}`);
  const line = (label: string, s: { median: number; p95: number }) => console.log(`${label.padEnd(62)} ${s.median.toFixed(1).padStart(10)} ${s.p95.toFixed(1).padStart(10)}`);
  line("a. floor: create a docker VM, first command `true`", f);
  line("b. cold: create a docker VM, dockerd ready (sandbox-docker start)", c);
  line("c. warm VM: a command (busybox true)", p);
  line("d. warm VM: docker run --rm of a busybox image", r);
  console.log(`\nratio cold dockerd/floor: ${(c.median / f.median).toFixed(2)}x median; docker run/command: ${(r.median / p.median).toFixed(2)}x median`);
} finally {
  for (const vm of await fixture.driver.list({})) await fixture.driver.remove(vm.name);
  for (const volume of (await fixture.driver.listVolumes?.()) ?? []) await fixture.driver.removeVolume?.(volume);
  expectNoGvisorLeaksAndCleanUp(fixture);
}
