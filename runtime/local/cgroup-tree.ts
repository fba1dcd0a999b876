// Per-VM and per-exec cgroups: creating exec sub-cgroups, killing a whole exec tree, and cleanup.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { cgroupDirs, type CgroupLayout } from "./cgroup-layout";

export const EXEC_CGROUP_PREFIX = "exec-";

/** Bounded polling: a cgroup becoming empty offers no event Bun can wait on. */
async function pollUntil(check: () => boolean, timeoutMs: number, intervalMs = 5): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (check()) return true;
    if (performance.now() >= deadline) return false;
    await Bun.sleep(intervalMs);
  }
}

function readProcs(dir: string): number[] {
  try {
    return readFileSync(`${dir}/cgroup.procs`, "utf8").split("\n").filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** The directory whose cgroup.procs lists every process of `path` (v1: any hierarchy; pids is always there). */
function membershipDir(layout: CgroupLayout, path: string): string | undefined {
  if (layout.kind === "v2") return layout.unifiedRoot + path;
  const pids = [...layout.hierarchies.entries()].find(([key]) => key.split(",").includes("pids"));
  return pids ? pids[1] + path : cgroupDirs(layout, path)[0];
}

/**
 * Creates `<vm>/<sub>` in every hierarchy that holds the VM. `crun exec --cgroup=<sub>` then places
 * the exec there; on v1 a hierarchy lacking the sub-cgroup would silently leave the exec in crun's own
 * cgroup for that controller (measured: it escaped the VM's memory cgroup), so none may be skipped.
 */
export function createSubCgroup(layout: CgroupLayout, vmPath: string, sub: string): void {
  for (const vmDir of cgroupDirs(layout, vmPath)) {
    if (!existsSync(vmDir)) continue;
    const dir = `${vmDir}/${sub}`;
    mkdirSync(dir);
    // A fresh v1 cpuset child has no CPUs or memory nodes, and no task can join it until it does.
    if (existsSync(`${dir}/cpuset.cpus`)) {
      writeFileSync(`${dir}/cpuset.cpus`, readFileSync(`${vmDir}/cpuset.cpus`));
      writeFileSync(`${dir}/cpuset.mems`, readFileSync(`${vmDir}/cpuset.mems`));
    }
  }
}

/** The processes directly in `path` (not below it), as host pids. */
export function processesIn(layout: CgroupLayout, path: string): number[] {
  const dir = membershipDir(layout, path);
  return dir ? readProcs(dir) : [];
}

/**
 * Moves one process into `path` in every hierarchy that has it (the exec agent's commands: the host
 * places each in its own sub-cgroup, as `crun exec --cgroup` does). Throws if any write fails.
 */
export function moveIntoCgroup(layout: CgroupLayout, path: string, pid: number): void {
  for (const dir of cgroupDirs(layout, path)) if (existsSync(dir)) writeFileSync(`${dir}/cgroup.procs`, String(pid));
}

/** Whether `path` exists (in the hierarchy that lists its processes). */
export function subCgroupExists(layout: CgroupLayout, path: string): boolean {
  const dir = membershipDir(layout, path);
  return dir !== undefined && existsSync(dir);
}

/** True when no process is left in `path` or below it. Exported so a test checks it on a real cgroup. */
export function cgroupEmpty(layout: CgroupLayout, path: string): boolean {
  const dir = membershipDir(layout, path);
  if (!dir || !existsSync(dir)) return true;
  if (layout.kind === "v2") {
    const events = readFileSync(`${dir}/cgroup.events`, "utf8");
    return /^populated 0$/m.test(events);
  }
  return readProcsDeep(dir).length === 0;
}

/** Every process in `dir` and the cgroups below it (v1 has no recursive listing). */
function readProcsDeep(dir: string): number[] {
  const pids = readProcs(dir);
  try {
    for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) pids.push(...readProcsDeep(`${dir}/${e.name}`));
  } catch {
    // Removed while we looked: nothing left in it.
  }
  return pids;
}

/**
 * SIGKILLs every process in `path` and below, and waits until it is empty. v2 has cgroup.kill (atomic);
 * v1 needs a loop, which converges because a process with a pending SIGKILL can no longer fork.
 */
export async function killCgroup(layout: CgroupLayout, path: string, timeoutMs = 5000): Promise<boolean> {
  const dir = membershipDir(layout, path);
  if (!dir || !existsSync(dir)) return true;
  if (layout.kind === "v2" && existsSync(`${dir}/cgroup.kill`)) {
    writeFileSync(`${dir}/cgroup.kill`, "1");
    return pollUntil(() => cgroupEmpty(layout, path), timeoutMs);
  }
  return pollUntil(() => {
    const pids = readProcsDeep(dir);
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
    return pids.length === 0;
  }, timeoutMs, 2);
}

/**
 * killCgroup again and again (a v2 cgroup.kill is written anew each round) until `path` is empty or
 * `deadline` (a performance.now() time) has passed; whether it emptied.
 */
export async function killCgroupBy(layout: CgroupLayout, path: string, deadline: number): Promise<boolean> {
  while (performance.now() < deadline) {
    if (await killCgroup(layout, path, 1000)) return true;
    await Bun.sleep(20);
  }
  return false;
}

/** rmdir in every hierarchy; false if any is still busy. Missing directories count as removed. */
export function removeCgroup(layout: CgroupLayout, path: string): boolean {
  let removed = true;
  for (const dir of cgroupDirs(layout, path)) {
    try {
      rmdirSync(dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") removed = false;
    }
  }
  return removed;
}

/** Names of the exec sub-cgroups under a VM's cgroup (from the membership hierarchy). */
export function listSubCgroups(layout: CgroupLayout, vmPath: string): string[] {
  const dir = membershipDir(layout, vmPath);
  if (!dir || !existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && e.name.startsWith(EXEC_CGROUP_PREFIX))
    .map((e) => e.name);
}

/** Names of every cgroup directly under `path`, in any hierarchy (a crash can leave some hierarchies only). */
export function childCgroups(layout: CgroupLayout, path: string): string[] {
  const names = new Set<string>();
  for (const dir of cgroupDirs(layout, path)) {
    if (!existsSync(dir)) continue;
    for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) names.add(entry.name);
  }
  return [...names];
}

/** Removes exec sub-cgroups that no process uses any more; busy ones stay. */
export function sweepSubCgroups(layout: CgroupLayout, vmPath: string, inFlight: ReadonlySet<string> = new Set()): void {
  for (const sub of listSubCgroups(layout, vmPath)) {
    // An in-flight exec's sub-cgroup is empty until crun moves the command in: removing it then makes
    // crun's write to cgroup.procs fail with ENODEV.
    if (inFlight.has(sub)) continue;
    if (cgroupEmpty(layout, `${vmPath}/${sub}`)) removeCgroup(layout, `${vmPath}/${sub}`);
  }
}

/** True when the VM's cgroup exists in no hierarchy. */
export function vmCgroupGone(layout: CgroupLayout, vmPath: string): boolean {
  return cgroupDirs(layout, vmPath).every((dir) => !existsSync(dir));
}
