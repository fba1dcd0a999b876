// Isolation tiers through the real manager process on this host (SANDBOX_RUNTIME unset = auto): which tiers
// /api/health offers, a session in the container tier by default, moved to gVisor by `auto` (the strongest
// tier that works here) and back (recreated each time, each tier keeping its home volume), a tier this host
// lacks refused, and nothing left behind in either tier: VMs, volumes, mounts, runsc processes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createGvisorDriver } from "../../runtime/gvisor/index";
import { createLocalDriver } from "../../runtime/local/index";
import { createClient, IsolationUnavailableError } from "../../sdk/index";
import { makeTempDir } from "../helpers";
import { startManager, type ManagerProcess } from "../manager-process";
import { expectNoLeaksAndCleanUp, prepareLocalRuntime } from "../runtime/local-target";

let image: string;
let dataDir: string;
let repo: string;
let manager: ManagerProcess;
let client: ReturnType<typeof createClient>;
const cgroupParent = `ss-tiers-${randomBytes(3).toString("hex")}`;

const drivers = () => [
  createLocalDriver({ stateDir: join(`${dataDir}-runtime`, "local"), rootfsDir: image, cgroupParent }),
  createGvisorDriver({ stateDir: join(`${dataDir}-runtime`, "gvisor"), rootfsDir: image, cgroupParent }),
];

beforeAll(async () => {
  image = await prepareLocalRuntime();
  dataDir = makeTempDir("ss-tiers-");
  repo = makeTempDir("ss-tiers-repo-");
  manager = await startManager(dataDir, { SANDBOX_CGROUP_PARENT: cgroupParent, SANDBOX_ROOTFS_DIR: image });
  client = createClient({ url: manager.url, token: manager.token });
}, 600_000);

afterAll(async () => {
  if (manager.proc.exitCode === null) await manager.stop();
  for (const driver of drivers()) {
    for (const vm of await driver.list({})) await driver.remove(vm.name);
    for (const volume of (await driver.listVolumes?.()) ?? []) await driver.removeVolume?.(volume);
  }
  rmSync(repo, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
  // Asserts no cgroup, VM dir, volume, uid range or disk is left in either tier, and removes the parent cgroups.
  const [local, gvisor] = drivers();
  expectNoLeaksAndCleanUp({ driver: local!, image, stateDir: join(`${dataDir}-runtime`, "local"), cgroupParent });
  expectNoLeaksAndCleanUp({ driver: gvisor!, image, stateDir: join(`${dataDir}-runtime`, "gvisor"), cgroupParent });
  rmSync(`${dataDir}-runtime`, { recursive: true, force: true });
}, 120_000);

/** gVisor reports its own fixed kernel version; a container shows the host's. */
const hostKernel = readFileSync("/proc/sys/kernel/osrelease", "utf8").trim();

describe("isolation tiers (real manager, SANDBOX_RUNTIME unset)", () => {
  test("health → the tiers this host runs, each with why; the default is the runtime in use (container)", async () => {
    const health = await client.health();
    expect(health.runtime.name).toBe("local");
    expect(health.runtime.notUsed.gvisor).toContain("sessions can choose it");
    expect(health.runtime.tiers?.container.available).toBe(true);
    expect(health.runtime.tiers?.gvisor.available).toBe(true);
    expect(health.runtime.tiers?.microvm.available).toBe(false);
    expect(health.runtime.tiers?.microvm.reason).toContain("kvm");
    expect((await client.settings.get()).isolation).toBe("container");
  });

  test("container by default; auto moves the session to gVisor and back again, each tier keeping its home", async () => {
    await client.sessions.register({ id: "ses_tiers", directory: repo });
    const first = await client.run("ses_tiers", { command: "uname -r; echo container-home > ~/where", cwd: repo });
    expect(first.stdout).toBe(`${hostKernel}\n`);

    await client.sandbox.set("ses_tiers", { isolation: "auto" });
    const moved = await client.run("ses_tiers", { command: "uname -r; cat ~/where 2>/dev/null || echo empty; echo gvisor-home > ~/where", cwd: repo });
    expect(moved.stdout.split("\n")[0]).not.toBe(hostKernel);
    expect(moved.stdout.split("\n")[1]).toBe("empty");
    expect(manager.stderrLines.some((line) => line.includes("VM recreated") && line.includes("isolation: expected gvisor, found container"))).toBe(true);

    await client.sandbox.set("ses_tiers", { isolation: "container" });
    expect((await client.run("ses_tiers", { command: "uname -r; cat ~/where", cwd: repo })).stdout).toBe(`${hostKernel}\ncontainer-home\n`);
    await client.sandbox.set("ses_tiers", { isolation: "gvisor" });
    expect((await client.run("ses_tiers", { command: "cat ~/where", cwd: repo })).stdout).toBe("gvisor-home\n");
    // One VM for the session, in one tier at a time.
    const listed = (await Promise.all(drivers().map((driver) => driver.list({})))).flat();
    expect(listed.map((vm) => vm.status)).toEqual(["running"]);
  });

  test("a tier this host lacks → 400 with the reason; the session keeps its tier", async () => {
    const error = (await client.sandbox.set("ses_tiers", { isolation: "microvm" }).catch((e) => e)) as IsolationUnavailableError;
    expect(error).toBeInstanceOf(IsolationUnavailableError);
    expect(error.message).toContain("isolation microvm is not available here");
    expect((await client.sandbox.get("ses_tiers")).isolation.effective).toBe("gvisor");
  });

  test("delete → the VM and its volume go from every tier; no mount or runsc process is left", async () => {
    const vmName = (await client.sandbox.get("ses_tiers")).vmName;
    await client.sessions.delete("ses_tiers");
    await manager.stop(); // a graceful stop waits for the removal under way
    for (const driver of drivers()) {
      expect(await driver.list({})).toEqual([]);
      expect(await driver.listVolumes!()).not.toContain(vmName);
    }
    expect(readFileSync("/proc/self/mountinfo", "utf8")).not.toContain(vmName);
    const runsc = Bun.spawnSync(["ps", "-eo", "args="]).stdout.toString().split("\n").filter((line) => line.includes("runsc") && line.includes(dataDir));
    expect(runsc).toEqual([]);
  });
});
