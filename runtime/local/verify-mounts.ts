// Checks, after a VM has started and before any command runs in it, that each session mount is what
// the spec asked for. This is a check after use on the mounted object itself, so a swap of a path
// component between the manager's checks and crun's mount cannot slip through: the VM's mountinfo names
// the source each mount really came from (device and path within it) and its flags, and a pinned
// directory's inode is read through the VM's own root.
import { readFileSync, statSync } from "node:fs";
import { relative } from "node:path";
import type { BindMount } from "../driver";

type MountEntry = { device: string; root: string; mountPoint: string; options: string[] };

/** mountinfo escapes space, tab, newline and backslash as octal (`\040`). */
function unescape(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

function parseMountinfo(text: string): MountEntry[] {
  return text
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => {
      const fields = line.split(" ");
      return { device: fields[2]!, root: unescape(fields[3]!), mountPoint: unescape(fields[4]!), options: fields[5]!.split(",") };
    });
}

/** The last (topmost) mount at or above `path`. */
function coveringMount(entries: MountEntry[], path: string): MountEntry | undefined {
  let best: MountEntry | undefined;
  for (const entry of entries) {
    const inside = path === entry.mountPoint || entry.mountPoint === "/" || path.startsWith(`${entry.mountPoint}/`);
    if (inside && (!best || entry.mountPoint.length >= best.mountPoint.length)) best = entry;
  }
  return best;
}

/** Where `hostPath` lives in the host's view: its filesystem's device and its path within that filesystem. */
function hostSource(hostEntries: MountEntry[], hostPath: string): { device: string; root: string } | undefined {
  const mount = coveringMount(hostEntries, hostPath);
  if (!mount) return undefined;
  const rest = relative(mount.mountPoint, hostPath);
  return { device: mount.device, root: rest ? `${mount.root === "/" ? "" : mount.root}/${rest}` : mount.root };
}

/**
 * Every problem found with the VM's session mounts (empty when all hold): wrong source, missing
 * nosuid/nodev, read-write where read-only was asked, or a pinned directory that is another inode.
 */
export function mountProblems(vmPid: number, mounts: BindMount[], sources: Map<BindMount, string>, hostMountinfo = readFileSync("/proc/self/mountinfo", "utf8")): string[] {
  const vmEntries = parseMountinfo(readFileSync(`/proc/${vmPid}/mountinfo`, "utf8"));
  const hostEntries = parseMountinfo(hostMountinfo);
  const problems: string[] = [];
  for (const mount of mounts) {
    const mounted = vmEntries.findLast((entry) => entry.mountPoint === mount.hostPath);
    // A guarded repository comes from its view (repo-fs), whose daemon checked the pinned inode itself.
    const expected = hostSource(hostEntries, sources.get(mount) ?? mount.hostPath);
    if (!mounted || !expected) {
      problems.push(`${mount.hostPath} is not mounted in the VM`);
      continue;
    }
    if (mounted.device !== expected.device || mounted.root !== expected.root) {
      problems.push(`${mount.hostPath} was mounted from ${mounted.root} (device ${mounted.device}), not from itself: a path component was swapped while the VM started`);
    }
    const missing = ["nosuid", "nodev", mount.readOnly ? "ro" : "rw"].filter((flag) => !mounted.options.includes(flag));
    if (missing.length > 0) problems.push(`${mount.hostPath} is mounted without ${missing.join(", ")}`);
    if (mount.pin) {
      const seen = statSync(`/proc/${vmPid}/root${mount.hostPath}`);
      // Through a view the device is the view's; the inode is the directory's own (the view passes it through).
      if ((!mount.guard && seen.dev !== mount.pin.dev) || seen.ino !== mount.pin.ino) problems.push(`${mount.hostPath} in the VM is not the directory pinned at the session's first command`);
    }
  }
  return problems;
}
