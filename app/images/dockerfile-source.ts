// A session's Dockerfile, read from its repository, which the guest can write: its real path must lie
// inside the repository, and it is then read by host-fs.ts's walk, which follows no symlink on the way
// (a parent the guest swaps for a symlink after the check fails the read instead of leading it elsewhere),
// never waits on a FIFO, and reads a bounded size. So is its .dockerignore (`<Dockerfile>.dockerignore` beside
// it, else `.dockerignore` at the repository's top, as BuildKit looks). Its plan and the content digest of it,
// the .dockerignore and what it copies (build-context.ts) decide the image.
import { realpathSync } from "node:fs";
import { join, sep } from "node:path";
import { ImageInvalidError } from "../errors";
import { readSmallFile, UnsafePathError } from "../services/host-fs";
import { buildDigest } from "./build-context";
import { planDockerfile, type BuildPlan } from "./dockerfile";

const MAX_DOCKERFILE_BYTES = 256 * 1024;

export type DockerfileSource = { directory: string; path: string; plan: BuildPlan; digest: string; dockerignore?: string };

function readWalked(path: string, shown: string): string {
  try {
    return readSmallFile(path, MAX_DOCKERFILE_BYTES);
  } catch (error) {
    if (error instanceof UnsafePathError) throw new ImageInvalidError(`the ${shown} cannot be read: ${error.reason}; it must be a regular file of the repository`);
    throw error;
  }
}

/**
 * The text of `relative` in the repository at `root` (its real path), read safely; undefined when it does not
 * exist. `shown` names it in the 400 when it resolves outside the repository or is not a regular file.
 */
function readInRepository(root: string, relative: string, shown: string): string | undefined {
  let resolved: string;
  try {
    resolved = realpathSync(join(root, relative));
  } catch {
    return undefined; // absent, or a dangling link
  }
  if (!resolved.startsWith(root + sep)) throw new ImageInvalidError(`the ${shown} resolves outside the repository: it must be a file of the repository`);
  return readWalked(resolved, shown);
}

type DockerfileText = { root: string; text: string; dockerignore?: string };

/**
 * The Dockerfile's text and its .dockerignore's (`<Dockerfile>.dockerignore` beside it, else the top's), read
 * safely; the repository's real path. Throws ImageInvalidError (a 400 with the fix).
 */
function readDockerfileText(directory: string, path: string): DockerfileText {
  const shown = JSON.stringify(path);
  let root: string;
  try {
    root = realpathSync(directory);
  } catch {
    throw new ImageInvalidError(`the repository ${directory} has no Dockerfile at ${shown}: add one, or choose another image`);
  }
  const text = readInRepository(root, path, `Dockerfile ${shown}`);
  if (text === undefined) throw new ImageInvalidError(`the repository ${directory} has no Dockerfile at ${shown}: add one, or choose another image`);
  for (const candidate of [`${path}.dockerignore`, ".dockerignore"]) {
    const dockerignore = readInRepository(root, candidate, `.dockerignore ${JSON.stringify(candidate)}`);
    if (dockerignore !== undefined) return { root, text, dockerignore };
  }
  return { root, text };
}

/** Reads and plans `path` (relative) in `directory` and digests what it copies; throws ImageInvalidError. */
export function readDockerfileSource(directory: string, path: string, limitBytes: number): DockerfileSource {
  return sourceOf(readDockerfileText(directory, path), path, limitBytes);
}

function sourceOf({ root, text, dockerignore }: DockerfileText, path: string, limitBytes: number): DockerfileSource {
  const plan = planDockerfile(text);
  return { directory: root, path, plan, digest: buildDigest(text, root, plan.contextPaths, limitBytes, dockerignore), ...(dockerignore === undefined ? {} : { dockerignore }) };
}

/** How long a digest of the copied files stands before the next command walks them again. */
export const CONTEXT_RECHECK_MS = 60_000;

/**
 * readDockerfileSource for every command of a session without walking the repository every time: the
 * Dockerfile itself is read each time (an edit to it rebuilds at the next command), the files its COPY
 * steps read are digested again once CONTEXT_RECHECK_MS has passed since the last walk.
 */
export function createDockerfileSources(now: () => number) {
  const known = new Map<string, { text: string; dockerignore?: string; source: DockerfileSource; at: number }>();
  return (directory: string, path: string, limitBytes: number): DockerfileSource => {
    const key = `${directory}\0${path}`;
    const read = readDockerfileText(directory, path);
    const { text, dockerignore } = read;
    const last = known.get(key);
    if (last && last.text === text && last.dockerignore === dockerignore && now() - last.at < CONTEXT_RECHECK_MS) return last.source;
    const source = sourceOf(read, path, limitBytes);
    known.set(key, { text, dockerignore, source, at: now() });
    return source;
  };
}
