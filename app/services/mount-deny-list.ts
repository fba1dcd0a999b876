// Host paths no session may mount, whatever it registers: the system, whole home trees, and the
// manager's own state (its token, database, VMs and sockets). Checked at registration and again on
// every path the first resolution reaches (git top level, worktree common dir).
import { realpathSync } from "node:fs";
import { resolve, sep } from "node:path";

/** The manager's own directories: a session mounting any of them, or a parent of one, reads its secrets. */
export type ProtectedDirs = { dataDir: string; runtimeDir: string; rootfsCacheDir?: string; imageCacheDir?: string; egressDir?: string };

/** Directories that are the system itself: neither they nor anything inside them is a project. */
const SYSTEM_TREES = ["/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run", "/sbin", "/sys", "/usr"];
/** Directories that hold many users' or the system's files: projects may live inside them, not at them. */
const SHARED_PARENTS = ["/", "/home", "/root", "/var", "/var/lib", "/var/tmp", "/tmp", "/opt", "/srv", "/mnt", "/media"];

function isInside(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir === "/" ? "/" : dir + sep);
}

/** The path a directory will resolve to: its real path if it exists yet, else its normalized text. */
export function resolvedOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/** The rule `path` breaks, or null if it may be mounted. Give it a resolved path (no symlinks). */
export function deniedBy(path: string, protectedDirs: ProtectedDirs): string | null {
  if (SHARED_PARENTS.includes(path)) return `${path} is a shared system directory, not a project`;
  if (/^\/home\/[^/]+$/.test(path)) return `${path} is a whole home directory (it holds the user's keys and dotfiles)`;
  const system = SYSTEM_TREES.find((dir) => isInside(path, dir));
  if (system) return `${path} is inside the system directory ${system}`;
  for (const [what, dir] of Object.entries(protectedDirs)) {
    if (!dir) continue;
    const own = resolvedOrSelf(dir);
    const name = { dataDir: "data directory", runtimeDir: "runtime directory", rootfsCacheDir: "guest image cache", imageCacheDir: "image cache", egressDir: "egress socket directory" }[what] ?? what;
    if (isInside(path, own)) return `${path} is inside the manager's ${name} ${own}`;
    if (isInside(own, path)) return `${path} contains the manager's ${name} ${own}`;
  }
  return null;
}
