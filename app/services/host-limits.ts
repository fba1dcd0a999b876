// What the host has, the upper bound for any VM's resources.
import { availableParallelism, totalmem } from "node:os";

export type HostLimits = { cpus: number; memoryMib: number };

export function readHostLimits(): HostLimits {
  return { cpus: availableParallelism(), memoryMib: Math.floor(totalmem() / (1024 * 1024)) };
}
