// What a session's VM mounts: the git top level of its directory; the main repository's git common dir
// when the directory is a linked worktree whose back-link verifies from the main repository's own
// metadata; and the shared OpenCode directories. A command's cwd must lie inside one of them.
import { existsSync, readFileSync, realpathSync, statSync } from "node:fs";
import { basename, dirname, join, resolve, sep } from "node:path";
import { CwdOutsideMountsError, PathNotFoundError, UnsafeMountError, WorktreeUnverifiedError } from "../errors";

export type SessionMounts = {
  /** The git top level (or the directory itself outside git). */
  top: string;
  /** The main repository's git common dir, for a verified linked worktree. */
  commonDir: string | null;
  shared: string[];
  all: string[];
};

function real(path: string, what: string): string {
  try {
    return realpathSync(path);
  } catch {
    throw new PathNotFoundError(what, path);
  }
}

function findDotGit(start: string): string | null {
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, ".git"))) return dir;
    if (dirname(dir) === dir) return null;
  }
}

/** The main repository's common dir if `top/.git` is a worktree link that verifies, else null. Throws if forged. */
function verifiedCommonDir(top: string): string | null {
  const dotGit = join(top, ".git");
  if (statSync(dotGit).isDirectory()) return null;
  const pointer = /^gitdir:\s*(.+?)\s*$/m.exec(readFileSync(dotGit, "utf8"))?.[1];
  if (!pointer) throw new WorktreeUnverifiedError(top, "its .git file has no gitdir line");
  const gitDir = realpathOr(resolve(top, pointer));
  if (!gitDir) throw new WorktreeUnverifiedError(top, `its .git file points at ${pointer}, which does not exist`);
  if (gitDir === top || gitDir.startsWith(top + sep)) return null; // points inside the repository: nothing more to mount
  const commondirFile = join(gitDir, "commondir");
  if (!existsSync(commondirFile)) throw new WorktreeUnverifiedError(top, `its .git file points outside the repository, to ${gitDir}, which is not a worktree entry`);
  const commonDir = realpathOr(resolve(gitDir, readFileSync(commondirFile, "utf8").trim()));
  // Trust only the main repository's side: its worktrees/<name> entry must be the one the .git file
  // named, and that entry's gitdir must point back at this worktree's .git.
  const entry = commonDir ? join(commonDir, "worktrees", basename(gitDir)) : null;
  const backLink = entry && existsSync(join(entry, "gitdir")) ? realpathOr(readFileSync(join(entry, "gitdir"), "utf8").trim()) : null;
  if (!commonDir || realpathOr(entry!) !== gitDir || backLink !== realpathSync(dotGit)) {
    throw new WorktreeUnverifiedError(top, `the main repository's worktree entry does not point back at ${dotGit}`);
  }
  return commonDir;
}

function realpathOr(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}

export function resolveSessionMounts(directory: string, sharedDirs: string[]): SessionMounts {
  const start = real(directory, "session directory");
  const gitTop = findDotGit(start);
  const top = gitTop ?? start; // outside git, the directory itself
  if (top === "/") throw new UnsafeMountError(top);
  const commonDir = gitTop ? verifiedCommonDir(gitTop) : null;
  const shared = sharedDirs.map((dir) => realpathOr(dir)).filter((dir): dir is string => dir !== null);
  return { top, commonDir, shared, all: [top, ...(commonDir ? [commonDir] : []), ...shared] };
}

/** The real cwd if it lies inside one of the mounts; otherwise a 4xx with the reason. */
export function checkCwd(cwd: string, mounts: SessionMounts): string {
  const realCwd = real(cwd, "cwd");
  const inside = mounts.all.some((mount) => realCwd === mount || realCwd.startsWith(mount + sep));
  if (!inside) throw new CwdOutsideMountsError(cwd, mounts.all);
  return realCwd;
}
