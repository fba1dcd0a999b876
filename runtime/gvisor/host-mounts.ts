// Mounts the gVisor tier prepares on the host before each boot, because runsc 0.0~20221219 refuses the
// `idmap` mount option crun takes and applies no flags to its binds. Each one is a detached clone of the
// source (open_tree), given its flags — and, for directories, an id mapping — with mount_setattr, then
// attached under the state dir (move_mount); runsc's gofer binds that, and a bind keeps both.
//
// The id mappings are crun's: the image shows host root's files as the guest's root (0 → the VM's uid
// block), and a repository shows its owner as the guest's root, so what the guest writes there lands on
// disk owned by the repository's owner. The mapping lives in a user namespace made for the purpose
// (`unshare --user` plus uid_map/gid_map written by us); the mount keeps it after that process is gone.
import { dlopen, FFIType, read } from "bun:ffi";
import { closeSync, existsSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, rmdirSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readMountinfo } from "../local/cgroup-layout";

/** One prepared mount: `source` shown at `target` with these flags and (directories only) id maps, as `inside outside count`. */
export type HostMount = { source: string; target: string; kind: "dir" | "file"; readOnly: boolean; recursive: boolean; uidMap?: string; gidMap?: string };

const AT_FDCWD = -100;
const AT_EMPTY_PATH = 0x1000;
const AT_RECURSIVE = 0x8000;
const AT_SYMLINK_NOFOLLOW = 0x100;
const OPEN_TREE_CLONE = 1;
const O_CLOEXEC = 0o2000000;
const MOVE_MOUNT_F_EMPTY_PATH = 0x4;
const MOUNT_ATTR = { rdonly: 0x1, nosuid: 0x2, nodev: 0x4, idmap: 0x100000 } as const;
const MNT_DETACH = 2;

let libc: ReturnType<typeof openLibc> | undefined;
function openLibc() {
  const { i32, u32, u64, ptr } = FFIType;
  return dlopen("libc.so.6", {
    open_tree: { args: [i32, ptr, u32], returns: i32 },
    mount_setattr: { args: [i32, ptr, u32, ptr, u64], returns: i32 },
    move_mount: { args: [i32, ptr, i32, ptr, u32], returns: i32 },
    umount2: { args: [ptr, i32], returns: i32 },
    close: { args: [i32], returns: i32 },
    __errno_location: { args: [], returns: ptr },
  }).symbols;
}

function cString(text: string): Buffer {
  return Buffer.from(`${text}\0`);
}

function check(result: number, what: string): number {
  if (result >= 0) return result;
  const c = (libc ??= openLibc());
  throw new Error(`${what} failed (errno ${read.i32(c.__errno_location()!, 0)})`);
}

/** A user namespace holding the given maps, as an open fd (the process that made it is gone again). */
async function userNamespace(uidMap: string, gidMap: string): Promise<number> {
  const proc = Bun.spawn(["unshare", "--user", "--", "sleep", "60"], { stdin: "ignore", stdout: "ignore", stderr: "ignore" });
  try {
    const own = readlinkSync("/proc/self/ns/user");
    for (let i = 0; ; i++) {
      let ns: string | undefined;
      try {
        ns = readlinkSync(`/proc/${proc.pid}/ns/user`);
      } catch {
        ns = undefined;
      }
      // unshare runs sleep once its namespace exists; until then the pid still shows ours.
      if (ns && ns !== own && readFileSync(`/proc/${proc.pid}/cmdline`, "utf8").startsWith("sleep")) break;
      if (i > 500) throw new Error("unshare --user did not start");
      await Bun.sleep(2);
    }
    writeFileSync(`/proc/${proc.pid}/uid_map`, `${uidMap}\n`);
    writeFileSync(`/proc/${proc.pid}/gid_map`, `${gidMap}\n`);
    return openSync(`/proc/${proc.pid}/ns/user`, "r");
  } finally {
    proc.kill("SIGKILL");
    await proc.exited;
  }
}

/** Attaches one prepared mount at its target (created if missing). */
async function attach(mount: HostMount): Promise<void> {
  const c = (libc ??= openLibc());
  if (!existsSync(mount.target)) {
    if (mount.kind === "dir") mkdirSync(mount.target, { mode: 0o700 });
    else writeFileSync(mount.target, "", { mode: 0o600 });
  }
  const flags = OPEN_TREE_CLONE | O_CLOEXEC | AT_SYMLINK_NOFOLLOW | (mount.recursive ? AT_RECURSIVE : 0);
  const tree = check(c.open_tree(AT_FDCWD, cString(mount.source), flags), `open_tree ${mount.source}`);
  let userns: number | undefined;
  try {
    let set = MOUNT_ATTR.nosuid | MOUNT_ATTR.nodev | (mount.readOnly ? MOUNT_ATTR.rdonly : 0);
    if (mount.uidMap && mount.gidMap) {
      userns = await userNamespace(mount.uidMap, mount.gidMap);
      set |= MOUNT_ATTR.idmap;
    }
    // struct mount_attr { u64 attr_set, attr_clr, propagation, userns_fd }
    const attr = new BigUint64Array([BigInt(set), 0n, 0n, BigInt(userns ?? 0)]);
    check(c.mount_setattr(tree, cString(""), AT_EMPTY_PATH | (mount.recursive ? AT_RECURSIVE : 0), attr, 32), `mount_setattr ${mount.source}`);
    check(c.move_mount(tree, cString(""), AT_FDCWD, cString(mount.target), MOVE_MOUNT_F_EMPTY_PATH), `move_mount ${mount.source} to ${mount.target}`);
  } finally {
    if (userns !== undefined) closeSync(userns);
    c.close(tree);
  }
}

/** Mount points at or under `dir`, deepest first. */
function mountsUnder(dir: string): string[] {
  return readMountinfo()
    .map((entry) => entry.mountPoint)
    .filter((point) => point === dir || point.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
}

/** Attaches every mount of a VM under `dir` (its own directory), after detaching whatever a previous boot left there. */
export async function attachHostMounts(dir: string, mounts: HostMount[]): Promise<void> {
  releaseHostMounts(dir);
  mkdirSync(dir, { recursive: true, mode: 0o711 });
  for (const mount of mounts) await attach(mount);
}

/**
 * Detaches every mount under `dir`, then removes the empty mount points and `dir` itself — one rmdir or
 * unlink at a time, never recursively, so nothing can reach through a mount into a repository.
 */
export function releaseHostMounts(dir: string): void {
  if (!existsSync(dir)) return;
  const c = (libc ??= openLibc());
  for (const point of mountsUnder(dir)) check(c.umount2(cString(point), MNT_DETACH), `umount ${point}`);
  const left = mountsUnder(dir);
  if (left.length > 0) throw new Error(`mounts under ${dir} could not be detached: ${left.join(", ")}`);
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (lstatSync(path).isDirectory()) rmdirSync(path);
    else unlinkSync(path);
  }
  rmdirSync(dir);
}
