// Test wiring for the local driver: deps and rootfs (built once, cached), a temp state dir, leak checks.
import { expect } from "bun:test";
import { RuntimeError, type RuntimeDriver } from "../../runtime/driver";
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cgroupDirs, detectCgroupLayout } from "../../runtime/local/cgroup-layout";
import { createLocalDriver, ensureRootfs, type LocalDriver, type LocalDriverOptions } from "../../runtime/local/index";
import { loopDevices } from "../../runtime/local/disk-image";
import { INSTALL_DEPS_SCRIPT } from "../../runtime/local/rootfs";
import { DEFAULT_UID_REGISTRY_DIR, UidRegistry } from "../../runtime/local/uid-registry";

export type LocalFixture = { driver: LocalDriver; image: string; stateDir: string; cgroupParent: string };

/** A fresh machine (CI) has neither crun (nor runsc) nor the rootfs: install and build them here (cached after). */
export async function prepareLocalRuntime(): Promise<string> {
  if (!Bun.which("crun") || !Bun.which("runsc") || !existsSync("/usr/bin/tini-static") || !existsSync("/usr/include/fuse3/fuse.h")) {
    const code = await Bun.spawn(["bash", INSTALL_DEPS_SCRIPT], { stdout: "inherit", stderr: "inherit" }).exited;
    if (code !== 0) throw new Error(`${INSTALL_DEPS_SCRIPT} failed with exit ${code}`);
  }
  return ensureRootfs();
}

/** A driver built on the local driver's modules: the local tier itself, or the gvisor tier (gvisor-target.ts). */
export type EmbeddedDriverFactory = (options: LocalDriverOptions) => LocalDriver;

export async function makeLocalFixture(create: EmbeddedDriverFactory = createLocalDriver): Promise<LocalFixture> {
  const image = await prepareLocalRuntime();
  const stateDir = mkdtempSync(join(tmpdir(), "ss-local-state-"));
  // A parent of our own so leak checks can list exactly what this fixture created.
  const cgroupParent = `session-sandbox-test-${stateDir.slice(-6)}`;
  return { driver: create({ stateDir, rootfsDir: image, cgroupParent }), image, stateDir, cgroupParent };
}

/** The VM cgroups still present under the fixture's parent, in any hierarchy. */
export function leftoverCgroups(fixture: LocalFixture): string[] {
  const layout = detectCgroupLayout();
  if (!layout) return [];
  return cgroupDirs(layout, `/${fixture.cgroupParent}`).flatMap((dir) =>
    existsSync(dir) ? readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => `${dir}/${e.name}`) : [],
  );
}

/** The host-wide uid ranges a state dir still holds (freed with each volume). */
export function heldUidRanges(stateDir: string): number[] {
  return new UidRegistry(DEFAULT_UID_REGISTRY_DIR, stateDir).ownClaims().map((claim) => claim.firstUid);
}

/** Mount points under a state dir and loop devices backed by files under it (the volumes' disk images). */
export function leftoverDisks(stateDir: string): string[] {
  if (!existsSync(stateDir)) return [];
  const under = `${realpathSync(stateDir)}/`;
  // mountinfo's 5th field is the mount point (octal escapes aside, which temp dirs do not need).
  const mounts = readFileSync("/proc/self/mountinfo", "utf8").split("\n").map((line) => line.split(" ")[4] ?? "").filter((point) => point.startsWith(under));
  return [...mounts.map((point) => `mount ${point}`), ...loopDevices((backing) => backing.startsWith(under)).map((device) => `loop ${device}`)];
}

/** Unmounts and detaches what leftoverDisks found, so that deleting the state dir never recurses into a disk. */
function releaseDisks(stateDir: string): void {
  for (const leftover of leftoverDisks(stateDir)) {
    const [kind, path = ""] = leftover.split(" ");
    Bun.spawnSync(kind === "mount" ? ["umount", "-l", path] : ["losetup", "-d", path]);
  }
}

/** Repository views (repo-fs FUSE mounts) still mounted under the state dir. */
export function leftoverRepoViews(stateDir: string): string[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((point) => point.startsWith(`${join(stateDir, "repo-views")}/`));
}

/** Asserts nothing of the fixture's VMs is left (cgroups, VM dirs, volumes, uid ranges, disk mounts and loop devices), then deletes it all. */
export function expectNoLeaksAndCleanUp(fixture: LocalFixture): void {
  const cgroups = leftoverCgroups(fixture);
  const listed = (dir: string) => (existsSync(join(fixture.stateDir, dir)) ? readdirSync(join(fixture.stateDir, dir)) : []);
  const disks = leftoverDisks(fixture.stateDir);
  const repoViews = leftoverRepoViews(fixture.stateDir);
  const leftovers = { cgroups, vms: listed("vms"), volumes: listed("volumes"), uidRanges: heldUidRanges(fixture.stateDir), disks, repoViews };
  // Remove the (empty) parent cgroups this fixture created, whatever the assertion says.
  const layout = detectCgroupLayout();
  for (const dir of layout ? cgroupDirs(layout, `/${fixture.cgroupParent}`) : []) {
    try {
      rmdirSync(dir);
    } catch {
      // Absent, or busy because a VM leaked: the assertion below reports that.
    }
  }
  releaseDisks(fixture.stateDir);
  // Never remove the state dir recursively through a view: that would delete the repository behind it.
  for (const point of repoViews) Bun.spawnSync(["umount", "-l", point]);
  if (leftoverRepoViews(fixture.stateDir).length === 0) rmSync(fixture.stateDir, { recursive: true, force: true });
  expect(leftovers).toEqual({ cgroups: [], vms: [], volumes: [], uidRanges: [], disks: [], repoViews: [] });
}

/** A driver whose probe finds something missing: ping says no, and create is refused as UNAVAILABLE naming `problem`. */
export async function expectRefusedUntilFixed(driver: RuntimeDriver, problem: string): Promise<void> {
  expect(await driver.ping()).toBe(false);
  const error = await driver
    .create({ name: "never", image: "/", cpus: 1, memoryMib: 64, mounts: [], tmpSizeMib: 1, volume: { name: "never" }, labels: {}, network: { mode: "none" } })
    .catch((e: unknown) => e);
  expect(error).toBeInstanceOf(RuntimeError);
  expect((error as RuntimeError).code).toBe("UNAVAILABLE");
  expect((error as RuntimeError).message).toContain(problem);
}
