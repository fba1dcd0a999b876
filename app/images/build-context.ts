// The content digest of a Dockerfile build: the Dockerfile's text and every file its COPY steps may read,
// so an unchanged repository reuses the image and an edit to either rebuilds it. The repository is the
// guest's to write: the walk never follows a symlink (it hashes where one points), opens files with
// O_NOFOLLOW|O_NONBLOCK and reads only what is a regular file once open (a FIFO never makes it wait), and
// stops at a size limit.
import { createHash, type Hash } from "node:crypto";
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readlinkSync, readSync, type Stats } from "node:fs";
import { join } from "node:path";
import { ImageInvalidError } from "../errors";

const CHUNK_BYTES = 1024 * 1024;

function kindOf(stats: Stats): string {
  if (stats.isFile()) return "file";
  if (stats.isDirectory()) return "dir";
  if (stats.isSymbolicLink()) return "link";
  return "other";
}

/** Hashes a regular file's content through one descriptor; false when what was opened is not a regular file. */
function hashFile(path: string, hash: Hash): boolean {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return false;
  }
  try {
    if (!fstatSync(fd).isFile()) return false;
    const buffer = Buffer.alloc(CHUNK_BYTES);
    for (let read = readSync(fd, buffer); read > 0; read = readSync(fd, buffer)) hash.update(buffer.subarray(0, read));
    return true;
  } finally {
    closeSync(fd);
  }
}

/** sha256 of the Dockerfile and of `paths` (relative to `contextDir`): names, kinds, modes, contents, link targets. */
export function buildDigest(dockerfile: string, contextDir: string, paths: string[], limitBytes: number): string {
  const digest = createHash("sha256").update(`dockerfile\0${dockerfile}\0`);
  let bytes = 0;
  const visit = (relative: string) => {
    const absolute = join(contextDir, relative);
    const stats = lstatSync(absolute, { throwIfNoEntry: false });
    if (!stats) {
      digest.update(`${relative}\0missing\0`);
      return;
    }
    digest.update(`${relative}\0${kindOf(stats)}\0${stats.mode & 0o7777}\0`);
    if (stats.isSymbolicLink()) digest.update(`${readlinkSync(absolute)}\0`);
    else if (stats.isFile()) {
      bytes += stats.size;
      if (bytes > limitBytes) throw new ImageInvalidError(`the files the Dockerfile's COPY steps read are larger than the image limit (${Math.round(limitBytes / 2 ** 20)} MiB): copy less, or raise maxImageMib`);
      const content = createHash("sha256");
      digest.update(hashFile(absolute, content) ? `${content.digest("hex")}\0` : "unreadable\0");
    } else if (stats.isDirectory()) {
      for (const entry of readdirSync(absolute).sort()) visit(relative === "." ? entry : `${relative}/${entry}`);
    }
  };
  // A path's own parents are checked first: through a symlinked parent (src -> /etc) nothing is read.
  const linkedParent = (path: string) => {
    const parts = path.split("/");
    for (let i = 1; i < parts.length; i++) {
      const parent = parts.slice(0, i).join("/");
      const stats = lstatSync(join(contextDir, parent), { throwIfNoEntry: false });
      if (!stats?.isDirectory()) return parent;
    }
    return undefined;
  };
  for (const path of paths) {
    const parent = linkedParent(path);
    if (parent === undefined) visit(path);
    else digest.update(`${path}\0under a non-directory ${parent}\0`);
  }
  return `sha256:${digest.digest("hex")}`;
}
