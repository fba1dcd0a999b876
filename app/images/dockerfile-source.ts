// A session's Dockerfile, read from its repository, which the guest can write: it is opened without
// following a final symlink and without waiting on a FIFO, and read only when what was opened lies inside
// the repository (the kernel's own path of the open file, so a parent directory the guest swapped for a
// symlink between a check and the open cannot lead the read elsewhere) and is a regular file of bounded
// size. Its plan and the content digest of it and of what it copies (build-context.ts) decide the image.
import { closeSync, constants, fstatSync, openSync, readlinkSync, readSync, realpathSync } from "node:fs";
import { join, sep } from "node:path";
import { ImageInvalidError } from "../errors";
import { buildDigest } from "./build-context";
import { planDockerfile, type BuildPlan } from "./dockerfile";

const MAX_DOCKERFILE_BYTES = 256 * 1024;

export type DockerfileSource = { directory: string; path: string; plan: BuildPlan; digest: string };

function readBounded(path: string, root: string, shown: string): string {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    throw new ImageInvalidError(`the Dockerfile ${shown} cannot be opened (${(error as NodeJS.ErrnoException).code}): it must be a regular file in the repository`);
  }
  try {
    // What the kernel opened, whatever the path's parents were a moment ago: nothing outside is read.
    if (!readlinkSync(`/proc/self/fd/${fd}`).startsWith(root + sep)) throw new ImageInvalidError(`the Dockerfile ${shown} resolves outside the repository: it must be a file of the repository`);
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw new ImageInvalidError(`the Dockerfile ${shown} is not a regular file`);
    if (stats.size > MAX_DOCKERFILE_BYTES) throw new ImageInvalidError(`the Dockerfile ${shown} is larger than ${MAX_DOCKERFILE_BYTES / 1024} KiB`);
    const buffer = Buffer.alloc(stats.size);
    const read = readSync(fd, buffer, 0, stats.size, 0);
    return buffer.subarray(0, read).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

/** The Dockerfile's text, read safely; the repository's real path. Throws ImageInvalidError (a 400 with the fix). */
function readDockerfileText(directory: string, path: string): { root: string; text: string } {
  const shown = JSON.stringify(path);
  let resolved: string;
  let root: string;
  try {
    root = realpathSync(directory);
    resolved = realpathSync(join(directory, path));
  } catch {
    throw new ImageInvalidError(`the repository ${directory} has no Dockerfile at ${shown}: add one, or choose another image`);
  }
  if (!resolved.startsWith(root + sep)) throw new ImageInvalidError(`the Dockerfile ${shown} resolves outside the repository: it must be a file of the repository`);
  return { root, text: readBounded(resolved, root, shown) };
}

/** Reads and plans `path` (relative) in `directory` and digests what it copies; throws ImageInvalidError. */
export function readDockerfileSource(directory: string, path: string, limitBytes: number): DockerfileSource {
  const { root, text } = readDockerfileText(directory, path);
  const plan = planDockerfile(text);
  return { directory: root, path, plan, digest: buildDigest(text, root, plan.contextPaths, limitBytes) };
}

/** How long a digest of the copied files stands before the next command walks them again. */
export const CONTEXT_RECHECK_MS = 60_000;

/**
 * readDockerfileSource for every command of a session without walking the repository every time: the
 * Dockerfile itself is read each time (an edit to it rebuilds at the next command), the files its COPY
 * steps read are digested again once CONTEXT_RECHECK_MS has passed since the last walk.
 */
export function createDockerfileSources(now: () => number) {
  const known = new Map<string, { text: string; source: DockerfileSource; at: number }>();
  return (directory: string, path: string, limitBytes: number): DockerfileSource => {
    const key = `${directory}\0${path}`;
    const { text } = readDockerfileText(directory, path);
    const last = known.get(key);
    if (last && last.text === text && now() - last.at < CONTEXT_RECHECK_MS) return last.source;
    const source = readDockerfileSource(directory, path, limitBytes);
    known.set(key, { text, source, at: now() });
    return source;
  };
}
