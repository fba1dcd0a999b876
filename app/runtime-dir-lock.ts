// One manager per runtime dir: an exclusive flock on `<runtime dir>/manager.lock`, taken at startup before
// anything reads or changes the dir and held for the life of the process. Without it a second manager
// given the same SANDBOX_RUNTIME_DIR would remove the first one's VMs in its startup recovery.
import { closeSync, constants, ftruncateSync, mkdirSync, openSync, readFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { ConfigError } from "./config";
import { tryLockExclusive } from "./flock";

export const LOCK_FILE = "manager.lock";

/** Written into the lock file by its holder, so a refused manager can name it. */
export type LockHolder = { pid: number; startedAt: string; dataDir: string };

/** Thrown when another running manager holds the runtime dir. */
export class RuntimeDirLockedError extends ConfigError {
  readonly code = "RUNTIME_DIR_LOCKED";
  constructor(runtimeDir: string, holder: LockHolder | undefined) {
    const who = holder ? `pid ${holder.pid}, started ${holder.startedAt}, data dir ${holder.dataDir}` : "it is still starting";
    super(
      `another manager is using the runtime dir ${runtimeDir} (${who}): stop that manager first, or give this one ` +
        `its own SANDBOX_RUNTIME_DIR (unset, each data dir gets its own)`,
    );
  }
}

export type RuntimeDirLock = { path: string; fd: number };

/** Creates the runtime dir if needed and locks it; the lock goes when this process ends, however it ends. */
export function lockRuntimeDir(runtimeDir: string, dataDir: string): RuntimeDirLock {
  const path = join(runtimeDir, LOCK_FILE);
  let fd: number;
  try {
    // Default mode on purpose: the VMs' uids must traverse this dir (see Config.runtimeDir).
    mkdirSync(runtimeDir, { recursive: true });
    fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o644);
  } catch (error) {
    throw new ConfigError(`SANDBOX_RUNTIME_DIR ${runtimeDir} cannot be used (${(error as Error).message}): point it at a directory this user can create and write`);
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
    throw new RuntimeDirLockedError(runtimeDir, readHolder(path));
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
