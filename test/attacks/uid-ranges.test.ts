// Two managers on one host used to map the same session id to the same host uid range:
// uid slots were claimed per runtime dir. Real manager processes and VMs, then the driver's startup
// clean-up against a registry of its own.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createLocalDriver } from "../../runtime/local/index";
import { UidRegistry } from "../../runtime/local/uid-registry";
import { UIDS_PER_VM } from "../../runtime/local/volumes";
import { createClient } from "../../sdk/index";
import { eventually } from "../actors/fixture";
import { makeTempDir } from "../helpers";
import { startManager, type ManagerProcess } from "../manager-process";
import { expectNoLeaksAndCleanUp, heldUidRanges, prepareLocalRuntime } from "../runtime/local-target";

const FIRST_HOST_UID = 1 << 30;
const cgroupParent = `ss-uids-${randomBytes(3).toString("hex")}`;
let image: string;
const dirs: string[] = [];
const managers: ManagerProcess[] = [];

function tempDir(prefix: string): string {
  const dir = makeTempDir(prefix);
  dirs.push(dir);
  return dir;
}

beforeAll(async () => {
  image = await prepareLocalRuntime();
}, 600_000);

afterAll(async () => {
  for (const manager of managers) if (manager.proc.exitCode === null && manager.proc.signalCode === null) await manager.stop();
  for (const manager of managers) {
    const stateDir = join(manager.runtimeDir, "local");
    const driver = createLocalDriver({ stateDir, rootfsDir: image, cgroupParent });
    for (const vm of await driver.list({})) await driver.remove(vm.name);
    expectNoLeaksAndCleanUp({ driver, image, stateDir, cgroupParent });
    dirs.push(manager.runtimeDir);
  }
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}, 120_000);

/** The host uid the guest's root maps to, read inside the VM. */
async function guestRootHostUid(client: ReturnType<typeof createClient>, sessionId: string, repo: string): Promise<number> {
  const result = await client.run(sessionId, { command: "cat /proc/self/uid_map", cwd: repo });
  const [inside, outside, count] = result.stdout.trim().split(/\s+/).map(Number);
  expect([inside, count]).toEqual([0, UIDS_PER_VM]);
  return outside!;
}

describe("uid ranges across managers", () => {
  test("two managers → disjoint uid ranges, even for the same session id", async () => {
    const started = [];
    for (const name of ["a", "b"]) {
      const manager = await startManager(tempDir(`ss-uids-${name}-`), { SANDBOX_CGROUP_PARENT: cgroupParent, SANDBOX_RUNTIME: "local", SANDBOX_ROOTFS_DIR: image });
      managers.push(manager);
      const client = createClient({ url: manager.url, token: manager.token });
      const repo = tempDir(`ss-uids-repo-${name}-`);
      // The same session id gives the same VM name, so both start probing at the same slot.
      await client.sessions.register({ id: "ses_same", directory: repo });
      started.push({ manager, client, repo, hostUid: await guestRootHostUid(client, "ses_same", repo) });
    }
    const [a, b] = started;
    expect(Math.abs(a!.hostUid - b!.hostUid)).toBeGreaterThanOrEqual(UIDS_PER_VM);
    // Each runtime dir holds exactly its own range in the host-wide registry.
    expect(heldUidRanges(join(a!.manager.runtimeDir, "local"))).toEqual([a!.hostUid]);
    expect(heldUidRanges(join(b!.manager.runtimeDir, "local"))).toEqual([b!.hostUid]);

    // Removing b's VM frees b's range only; a's VM keeps its range and keeps working.
    const vmName = (await b!.client.vms.list()).vms[0]!.name;
    await b!.client.vms.remove(vmName);
    await eventually(() => heldUidRanges(join(b!.manager.runtimeDir, "local")).length === 0, 30_000);
    expect(heldUidRanges(join(a!.manager.runtimeDir, "local"))).toEqual([a!.hostUid]);
    expect(await guestRootHostUid(a!.client, "ses_same", a!.repo)).toBe(a!.hostUid);
  });
});

describe("startup clean-up of uid claims", () => {
  test("a restart frees this runtime dir's leaked uid claims only; another's claims stay, even on a conflict", async () => {
    const registryDir = join(tempDir("ss-uids-registry-"), "uid-ranges");
    const mine = tempDir("ss-uids-mine-");
    const theirs = tempDir("ss-uids-theirs-");
    const driver = createLocalDriver({ stateDir: mine, rootfsDir: image, cgroupParent, uidRegistryDir: registryDir });
    const ours = new UidRegistry(registryDir, mine);
    const other = new UidRegistry(registryDir, theirs);
    const base = (slot: number) => FIRST_HOST_UID + slot * UIDS_PER_VM;
    // A crash between claiming a range and writing the volume record, in each runtime dir.
    expect(ours.claim("leaked-mine", base(1))).toBe(true);
    expect(other.claim("leaked-theirs", base(2))).toBe(true);
    // Volumes from before the registry: slots claimed in <state>/uid-slots/ only; slot 4 is now someone else's.
    expect(other.claim("their-volume", base(4))).toBe(true);
    for (const [name, slot] of [["old-volume", 3], ["clashing-volume", 4]] as const) {
      mkdirSync(join(mine, "volumes", name, "data"), { recursive: true });
      writeFileSync(join(mine, "volumes", name, "volume.json"), JSON.stringify({ name, slot, createdAt: Date.now() }));
      mkdirSync(join(mine, "uid-slots"), { recursive: true });
      writeFileSync(join(mine, "uid-slots", String(slot)), name);
    }

    const report = await driver.cleanUpIncomplete!();
    expect(report).toContain(`uid range ${base(1)} of volume leaked-mine`);
    expect(report.find((line) => line.includes("clashing-volume"))).toContain(`is also claimed by ${theirs} (volume their-volume)`);
    expect(ours.ownClaims().sort((x, y) => x.firstUid - y.firstUid)).toEqual([{ firstUid: base(3), volume: "old-volume" }]);
    expect(other.ownClaims().sort((x, y) => x.firstUid - y.firstUid)).toEqual([
      { firstUid: base(2), volume: "leaked-theirs" },
      { firstUid: base(4), volume: "their-volume" },
    ]);
    expect(existsSync(join(mine, "uid-slots"))).toBe(false);

    // Removing a volume frees its range only if this runtime dir holds it.
    await driver.removeVolume!("clashing-volume");
    await driver.removeVolume!("old-volume");
    expect(ours.ownClaims()).toEqual([]);
    expect(other.ownClaims()).toHaveLength(2);
  });
});
