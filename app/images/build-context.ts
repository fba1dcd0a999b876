// The build context of a Dockerfile image: the files its COPY steps may read, less what the repository's
// .dockerignore leaves out (Docker's rules, through @balena/dockerignore). Two uses walk it the same way: the
// content digest (the Dockerfile, the .dockerignore and every file COPY may read, so an unchanged repository
// reuses the image and an edit rebuilds it), and the list of what each COPY takes (dockerfile-copy.ts).
// The repository is the guest's to write: the walk never follows a symlink (it hashes where one points),
// opens files with O_NOFOLLOW|O_NONBLOCK and reads only what is a regular file once open (a FIFO never makes
// it wait), and stops at a size limit.
import ignore from "@balena/dockerignore";
import { createHash, type Hash } from "node:crypto";
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readlinkSync, readSync, type Stats } from "node:fs";
import { join } from "node:path";
import { ImageInvalidError } from "../errors";

const CHUNK_BYTES = 1024 * 1024;

/** What .dockerignore leaves out of the context; `hasExceptions`: a `!` line may take something back inside a left-out directory. */
export type ContextFilter = { excludes(relative: string): boolean; hasExceptions: boolean };

export const WHOLE_CONTEXT: ContextFilter = { excludes: () => false, hasExceptions: false };

/** The filter of a .dockerignore's text (absent: the whole context). */
export function contextFilter(dockerignore: string | undefined): ContextFilter {
  if (dockerignore === undefined) return WHOLE_CONTEXT;
  const lines = dockerignore.split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== "" && !line.startsWith("#"));
  const rules = ignore().add(lines);
  return { excludes: (relative) => relative !== "." && rules.ignores(relative), hasExceptions: lines.some((line) => line.startsWith("!")) };
}

/** The first of a path's parents that is not a directory (a symlink: src -> /etc), through which nothing is read. */
export function linkedParentOf(contextDir: string, path: string): string | undefined {
  const parts = path.split("/");
  for (let i = 1; i < parts.length; i++) {
    const parent = parts.slice(0, i).join("/");
    if (!lstatSync(join(contextDir, parent), { throwIfNoEntry: false })?.isDirectory()) return parent;
  }
  return undefined;
}

/** One entry of the walk: its path relative to the context, and its lstat (no entry: it does not exist). */
type Visit = (relative: string, absolute: string, stats: Stats | undefined) => void;

/**
 * Visits `paths` (relative to `contextDir`) and everything under them that the filter keeps, parents before
 * children, names sorted. A path under a symlinked parent is reported with `onLinkedParent` and not entered.
 * A left-out directory is entered only when a `!` line could take something back inside it.
 */
export function walkContext(contextDir: string, paths: string[], filter: ContextFilter, visit: Visit, onLinkedParent: (path: string, parent: string) => void): void {
  const enter = (relative: string) => {
    const absolute = join(contextDir, relative);
    const stats = lstatSync(absolute, { throwIfNoEntry: false });
    const excluded = filter.excludes(relative);
    if (!excluded || !stats) visit(relative, absolute, excluded ? undefined : stats);
    if (stats?.isDirectory() && (!excluded || filter.hasExceptions)) {
      for (const entry of readdirSync(absolute).sort()) enter(relative === "." ? entry : `${relative}/${entry}`);
    }
  };
  for (const path of paths) {
    const parent = linkedParentOf(contextDir, path);
    if (parent === undefined) enter(path);
    else onLinkedParent(path, parent);
  }
}

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

/**
 * sha256 of the Dockerfile, the .dockerignore (absent and empty differ) and of `paths` (relative to
 * `contextDir`) as the filter keeps them: names, kinds, modes, contents, link targets.
 */
export function buildDigest(dockerfile: string, contextDir: string, paths: string[], limitBytes: number, dockerignore?: string): string {
  const digest = createHash("sha256").update(`dockerfile\0${dockerfile}\0`);
  if (dockerignore !== undefined) digest.update(`dockerignore\0${dockerignore}\0`);
  let bytes = 0;
  walkContext(
    contextDir,
    paths,
    contextFilter(dockerignore),
    (relative, absolute, stats) => {
      if (!stats) {
        digest.update(`${relative}\0missing\0`);
        return;
      }
      digest.update(`${relative}\0${kindOf(stats)}\0${stats.mode & 0o7777}\0`);
      if (stats.isSymbolicLink()) digest.update(`${readlinkSync(absolute)}\0`);
      else if (stats.isFile()) {
        bytes += stats.size;
        if (bytes > limitBytes) throw new ImageInvalidError(`the files the Dockerfile's COPY steps read are larger than the image limit (${Math.round(limitBytes / 2 ** 20)} MiB): copy less, leave files out with .dockerignore, or raise maxImageMib`);
        const content = createHash("sha256");
        digest.update(hashFile(absolute, content) ? `${content.digest("hex")}\0` : "unreadable\0");
      }
    },
    (path, parent) => digest.update(`${path}\0under a non-directory ${parent}\0`),
  );
  return `sha256:${digest.digest("hex")}`;
}
