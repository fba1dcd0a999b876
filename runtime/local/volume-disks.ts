// Each volume's disk quota: its data dir is a sparse ext4 image of the spec's diskMib, loop-mounted on
// the host while the volume exists (mounted once; a start finds it mounted and costs nothing more). A
// guest that fills its home gets ENOSPC; the host loses at most the image's size.
import { existsSync, mkdirSync, renameSync, rmdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { adoptDiskRoot, formatDisk, isMounted, mountDisk, resizeDisk, runTool, SpareDisks, unmountDisk, usedMib } from "./disk-image";
import { GUEST_HOME } from "../guest-layout";
import type { StatePaths } from "./state-paths";

export class VolumeDisks {
  readonly spares: SpareDisks;
  private readonly mounting = new Map<string, Promise<void>>();

  constructor(private readonly paths: StatePaths) {
    this.spares = new SpareDisks(paths.spareDisksDir);
  }

  /** A new volume's image, from a ready spare when there is one (a rename instead of a mkfs). */
  async create(name: string, sizeMib: number): Promise<void> {
    if (!this.spares.take(sizeMib, this.paths.volumeDisk(name))) await formatDisk(this.paths.volumeDisk(name), sizeMib);
  }

  /** Mounts the disk at the data dir unless it already is (concurrent calls share one mount). */
  mount(name: string, hostUid: number): Promise<void> {
    const pending = this.mounting.get(name);
    if (pending) return pending;
    const data = this.paths.volumeData(name);
    const work = (async () => {
      if (!isMounted(data)) await mountDisk(this.paths.volumeDisk(name), data);
      adoptDiskRoot(data, hostUid);
    })().finally(() => this.mounting.delete(name));
    this.mounting.set(name, work);
    return work;
  }

  /** Resizes offline (the VM is gone during a recreate); a shrink is refused when the files do not fit. */
  async resize(name: string, fromMib: number, toMib: number): Promise<void> {
    const image = this.paths.volumeDisk(name);
    const data = this.paths.volumeData(name);
    const used = isMounted(data) ? usedMib(data) : undefined;
    await unmountDisk(image, data);
    try {
      await resizeDisk(image, fromMib, toMib);
    } catch (error) {
      if (toMib > fromMib) throw error;
      const files = used === undefined ? "its files" : `its ${used} MiB of files`;
      throw new Error(
        `volume ${name} cannot shrink from ${fromMib} to ${toMib} MiB: ${files} do not fit (${(error as Error).message}); set diskMib back to ${fromMib}, delete files in ${GUEST_HOME}, then shrink`,
      );
    }
  }

  /**
   * A volume made before disk quotas is a plain directory: its files are copied into a new image, then
   * `commit` records the disk (the point of no return), then the old directory goes. A crash before
   * `commit` leaves the old files in place (or in data.legacy, restored here); after it, only a leftover.
   */
  async migrate(name: string, sizeMib: number, hostUid: number, commit: () => void): Promise<void> {
    const image = this.paths.volumeDisk(name);
    const data = this.paths.volumeData(name);
    const legacy = join(this.paths.volumeDir(name), "data.legacy");
    const staging = join(this.paths.volumeDir(name), "staging");
    if (existsSync(legacy)) {
      rmdirSync(data); // the empty directory made after the files moved aside
      renameSync(legacy, data);
    }
    await unmountDisk(image, staging);
    rmSync(image, { force: true });
    await this.create(name, sizeMib);
    mkdirSync(staging, { recursive: true, mode: 0o700 });
    await mountDisk(image, staging);
    try {
      adoptDiskRoot(staging, hostUid);
      await runTool(["cp", "-a", "--", `${data}/.`, `${staging}/`]);
    } catch (error) {
      throw new Error(`volume ${name} predates disk quotas, and copying its files into a ${sizeMib} MiB disk failed (${(error as Error).message}): if they do not fit, raise diskMib`);
    } finally {
      await unmountDisk(image, staging);
      rmdirSync(staging);
    }
    renameSync(data, legacy);
    mkdirSync(data, { mode: 0o700 });
    commit();
    rmSync(legacy, { recursive: true, force: true });
  }

  /** Unmounts the disk and frees its loop device; must precede deleting the volume's files. */
  async release(name: string): Promise<void> {
    await this.mounting.get(name)?.catch(() => undefined); // a mount still under way would land after the check
    const dirs = [join(this.paths.volumeDir(name), "staging"), this.paths.volumeData(name)];
    await unmountDisk(this.paths.volumeDisk(name), ...dirs);
    // A mount started by another driver instance over the same state (another Worker, or a test's
    // main-thread driver) is not in `mounting` and may land just after: unmount once more if it did.
    for (let attempt = 0; attempt < 3 && dirs.some(isMounted); attempt++) {
      await Bun.sleep(50);
      await unmountDisk(this.paths.volumeDisk(name), ...dirs);
    }
    // Never delete recursively through a mount: that would delete the guest's files one by one.
    for (const dir of dirs) if (isMounted(dir)) throw new Error(`the disk of volume ${name} is still mounted at ${dir}`);
  }
}
