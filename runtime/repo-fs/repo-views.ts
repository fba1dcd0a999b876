// The repository views of one VM: one repo-fs daemon per guarded mount (a repository, or a linked
// worktree's main git dir), each serving that directory at a mount point the runtime binds into the VM
// instead of the directory itself. Started at each boot, stopped at each power-off. The mount points live
// under the state dir's `repo-views/<vm>/`, never inside the VM's own directory: that one is removed
// recursively, and a recursive removal must never walk into a user's repository.
import { existsSync, mkdirSync, openSync, closeSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { BindMount } from "../driver";
import { readMountinfo } from "../local/cgroup-layout";
import { processAlive, processStartTime } from "../proc-stat";

/** A started view: which daemon serves which mount point. */
type ViewRecord = { pid: number; startTime: string; mountPoint: string; mount: BindMount };

const READY_TIMEOUT_MS = 10_000;
const EXIT_GRACE_MS = 2_000;

export function repoViewsDir(stateDir: string, vmName: string): string {
  return join(stateDir, "repo-views", vmName);
}

/** Where the view of the VM's `index`-th guarded mount is mounted on the host. */
function repoViewPath(stateDir: string, vmName: string, index: number): string {
  return join(repoViewsDir(stateDir, vmName), String(index));
}

/** Whether `path` is a view's mount point (a driver reads its own mount sources back, e.g. from msb inspect). */
export function isRepoViewPath(path: string): boolean {
  return /\/repo-views\/[A-Za-z0-9][A-Za-z0-9._-]*\/\d+$/.test(path);
}

/**
 * Whether every view a VM has is still served; true without views. The daemon's life is enough to ask
 * about: it ends when its mount goes (fuse_loop returns), and its mount answers nothing once it is gone.
 */
export function repoViewsAlive(stateDir: string, vmName: string): boolean {
  return viewRecords(stateDir, vmName).every((record) => record.pid > 0 && processAlive(record.pid, record.startTime));
}

/** The guarded mounts a VM's views were started for (to start them again after a reboot). */
export function repoViewMounts(stateDir: string, vmName: string): BindMount[] {
  return viewRecords(stateDir, vmName).map((record) => record.mount);
}

function viewRecords(stateDir: string, vmName: string): ViewRecord[] {
  const dir = repoViewsDir(stateDir, vmName);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith(".json"))
    .sort((a, b) => parseInt(a, 10) - parseInt(b, 10))
    .map((name) => JSON.parse(readFileSync(join(dir, name), "utf8")) as ViewRecord);
}

/** The host source of each mount: its view for a guarded one, the path itself otherwise. */
export function mountSources(stateDir: string, vmName: string, mounts: BindMount[]): Map<BindMount, string> {
  const sources = new Map<BindMount, string>();
  let index = 0;
  for (const mount of mounts) sources.set(mount, mount.guard ? repoViewPath(stateDir, vmName, index++) : mount.hostPath);
  return sources;
}

function isMounted(path: string): boolean {
  return readMountinfo().some((entry) => entry.mountPoint === path);
}

function daemonArgs(binary: string, mount: BindMount, mountPoint: string, guestId: number, logFile: string): string[] {
  const guard = mount.guard!;
  return [
    binary,
    "--root", mount.hostPath,
    "--mountpoint", mountPoint,
    ...(mount.pin ? ["--pin", `${mount.pin.dev}:${mount.pin.ino}`] : []),
    "--guest-id", String(guestId),
    "--log", logFile,
    ...(guard.gitDirRoot ? ["--gitdir-root"] : []),
    ...(guard.gitDirs ?? []).flatMap((dir) => ["--gitdir", dir]),
    ...(guard.keep ?? []).flatMap((dir) => ["--keep", dir]),
  ];
}

async function waitUntilMounted(mountPoint: string, pid: number, startTime: string, errorFile: string): Promise<void> {
  const deadline = performance.now() + READY_TIMEOUT_MS;
  while (!isMounted(mountPoint)) {
    if (!processAlive(pid, startTime)) {
      const message = existsSync(errorFile) ? readFileSync(errorFile, "utf8").trim().slice(0, 2000) : "";
      throw new Error(`the repository view of ${mountPoint} exited before it was ready: ${message || "no message"}`);
    }
    if (performance.now() > deadline) throw new Error(`the repository view of ${mountPoint} was not ready within ${READY_TIMEOUT_MS} ms`);
    await Bun.sleep(2);
  }
}

/**
 * Starts a view for every guarded mount. `guestId`: the host uid (and gid) of the guest's root, which the
 * owner's files show as. Whatever a previous boot left is stopped first.
 */
export async function startRepoViews(stateDir: string, vmName: string, mounts: BindMount[], guestId: number, binary: string): Promise<void> {
  await stopRepoViews(stateDir, vmName);
  const guarded = mounts.filter((mount) => mount.guard);
  if (guarded.length === 0) return;
  const dir = repoViewsDir(stateDir, vmName);
  mkdirSync(join(stateDir, "repo-views"), { recursive: true, mode: 0o711 });
  mkdirSync(dir, { recursive: true, mode: 0o711 });
  try {
    for (const [index, mount] of guarded.entries()) {
      const mountPoint = repoViewPath(stateDir, vmName, index);
      mkdirSync(mountPoint, { mode: 0o700 });
      const errorFile = `${mountPoint}.err`;
      const pidFile = `${mountPoint}.pid`;
      const errors = openSync(errorFile, "w", 0o600);
      let exitCode: number;
      try {
        // The daemon mounts, then detaches (its parent, our child, exits at once): no manager thread, which
        // may be gone by then, is left to wait for it when it ends.
        const proc = Bun.spawn([...daemonArgs(binary, mount, mountPoint, guestId, `${mountPoint}.log`), "--pid-file", pidFile], { stdin: "ignore", stdout: errors, stderr: errors });
        exitCode = await proc.exited;
      } finally {
        closeSync(errors);
      }
      const pid = exitCode === 0 && existsSync(pidFile) ? Number(readFileSync(pidFile, "utf8").trim()) : 0;
      // Recorded even when it is gone already (no start time): the clean-up still finds its mount point.
      const startTime = (pid > 0 && processStartTime(pid)) || "";
      writeFileSync(`${mountPoint}.json`, JSON.stringify({ pid, startTime, mountPoint, mount } satisfies ViewRecord), { mode: 0o600 });
      await waitUntilMounted(mountPoint, pid, startTime, errorFile);
    }
  } catch (error) {
    await stopRepoViews(stateDir, vmName).catch(() => {});
    throw error;
  }
}

async function stopDaemon(record: ViewRecord): Promise<void> {
  if (record.pid <= 0 || !processAlive(record.pid, record.startTime)) return;
  process.kill(record.pid, "SIGTERM");
  const deadline = performance.now() + EXIT_GRACE_MS;
  while (processAlive(record.pid, record.startTime)) {
    if (performance.now() > deadline) {
      process.kill(record.pid, "SIGKILL");
      break;
    }
    await Bun.sleep(5);
  }
}

function detach(mountPoint: string): void {
  if (!isMounted(mountPoint)) return;
  Bun.spawnSync(["umount", "--lazy", mountPoint], { stdout: "ignore", stderr: "pipe" });
  if (isMounted(mountPoint)) throw new Error(`the repository view at ${mountPoint} could not be unmounted`);
}

/**
 * Stops every view of the VM: each daemon (only the process recorded, by pid and start time), its mount,
 * then the empty mount points and records, one entry at a time, never recursively.
 */
export async function stopRepoViews(stateDir: string, vmName: string): Promise<void> {
  const dir = repoViewsDir(stateDir, vmName);
  if (!existsSync(dir)) return;
  for (const record of viewRecords(stateDir, vmName)) {
    // Unmounted first: the daemon then ends on its own, and no guest request waits on a dying daemon.
    detach(record.mountPoint);
    await stopDaemon(record);
  }
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (/^\d+$/.test(entry)) {
      detach(path);
      rmdirSync(path);
    } else rmSync(path, { force: true });
  }
  rmdirSync(dir);
}

/** Views of VMs that no longer exist (a crash between steps), stopped; returns what went, for the log. */
export async function stopLeftoverRepoViews(stateDir: string, vmNames: string[]): Promise<string[]> {
  const root = join(stateDir, "repo-views");
  if (!existsSync(root)) return [];
  const known = new Set(vmNames);
  const removed: string[] = [];
  for (const name of readdirSync(root).filter((entry) => !known.has(entry))) {
    await stopRepoViews(stateDir, name);
    removed.push(`repository views of ${name}`);
  }
  return removed;
}
