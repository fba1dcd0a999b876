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

/** The build's .dockerignore text, read like the Dockerfile; undefined when there is none. */
function readDockerignore(root: string, dockerfilePath: string): string | undefined {
  for (const candidate of [`${dockerfilePath}.dockerignore`, ".dockerignore"]) {
    let resolved: string;
    try {
      resolved = realpathSync(join(root, candidate));
    } catch {
      continue; // absent (or a dangling link): the next place, or none
    }
    const shown = `.dockerignore ${JSON.stringify(candidate)}`;
    if (!resolved.startsWith(root + sep)) throw new ImageInvalidError(`the ${shown} resolves outside the repository: it must be a file of the repository`);
    return readWalked(resolved, shown);
  }
  return undefined;
}

/** The Dockerfile's text, read safely; the repository's real path. Throws ImageInvalidError (a 400 with the fix). */
function readDockerfileText(directory: string, path: string): { root: string; text: string; dockerignore?: string } {
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
  return { root, text: readWalked(resolved, `Dockerfile ${shown}`), dockerignore: readDockerignore(root, path) };
}

/** Reads and plans `path` (relative) in `directory` and digests what it copies; throws ImageInvalidError. */
export function readDockerfileSource(directory: string, path: string, limitBytes: number): DockerfileSource {
  const { root, text, dockerignore } = readDockerfileText(directory, path);
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
    const { text, dockerignore } = readDockerfileText(directory, path);
    const last = known.get(key);
    if (last && last.text === text && last.dockerignore === dockerignore && now() - last.at < CONTEXT_RECHECK_MS) return last.source;
    const source = readDockerfileSource(directory, path, limitBytes);
    known.set(key, { text, dockerignore, source, at: now() });
    return source;
  };
}
