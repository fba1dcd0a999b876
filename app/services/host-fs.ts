// Reading paths a guest can write, on the host, as hostile input: no symlink is followed anywhere on
// the way, a FIFO or socket is never opened for a blocking read, and reads are size-limited.
//
// Node has no openat(2); opening `/proc/self/fd/<dirfd>/<name>` is its equivalent (the magic link
// jumps to the directory already opened, then `name` alone is looked up), so each component is opened
// relative to the one before with O_NOFOLLOW. A swap of any component between two steps cannot
// redirect the walk: either the walk fails, or it holds the very inode it checked.
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, type Stats } from "node:fs";

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_CLOEXEC } = constants as typeof constants & { O_CLOEXEC: number };
const CLOEXEC = O_CLOEXEC ?? 0o2000000;

/** Thrown when a path cannot be walked safely; `reason` says what was found, for the user. */
export class UnsafePathError extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(reason);
    this.name = "UnsafePathError";
  }
}

type WalkTarget = "directory" | "file";

function errnoReason(error: unknown, dirFd: number, name: string, at: string, isLast: boolean, want: WalkTarget): string {
  const code = (error as NodeJS.ErrnoException).code;
  // O_DIRECTORY|O_NOFOLLOW on a symlink says ENOTDIR: ask lstat what is really there.
  if (code === "ELOOP" || (code === "ENOTDIR" && isSymlinkAt(dirFd, name))) return `${at} is a symbolic link`;
  if (code === "ENOTDIR") return `${at} is not a directory`;
  if (code === "ENOENT") return `${at} does not exist`;
  if (code === "ENXIO") return `${at} is a socket`;
  if (code === "EACCES") return `${at} is not readable by the manager`;
  return `${at} could not be opened${isLast ? ` as a ${want}` : ""} (${code ?? String(error)})`;
}

/**
 * Opens an absolute path component by component without following any symlink. The last component
 * must be a directory or a regular file as asked; a FIFO, socket or device is refused without blocking.
 * Returns the open fd (the caller closes it) and its stats.
 */
function openNoFollow(path: string, want: WalkTarget): { fd: number; stats: Stats } {
  if (!path.startsWith("/")) throw new UnsafePathError(path, "is not an absolute path");
  const parts = path.split("/").filter(Boolean);
  let fd = openSync("/", O_RDONLY | O_DIRECTORY | CLOEXEC);
  let at = "";
  try {
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i]!;
      if (part === "." || part === "..") throw new UnsafePathError(path, "is not a normalized path");
      at += `/${part}`;
      const isLast = i === parts.length - 1;
      // The last component as a file: O_NONBLOCK so that a FIFO's open returns at once (then refused).
      const flags = O_RDONLY | O_NOFOLLOW | CLOEXEC | (isLast && want === "file" ? O_NONBLOCK : O_DIRECTORY);
      let next: number;
      try {
        next = openSync(`/proc/self/fd/${fd}/${part}`, flags);
      } catch (error) {
        throw new UnsafePathError(path, errnoReason(error, fd, part, at, isLast, want));
      }
      closeSync(fd);
      fd = next;
    }
    const stats = fstatSync(fd);
    if (want === "file" && !stats.isFile()) throw new UnsafePathError(path, `${path} is not a regular file (${kindOf(stats)})`);
    if (want === "directory" && !stats.isDirectory()) throw new UnsafePathError(path, `${path} is not a directory`);
    return { fd, stats };
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

function isSymlinkAt(dirFd: number, name: string): boolean {
  try {
    return lstatSync(`/proc/self/fd/${dirFd}/${name}`).isSymbolicLink();
  } catch {
    return false;
  }
}

function kindOf(stats: Stats): string {
  if (stats.isFIFO()) return "a FIFO";
  if (stats.isSocket()) return "a socket";
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return "a device";
  if (stats.isDirectory()) return "a directory";
  return "not a regular file";
}

/** The identity of a directory or file: what a pinned mount is compared by. */
export type Identity = { dev: number; ino: number };

/** The identity of `path`, walked without following symlinks. */
export function identityOf(path: string, want: WalkTarget): Identity {
  const { fd, stats } = openNoFollow(path, want);
  closeSync(fd);
  return { dev: stats.dev, ino: stats.ino };
}

/**
 * Reads at most `maxBytes` of a regular file walked without symlinks. A larger file is refused rather
 * than truncated: a guest could otherwise hide a second line past the cut. Never blocks on a FIFO.
 */
export function readSmallFile(path: string, maxBytes = 4096): string {
  const { fd, stats } = openNoFollow(path, "file");
  try {
    if (stats.size > maxBytes) throw new UnsafePathError(path, `${path} is ${stats.size} bytes, more than the ${maxBytes} bytes the manager reads of such a file`);
    const buffer = Buffer.alloc(maxBytes + 1);
    const length = readSync(fd, buffer, 0, buffer.length, 0);
    if (length > maxBytes) throw new UnsafePathError(path, `${path} grew past ${maxBytes} bytes while it was read`);
    return buffer.subarray(0, length).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

/** What is at `path` (lstat through a no-follow walk of its parent), or null if nothing. Never opens it. */
export function entryKind(path: string): "directory" | "file" | "symlink" | "other" | null {
  const cut = path.lastIndexOf("/");
  let dirFd: number;
  try {
    dirFd = openNoFollow(path.slice(0, cut) || "/", "directory").fd;
  } catch {
    return null;
  }
  try {
    const stats = lstatSync(`/proc/self/fd/${dirFd}/${path.slice(cut + 1)}`);
    if (stats.isSymbolicLink()) return "symlink";
    if (stats.isDirectory()) return "directory";
    return stats.isFile() ? "file" : "other";
  } catch {
    return null;
  } finally {
    closeSync(dirFd);
  }
}
