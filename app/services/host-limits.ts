// What the host has, the upper bound for any VM's resources.
import { existsSync, statfsSync } from "node:fs";
import { availableParallelism, totalmem } from "node:os";
import { dirname } from "node:path";

export type HostLimits = { cpus: number; memoryMib: number };

export function readHostLimits(): HostLimits {
  return { cpus: availableParallelism(), memoryMib: Math.floor(totalmem() / (1024 * 1024)) };
}

/** MiB an unprivileged writer may still use on the filesystem holding `path` (or its nearest existing parent). */
export function freeDiskMib(path: string): number {
  let dir = path;
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  const fs = statfsSync(dir);
  return Math.floor((Number(fs.bavail) * Number(fs.bsize)) / (1024 * 1024));
}
