// Detects the host's cgroup layout (pure v2, pure v1, or hybrid v1 + v2) from /proc/self/mountinfo
// instead of assuming one.
import { readFileSync } from "node:fs";

/**
 * v2: one unified hierarchy holds every controller.
 * v1: one mount per controller group (e.g. "cpu,cpuacct" or "memory"), keyed by sorted controller names.
 * hybrid: v1 plus a cgroup2 mount (usually /sys/fs/cgroup/unified). crun 1.8 refuses to create containers
 * there ("cgroups in hybrid mode not supported") unless the cgroup2 mount is hidden from it.
 */
export type CgroupLayout =
  | { kind: "v2"; unifiedRoot: string }
  | { kind: "v1" | "hybrid"; hierarchies: Map<string, string>; unifiedRoot?: string };

type MountEntry = { mountPoint: string; fsType: string; superOptions: string[] };

/** mountinfo escapes space, tab, newline and backslash as octal (`\040`). */
function unescape(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/** Exported so the tests check it on mountinfo they write. */
export function parseMountinfo(text: string): MountEntry[] {
  const entries: MountEntry[] = [];
  for (const line of text.split("\n")) {
    if (!line) continue;
    // Optional fields end at a lone "-"; after it come fstype, source, super options.
    const [left, right] = line.split(" - ");
    if (!left || !right) continue;
    const leftFields = left.split(" ");
    const rightFields = right.split(" ");
    const mountPoint = leftFields[4];
    const fsType = rightFields[0];
    if (!mountPoint || !fsType) continue;
    entries.push({ mountPoint: unescape(mountPoint), fsType, superOptions: (rightFields[2] ?? "").split(",") });
  }
  return entries;
}

export function readMountinfo(path = "/proc/self/mountinfo"): MountEntry[] {
  return parseMountinfo(readFileSync(path, "utf8"));
}

/** Controller names the kernel knows, from /proc/cgroups (first column). */
function knownControllers(): Set<string> {
  const names = new Set<string>();
  for (const line of readFileSync("/proc/cgroups", "utf8").split("\n")) {
    const name = line.split("\t")[0];
    if (name && !name.startsWith("#")) names.add(name);
  }
  return names;
}

/** The same key for a mount's super options and a /proc/PID/cgroup controllers field. */
function hierarchyKey(controllers: string[]): string {
  return [...controllers].sort().join(",");
}

/** Exported so the tests check it on mountinfo they write. */
export function layoutFromMounts(mounts: MountEntry[], controllers: Set<string>): CgroupLayout | undefined {
  const unified = mounts.find((m) => m.fsType === "cgroup2");
  const v1 = mounts.filter((m) => m.fsType === "cgroup");
  if (unified && unified.mountPoint === "/sys/fs/cgroup" && v1.length === 0) {
    return { kind: "v2", unifiedRoot: unified.mountPoint };
  }
  if (v1.length === 0) return unified ? { kind: "v2", unifiedRoot: unified.mountPoint } : undefined;
  const hierarchies = new Map<string, string>();
  for (const mount of v1) {
    const names = mount.superOptions.filter((o) => controllers.has(o) || o.startsWith("name="));
    const key = hierarchyKey(names);
    // A hierarchy can be mounted twice (bind mounts); the first mount is the canonical one.
    if (names.length > 0 && !hierarchies.has(key)) hierarchies.set(key, mount.mountPoint);
  }
  return unified ? { kind: "hybrid", hierarchies, unifiedRoot: unified.mountPoint } : { kind: "v1", hierarchies };
}

export function detectCgroupLayout(): CgroupLayout | undefined {
  return layoutFromMounts(readMountinfo(), knownControllers());
}

/** The controllers a VM needs, and whether each is usable in this layout. */
const REQUIRED_CONTROLLERS = ["memory", "cpu", "pids"] as const;

export function missingControllers(layout: CgroupLayout): string[] {
  if (layout.kind === "v2") {
    let available: string[] = [];
    try {
      available = readFileSync(`${layout.unifiedRoot}/cgroup.controllers`, "utf8").trim().split(/\s+/);
    } catch {
      return [...REQUIRED_CONTROLLERS];
    }
    return REQUIRED_CONTROLLERS.filter((c) => !available.includes(c));
  }
  const mounted = new Set([...layout.hierarchies.keys()].flatMap((key) => key.split(",")));
  return REQUIRED_CONTROLLERS.filter((c) => !mounted.has(c));
}

/** Every directory that holds one cgroup path: one per v1 hierarchy, or the single v2 one. */
export function cgroupDirs(layout: CgroupLayout, cgroupPath: string): string[] {
  if (layout.kind === "v2") return [layout.unifiedRoot + cgroupPath];
  return [...layout.hierarchies.values()].map((mount) => mount + cgroupPath);
}

export function describeLayout(layout: CgroupLayout): string {
  if (layout.kind === "v2") return "cgroup v2";
  return layout.kind === "hybrid" ? "cgroup v1/v2 hybrid" : "cgroup v1";
}
