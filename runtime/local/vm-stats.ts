// What a local VM uses right now, read at call time from its cgroup files (v2, or the v1 hierarchies of a
// v1 or hybrid layout) and from the statfs of its home volume's mounted ext4 image. Nothing is sampled
// in the background: a reader asks, the kernel's counters answer.
import { readFileSync, statfsSync } from "node:fs";
import type { VmCgroupStats, VolumeDiskStats } from "../driver";
import type { CgroupLayout } from "./cgroup-layout";
import { isMounted } from "./disk-image";

/** v1 writes "no limit" as the largest page-aligned long (9223372036854771712); anything this large is none. */
const V1_UNLIMITED = 2 ** 62;

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

function readNumber(path: string): number | undefined {
  const text = readText(path)?.trim();
  if (text === undefined || text === "" || text === "max") return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}

/** One `key value` line of a flat-keyed cgroup file (memory.stat, cpu.stat). */
function readKey(path: string, key: string): number | undefined {
  const match = readText(path)?.match(new RegExp(`^${key} (\\d+)$`, "m"));
  return match ? Number(match[1]) : undefined;
}

/** Memory in use without the page cache the kernel can drop at once (inactive files): what `docker stats` shows. */
function workingSet(usage: number | undefined, inactiveFile: number | undefined): number | undefined {
  if (usage === undefined) return undefined;
  return Math.max(0, usage - (inactiveFile ?? 0));
}

function v2Stats(root: string, path: string): VmCgroupStats | undefined {
  const dir = root + path;
  const usageUsec = readKey(`${dir}/cpu.stat`, "usage_usec");
  if (usageUsec === undefined) return undefined; // no such cgroup: the VM is not running
  return {
    cpuSeconds: usageUsec / 1e6,
    memoryBytes: workingSet(readNumber(`${dir}/memory.current`), readKey(`${dir}/memory.stat`, "inactive_file")) ?? 0,
    memoryLimitBytes: readNumber(`${dir}/memory.max`) ?? null,
    pids: readNumber(`${dir}/pids.current`) ?? 0,
    pidsLimit: readNumber(`${dir}/pids.max`) ?? null,
  };
}

function v1Stats(hierarchies: Map<string, string>, path: string): VmCgroupStats | undefined {
  const dirOf = (controller: string) => {
    const entry = [...hierarchies.entries()].find(([key]) => key.split(",").includes(controller));
    return entry ? entry[1] + path : undefined;
  };
  const cpuacct = dirOf("cpuacct");
  const memory = dirOf("memory");
  const pids = dirOf("pids");
  const usageNs = cpuacct === undefined ? undefined : readNumber(`${cpuacct}/cpuacct.usage`);
  if (usageNs === undefined) return undefined; // no such cgroup: the VM is not running
  const limit = memory === undefined ? undefined : readNumber(`${memory}/memory.limit_in_bytes`);
  const used = memory === undefined ? undefined : workingSet(readNumber(`${memory}/memory.usage_in_bytes`), readKey(`${memory}/memory.stat`, "total_inactive_file"));
  return {
    cpuSeconds: usageNs / 1e9,
    memoryBytes: used ?? 0,
    memoryLimitBytes: limit !== undefined && limit < V1_UNLIMITED ? limit : null,
    pids: (pids === undefined ? undefined : readNumber(`${pids}/pids.current`)) ?? 0,
    // pids.max reads "max" when unlimited
    pidsLimit: (pids === undefined ? undefined : readNumber(`${pids}/pids.max`)) ?? null,
  };
}

/** CPU, memory and pids of the cgroup at `path`; undefined when it does not exist (the VM is stopped). */
export function readCgroupStats(layout: CgroupLayout, path: string): VmCgroupStats | undefined {
  return layout.kind === "v2" ? v2Stats(layout.unifiedRoot, path) : v1Stats(layout.hierarchies, path);
}

/**
 * How many processes the kernel's OOM killer has killed in the cgroup at `path` (at its memory limit, which
 * is the VM's): `oom_kill` of memory.events (v2) or memory.oom_control (v1, Linux 4.13+). Undefined when the
 * cgroup is gone or the kernel does not count.
 */
export function readOomKills(layout: CgroupLayout, path: string): number | undefined {
  if (layout.kind === "v2") return readKey(`${layout.unifiedRoot}${path}/memory.events`, "oom_kill");
  const memory = [...layout.hierarchies.entries()].find(([key]) => key.split(",").includes("memory"))?.[1];
  return memory === undefined ? undefined : readKey(`${memory}${path}/memory.oom_control`, "oom_kill");
}

/** The filesystem inside the volume's image: used and total bytes, as `df` in the guest shows them. */
export function readVolumeDisk(dataDir: string): VolumeDiskStats | undefined {
  if (!isMounted(dataDir)) return undefined;
  const fs = statfsSync(dataDir);
  const blockBytes = Number(fs.bsize);
  return { usedBytes: (Number(fs.blocks) - Number(fs.bfree)) * blockBytes, sizeBytes: Number(fs.blocks) * blockBytes };
}
