// Clean-up after a crash part-way through create or remove: VM dirs without a record, volume dirs
// without a record, and this state dir's uid claims whose volume never got one. Such leftovers are
// invisible to list(), so only this finds them. Run it only while nothing else drives the same state dir
// (manager startup, under the runtime dir lock). Other managers' uid claims are never touched.
import { existsSync, readdirSync, realpathSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { DriverContext } from "./context";
import { childCgroups } from "./cgroup-tree";
import { detachLoops, mountedLoopDevices } from "./disk-image";
import { removeVm } from "./lifecycle";
import type { UidRegistry } from "./uid-registry";
import { stopLeftoverRepoViews } from "../repo-fs/repo-views";

function entries(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir) : [];
}

/** Returns what it removed, for the log. Volumes of half-created VMs are kept: they may hold data. */
export async function cleanUpIncomplete(ctx: DriverContext): Promise<string[]> {
  const removed: string[] = [];
  for (const name of entries(ctx.paths.vmsDir)) {
    if (existsSync(ctx.paths.vmRecord(name))) continue;
    await removeVm(ctx, name, { keepVolume: true });
    removed.push(`vm ${name}`);
  }
  for (const name of entries(ctx.paths.volumesDir)) {
    if (existsSync(join(ctx.paths.volumeDir(name), "volume.json"))) continue;
    await ctx.volumes.disks.release(name); // a crash between mount and record: never rm -rf through a mount
    rmSync(ctx.paths.volumeDir(name), { recursive: true, force: true });
    removed.push(`volume ${name}`);
  }
  removed.push(...(await removeStrayCgroups(ctx)));
  removed.push(...(await ctx.runtime.cleanUpLeftovers(entries(ctx.paths.vmsDir))));
  removed.push(...(await stopLeftoverRepoViews(ctx.paths.stateDir, entries(ctx.paths.vmsDir))));
  removed.push(...(await releaseStrayDisks(ctx)));
  const registry = ctx.volumes.uidRegistry();
  for (const { firstUid, volume } of registry.ownClaims()) {
    const record = ctx.volumes.read(volume);
    if (record && ctx.volumes.hostUidBase(record.slot) === firstUid) continue;
    registry.release(volume, firstUid);
    removed.push(`uid range ${firstUid} of volume ${volume}`);
  }
  return [...removed, ...registerOwnVolumes(ctx, registry)];
}

/**
 * VM cgroups of this state dir with no VM record: a crun that a killed create had started can finish
 * after the VM directory was swept (the VM's processes then run on in it). Removing them as a VM without
 * a record kills those processes and deletes crun's state and the cgroups.
 */
async function removeStrayCgroups(ctx: DriverContext): Promise<string[]> {
  const removed: string[] = [];
  for (const cgroup of childCgroups(ctx.layout, ctx.paths.cgroupParentPath)) {
    const name = ctx.paths.vmOfCgroup(cgroup);
    if (name === undefined || existsSync(ctx.paths.vmRecord(name))) continue;
    await removeVm(ctx, name, { keepVolume: true });
    removed.push(`cgroup of vm ${name}`);
  }
  return removed;
}

/**
 * Loop devices on this state dir's images that nothing mounts here (e.g. the image of a volume deleted
 * while another mount namespace still held it), and spare disks a crash left half-formatted.
 */
async function releaseStrayDisks(ctx: DriverContext): Promise<string[]> {
  const mounted = mountedLoopDevices();
  const under = `${realpathSync(ctx.paths.stateDir)}/`;
  const loops = await detachLoops((backing) => backing.startsWith(under), (device) => !mounted.has(device));
  return [...loops.map((device) => `loop device ${device}`), ...ctx.volumes.disks.spares.removePartial().map((file) => `spare disk ${file}`)];
}

/**
 * Every volume with a record holds its range in the host-wide registry: volumes made before it existed
 * (claimed in `<state>/uid-slots/`, now removed) are registered here. A range someone else claimed
 * meanwhile cannot be taken back; the returned line says so.
 */
function registerOwnVolumes(ctx: DriverContext, registry: UidRegistry): string[] {
  const conflicts: string[] = [];
  for (const name of entries(ctx.paths.volumesDir)) {
    const record = ctx.volumes.read(name);
    if (!record) continue;
    const firstUid = ctx.volumes.hostUidBase(record.slot);
    if (registry.claim(name, firstUid) || registry.holds(name, firstUid)) continue;
    const holder = registry.holder(firstUid);
    conflicts.push(`uid range ${firstUid} of volume ${name} is also claimed by ${holder ? `${holder.stateDir} (volume ${holder.volume})` : "an unreadable claim"}: remove this VM so that it gets a range of its own`);
  }
  rmSync(ctx.paths.uidSlotsDir, { recursive: true, force: true });
  return conflicts;
}
