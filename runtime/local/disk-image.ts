// Disk images for volume quotas: sparse fixed-size ext4 images, formatted, loop-mounted, resized and
// released with e2fsprogs and util-linux. Formatting is slow enough to matter on a boot's path, so one spare of
// each size is kept ready.
import { chmodSync, chownSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statfsSync, statSync, truncateSync } from "node:fs";
import { randomHex } from "../bun-crypto";
import { basename, dirname, join } from "node:path";
import { processAlive, processStartTime } from "../proc-stat";
import { mountHolders } from "./mount-holders";

const MIB = 1024 * 1024;

/**
 * nosuid,nodev on the host mount are inherited, locked, by the VM's bind (an rw bind alone loses them
 * under crun 1.8.1); discard gives blocks the guest frees back to the host; noinit_itable skips zeroing
 * inode tables, which a sparse image already reads as zeros.
 */
const MOUNT_OPTIONS = "loop,nosuid,nodev,noatime,discard,noinit_itable";
const TOOL_PATH = `${process.env.PATH ?? ""}:/usr/sbin:/sbin:/usr/bin:/bin`;

export function diskTool(name: string): string | null {
  return Bun.which(name, { PATH: TOOL_PATH });
}

export async function runTool(argv: string[], okCodes: number[] = [0]): Promise<void> {
  const [tool = "", ...args] = argv;
  // Every tool used here reports failures on stderr; stdout is not read (one pipe less per call).
  const proc = Bun.spawn([diskTool(tool) ?? tool, ...args], { stdin: "ignore", stdout: "ignore", stderr: "pipe" });
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  if (!okCodes.includes(code)) throw new Error(`${tool} failed (exit ${code}): ${stderr.trim().split("\n").slice(-3).join(" ") || "no message"}`);
}

/**
 * A new sparse image of `sizeMib`, formatted ext4. No reserved blocks (the guest may use all of it); no
 * resize_inode, whose reserved GDT blocks are most of what mkfs writes and serve only
 * online growth, which the driver does not do (resizeDisk). `background`: at the lowest CPU and I/O
 * priority, so that it yields to boots and commands.
 */
export async function formatDisk(path: string, sizeMib: number, background = false): Promise<void> {
  closeSync(openSync(path, "w", 0o600));
  truncateSync(path, sizeMib * MIB);
  const mkfs = ["mkfs.ext4", "-q", "-F", "-m", "0", "-O", "^resize_inode", "-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard", path];
  await runTool(background ? lowPriority(mkfs) : mkfs);
}

/** `argv` under `nice -n 19` and `ionice -c 3` (when present), by absolute path: nice searches its own PATH. */
function lowPriority(argv: string[]): string[] {
  const [tool = "", ...args] = argv;
  const nice = diskTool("nice");
  const ionice = diskTool("ionice");
  if (!nice) return argv;
  return [nice, "-n", "19", ...(ionice ? [ionice, "-c", "3"] : []), diskTool(tool) ?? tool, ...args];
}

/** Formatted images kept ready, one per size, so a new volume costs a rename instead of a mkfs. */
export class SpareDisks {
  private readonly refilling = new Set<number>();

  constructor(private readonly dir: string) {}

  /** Moves a ready image of `sizeMib` to `dest`; false if there is none. */
  take(sizeMib: number, dest: string): boolean {
    try {
      renameSync(this.spare(sizeMib), dest);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
      throw error;
    }
  }

  /**
   * Makes the next spare of `sizeMib` in the background. Called after a boot, not during it: formatting
   * beside `crun run` on a small host slows the boot down more than the spare saves.
   */
  refill(sizeMib: number): void {
    if (this.refilling.has(sizeMib) || existsSync(this.spare(sizeMib))) return;
    this.refilling.add(sizeMib);
    // Unique per process: Workers and processes sharing the state dir may refill at once; the last rename wins.
    // The maker's pid and start time in the name tell removePartial whether it is still being made.
    const partial = join(this.dir, `${sizeMib}.img.${process.pid}-${processStartTime(process.pid)}-${randomHex(4)}.partial`);
    (async () => {
      // Not recursive: once the state dir is gone (a test's teardown), nothing is recreated.
      if (!existsSync(this.dir)) mkdirSync(this.dir, { mode: 0o700 });
      await formatDisk(partial, sizeMib, true);
      renameSync(partial, this.spare(sizeMib));
    })()
      .catch(() => rmSync(partial, { force: true }))
      .finally(() => this.refilling.delete(sizeMib));
  }

  private spare(sizeMib: number): string {
    return join(this.dir, `${sizeMib}.img`);
  }

  /**
   * Half-made spares a crash left behind: those whose maker is gone. One a live process is still formatting
   * (this process, before a restart in place, or a Worker) is left to it: it renames or removes its own.
   */
  removePartial(): string[] {
    const partial = existsSync(this.dir) ? readdirSync(this.dir).filter((name) => name.endsWith(".partial") && !makerAlive(name)) : [];
    for (const name of partial) rmSync(join(this.dir, name), { force: true });
    return partial;
  }
}

/** Whether the process named in a partial spare's name (`<size>.img.<pid>-<start time>-<hex>.partial`) still runs. */
function makerAlive(name: string): boolean {
  const maker = /\.img\.(\d+)-(\d+)-[0-9a-f]+\.partial$/.exec(name);
  return maker !== null && processAlive(Number(maker[1]), maker[2]!);
}

/** Whether something is mounted at `dir` (it lies on another filesystem than its parent). */
export function isMounted(dir: string): boolean {
  try {
    return statSync(dir).dev !== statSync(dirname(dir)).dev;
  } catch {
    return false;
  }
}

export async function mountDisk(image: string, dir: string): Promise<void> {
  await runTool(["mount", "-t", "ext4", "-o", MOUNT_OPTIONS, image, dir]);
}

/** The filesystem root belongs to the VM's root uid; mkfs's root-owned lost+found would show as nobody. */
export function adoptDiskRoot(dir: string, hostUid: number): void {
  if (statSync(dir).uid === hostUid) return;
  rmSync(join(dir, "lost+found"), { recursive: true, force: true });
  chownSync(dir, hostUid, hostUid);
  chmodSync(dir, 0o700);
}

/** How the kernel names `path` in a loop device's backing_file: without symlinks. */
function kernelPath(path: string): string {
  try {
    return join(realpathSync(dirname(path)), basename(path));
  } catch {
    return path;
  }
}

/** Loop devices backed by the image at `path`. */
function loopDevicesOf(path: string): string[] {
  const target = kernelPath(path);
  return loopDevices((backing) => backing === target);
}

/** Loop devices (`/dev/loopN`) whose backing file satisfies `match` (a deleted file still counts). */
export function loopDevices(match: (backingFile: string) => boolean): string[] {
  const devices: string[] = [];
  for (const name of readdirSync("/sys/block").filter((n) => n.startsWith("loop"))) {
    let backing: string;
    try {
      backing = readFileSync(`/sys/block/${name}/loop/backing_file`, "utf8").trim().replace(/ \(deleted\)$/, "");
    } catch {
      continue; // not bound to a file
    }
    if (match(backing)) devices.push(`/dev/${name}`);
  }
  return devices;
}

/**
 * Unmounts each of `dirs` that is a mount point, then waits (up to 2 s) until no loop device uses
 * `image`. The loop device goes by itself (autoclear) once the filesystem is released, which can lag if
 * another mount namespace (a VM being created at that moment) briefly holds a copy of the mount; past
 * 2 s it is detached here, which frees it as soon as that copy goes.
 */
export async function unmountDisk(image: string, ...dirs: string[]): Promise<void> {
  for (const dir of dirs) if (isMounted(dir)) await unmount(dir);
  const deadline = Date.now() + 2_000;
  // The kernel detaches an autoclear loop device from a work queue, a moment after the unmount.
  while (loopDevicesOf(image).length > 0 && Date.now() < deadline) await Bun.sleep(2);
  const target = kernelPath(image);
  await detachLoops((backing) => backing === target);
}

/** `umount dir`; a failure names what holds the mount (mount-holders.ts). */
async function unmount(dir: string): Promise<void> {
  try {
    await runTool(["umount", dir]);
  } catch (error) {
    const holders = mountHolders(dir);
    throw new Error(`${(error as Error).message}; held by: ${holders.length > 0 ? holders.join("; ") : "no process or mount of this namespace"}`);
  }
}

/** `losetup -d` each matching loop device; a device still in use is then freed as soon as it is released. */
export async function detachLoops(match: (backingFile: string) => boolean, also: (device: string) => boolean = () => true): Promise<string[]> {
  const devices = loopDevices(match).filter(also);
  for (const device of devices) await runTool(["losetup", "-d", device]).catch(() => undefined);
  return devices;
}

/** Loop devices mounted in this mount namespace (their `/dev/loopN` is a mount source in mountinfo). */
export function mountedLoopDevices(): Set<string> {
  const sources = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => line.split(" - ")[1]?.split(" ")[1] ?? "");
  return new Set(sources.filter((source) => source.startsWith("/dev/loop")));
}

/** MiB in use on the filesystem mounted at `dir`. */
export function usedMib(dir: string): number {
  const fs = statfsSync(dir);
  return Math.ceil(((Number(fs.blocks) - Number(fs.bfree)) * Number(fs.bsize)) / MIB);
}

/**
 * Resizes an unmounted disk (offline: online growth needs CAP_SYS_RESOURCE, which root may lack in a
 * container, as on the machine this was written on). resize2fs refuses a shrink when the files do not fit.
 */
export async function resizeDisk(image: string, fromMib: number, toMib: number): Promise<void> {
  // e2fsck: 0 clean, 1 errors fixed; resize2fs insists on a fresh check first.
  await runTool(["e2fsck", "-f", "-p", image], [0, 1]);
  if (toMib > fromMib) truncateSync(image, toMib * MIB);
  await runTool(["resize2fs", image, `${toMib}M`]);
  if (toMib < fromMib) truncateSync(image, toMib * MIB);
}
