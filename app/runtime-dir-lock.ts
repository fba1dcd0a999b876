// One manager per runtime dir: an exclusive flock on `<runtime dir>/manager.lock`, taken at startup before
// anything reads or changes the dir and held for the life of the process. Without it a second manager
// given the same SANDBOX_RUNTIME_DIR would remove the first one's VMs in its startup recovery.
import { closeSync, constants, existsSync, fchmodSync, fstatSync, ftruncateSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { ConfigError } from "./config";
import { tryLockExclusive } from "./flock";

/** Exported so the tests find the lock file. */
export const LOCK_FILE = "manager.lock";

/** Written into the lock file by its holder, so a refused manager can name it. */
type LockHolder = { pid: number; startedAt: string; dataDir: string };

/** The process the kernel says holds the lock (from /proc/locks), and who runs it. */
type LockOwner = { pid: number; user: string; command: string };

/** Thrown when another running manager, or another process, holds the runtime dir. */
class RuntimeDirLockedError extends ConfigError {
  readonly code = "RUNTIME_DIR_LOCKED";
  constructor(runtimeDir: string, holder: LockHolder | undefined, owner: LockOwner | undefined) {
    // The file's own word counts only when its pid is the kernel's holder: anything else is not a manager.
    const manager = holder && (!owner || owner.pid === holder.pid);
    const who = manager
      ? `another manager is using the runtime dir ${runtimeDir} (pid ${holder.pid}, started ${holder.startedAt}, data dir ${holder.dataDir}${owner ? `, user ${owner.user}` : ""})`
      : owner
        ? `the runtime dir ${runtimeDir} is locked by pid ${owner.pid} (user ${owner.user}: ${owner.command}), which is not a manager`
        : `another manager is using the runtime dir ${runtimeDir} (it is still starting)`;
    super(`${who}: stop that process first, or give this manager its own SANDBOX_RUNTIME_DIR (unset, each data dir gets its own)`);
  }
}

type RuntimeDirLock = { path: string; fd: number };

/** Creates the runtime dir if needed and locks it; the lock goes when this process ends, however it ends. */
export function lockRuntimeDir(runtimeDir: string, dataDir: string): RuntimeDirLock {
  const path = join(runtimeDir, LOCK_FILE);
  let fd: number;
  try {
    // 0755: the VMs' uids must traverse this dir (see Config.runtimeDir), and only its owner may write it.
    mkdirSync(runtimeDir, { recursive: true, mode: 0o755 });
    // 0600, and ours: a user who could open the file could flock it too (flock needs only a read-only
    // descriptor) and so keep every manager from starting. An older file's mode is corrected here.
    fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    throw new ConfigError(`SANDBOX_RUNTIME_DIR ${runtimeDir} cannot be used (${(error as Error).message}): point it at a directory this user can create and write`);
  }
  const problem = unsafeLockFile(fd, runtimeDir);
  if (problem) {
    closeSync(fd);
    throw new ConfigError(`${path} ${problem}`);
  }
  let locked: boolean;
  try {
    locked = tryLockExclusive(fd);
  } catch (error) {
    closeSync(fd);
    throw new ConfigError(`cannot lock ${path} (${(error as Error).message}): put SANDBOX_RUNTIME_DIR on a local filesystem`);
  }
  if (!locked) {
    closeSync(fd);
    throw new RuntimeDirLockedError(runtimeDir, readHolder(path), lockOwner(path));
  }
  const holder: LockHolder = { pid: process.pid, startedAt: new Date().toISOString(), dataDir };
  ftruncateSync(fd, 0);
  writeSync(fd, JSON.stringify(holder) + "\n", 0);
  return { path, fd };
}

function readHolder(path: string): LockHolder | undefined {
  try {
    const holder = JSON.parse(readFileSync(path, "utf8")) as LockHolder;
    return typeof holder.pid === "number" ? holder : undefined;
  } catch {
    return undefined; // empty: the holder has locked but not yet written itself
  }
}

/** Why the lock file or its directory would let another user hold or replace the lock, or undefined. */
function unsafeLockFile(fd: number, runtimeDir: string): string | undefined {
  const uid = process.getuid?.() ?? 0;
  const file = fstatSync(fd);
  if (file.uid !== uid) return `belongs to uid ${file.uid}, not this manager's (${uid}): remove it (only its owner can lock the runtime dir)`;
  if ((file.mode & 0o077) !== 0) fchmodSync(fd, 0o600);
  const dir = statSync(runtimeDir);
  if ((dir.mode & 0o022) !== 0 || dir.uid !== uid) {
    return `lies in ${runtimeDir}, which ${dir.uid !== uid ? `belongs to uid ${dir.uid}` : "others can write"}: any user could replace the lock file; \`chmod 755 ${runtimeDir}\` (owned by this manager's user)`;
  }
  return undefined;
}

/** The process holding a flock on `path`, by the inode in /proc/locks, or undefined if none is found. */
function lockOwner(path: string): LockOwner | undefined {
  let inode: number;
  try {
    inode = statSync(path).ino;
  } catch {
    return undefined;
  }
  let locks = "";
  try {
    locks = readFileSync("/proc/locks", "utf8");
  } catch {
    return undefined;
  }
  // "1: FLOCK  ADVISORY  WRITE 12345 fd:01:123456 0 EOF": the pid, then major:minor:inode. That pid took
  // the lock; a child that inherited the descriptor may hold it now, so a gone pid sends us looking.
  for (const line of locks.split("\n")) {
    const fields = line.trim().split(/\s+/);
    if (fields[1] !== "FLOCK" || Number(fields[5]?.split(":")[2]) !== inode) continue;
    const locker = Number(fields[4]);
    const pid = existsSync(`/proc/${locker}`) ? locker : (processesWithOpen(path)[0] ?? locker);
    return { pid, user: userOf(pid), command: commandOf(pid) };
  }
  return undefined;
}

/** The processes (other than this one) with `path` open. */
function processesWithOpen(path: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc").filter((entry) => /^\d+$/.test(entry) && Number(entry) !== process.pid)) {
    try {
      if (readdirSync(`/proc/${name}/fd`).some((fd) => readlinkSync(`/proc/${name}/fd/${fd}`) === path)) pids.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

function userOf(pid: number): string {
  try {
    const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);
    const entry = readFileSync("/etc/passwd", "utf8").split("\n").find((line) => line.split(":")[2] === String(uid));
    return entry ? `${entry.split(":")[0]} (uid ${uid})` : `uid ${uid}`;
  } catch {
    return "unknown";
  }
}

function commandOf(pid: number): string {
  try {
    // Printable characters only: another user's command line is not ours to put on a terminal raw.
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ").replace(/[^\x20-\x7e]/g, "?").slice(0, 200);
  } catch {
    return "unknown command";
  }
}
