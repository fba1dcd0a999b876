// What a session's VM mounts, decided once and pinned: the git top level of its directory and the main
// repository's common dir for a verified linked worktree. Both are served to the VM through a repository
// view (runtime/repo-fs, docs/repository-guard.md), which refuses, on every operation and at any depth, the
// changes that would make host programs run what the guest wrote. Later commands compare against the pins
// and never re-resolve a path the guest can write.
import { realpathSync, statSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { CwdOutsideMountsError, MountsChangedError, PathNotFoundError, UnsafeMountError, WorktreeUnverifiedError } from "../errors";
import { entryKind, identityOf, UnsafePathError, type Identity } from "./host-fs";
import { deniedBy, type ProtectedDirs } from "./mount-deny-list";
import { verifiedCommonDir } from "./worktree";
import type { BindMount } from "../../runtime/driver";

export type PinnedDir = Identity & { path: string };

export type PinnedMounts = {
  /** The session directory as resolved at the first command. */
  directory: PinnedDir;
  /** The git top level (or the directory itself outside git), mounted read-write. */
  top: PinnedDir;
  /** The repository's git dir (`<top>/.git`, or where a worktree's pointer leads), null outside git. */
  gitDir: string | null;
  /** The main repository's git common dir, for a verified linked worktree. */
  commonDir: PinnedDir | null;
};

function real(path: string, what: string): string {
  try {
    return realpathSync(path);
  } catch {
    throw new PathNotFoundError(what, path);
  }
}

function refuseDenied(path: string, protectedDirs: ProtectedDirs): void {
  const rule = deniedBy(path, protectedDirs);
  if (rule) throw new UnsafeMountError(path, rule);
}

/** The nearest directory at or above `start` holding a `.git` entry (looked at with lstat, never opened). */
function findGitTop(start: string): { top: string; dotGit: "directory" | "file" } | null {
  for (let dir = start; ; dir = dirname(dir)) {
    const dotGit = join(dir, ".git");
    const kind = entryKind(dotGit);
    if (kind === "directory" || kind === "file") return { top: dir, dotGit: kind };
    if (kind !== null) {
      throw new UnsafeMountError(dir, `${dotGit} is a ${kind === "symlink" ? "symbolic link" : "FIFO, socket or device"}; git makes .git a directory or a worktree's pointer file`);
    }
    if (dirname(dir) === dir) return null;
  }
}

function pinDir(path: string): PinnedDir {
  return { path, ...identityOf(path, "directory") };
}

/** Runs `work`; a guest-writable path found not to be what it should be becomes a 400 naming `top`. */
function refusingUnsafe<T>(top: string, work: () => T): T {
  try {
    return work();
  } catch (error) {
    if (error instanceof UnsafePathError) throw new UnsafeMountError(top, error.reason);
    throw error;
  }
}

/** First resolution: follows the registered directory (trusted: no guest of this session has run yet), then pins. */
export function pinSessionMounts(directory: string, protectedDirs: ProtectedDirs): PinnedMounts {
  const start = real(directory, "session directory");
  if (!statSync(start).isDirectory()) throw new UnsafeMountError(start, "it is not a directory");
  refuseDenied(start, protectedDirs);
  const git = findGitTop(start);
  const topPath = git?.top ?? start;
  refuseDenied(topPath, protectedDirs);
  const { gitDir, commonDir: commonPath } = refusingUnsafe(topPath, () =>
    !git ? { gitDir: null, commonDir: null } : git.dotGit === "directory" ? { gitDir: join(topPath, ".git"), commonDir: null } : verifiedCommonDir(topPath),
  );
  if (commonPath) {
    refuseDenied(commonPath, protectedDirs);
    // The common dir is mounted read-write with the worktree's owner mapping: it must be that owner's.
    const [worktreeOwner, mainOwner] = [statSync(topPath).uid, statSync(commonPath).uid];
    if (worktreeOwner !== mainOwner) {
      throw new WorktreeUnverifiedError(topPath, `its main repository ${commonPath} belongs to uid ${mainOwner}, the worktree to uid ${worktreeOwner}`);
    }
  }
  return refusingUnsafe(topPath, () => ({
    directory: pinDir(start),
    top: pinDir(topPath),
    gitDir,
    commonDir: commonPath ? pinDir(commonPath) : null,
  }));
}

/** Every later command: the pinned roots must still be the same inodes, reached without a symlink. */
export function verifyPinnedMounts(sessionId: string, pins: PinnedMounts): void {
  const check = (pinned: PinnedDir, what: string) => {
    let now: Identity;
    try {
      now = identityOf(pinned.path, "directory");
    } catch (error) {
      throw new MountsChangedError(sessionId, `${what} ${pinned.path} changed: ${error instanceof UnsafePathError ? error.reason : String(error)}`);
    }
    if (now.dev !== pinned.dev || now.ino !== pinned.ino) {
      throw new MountsChangedError(sessionId, `${what} ${pinned.path} was replaced by another directory`);
    }
  };
  check(pins.top, "its repository");
  if (pins.commonDir) check(pins.commonDir, "its main repository's git directory");
  check(pins.directory, "its directory");
}

/** The directories from `top` down to `directory` (relative to `top`; empty for the top itself). */
function chainBelow(top: string, directory: string): string[] {
  const parts = relative(top, directory).split(sep).filter(Boolean);
  return parts.map((_, index) => parts.slice(0, index + 1).join("/"));
}

/**
 * The VM's mounts, parents before children: the pinned roots through repository views, then shared dirs.
 * The session's directory and every directory down to it are kept (the guest cannot rename them away);
 * a git dir inside the top under another name (a `.git` pointer file leading inside) is guarded as one.
 */
export function mountsOf(pins: PinnedMounts, sharedDirs: string[]): { mounts: BindMount[]; roots: string[] } {
  const shared = sharedDirs.flatMap((dir) => {
    try {
      return [realpathSync(dir)];
    } catch {
      return [];
    }
  });
  const roots = [pins.top.path, ...(pins.commonDir ? [pins.commonDir.path] : []), ...shared];
  const gitDirInside = pins.gitDir && !pins.commonDir && pins.gitDir !== join(pins.top.path, ".git") && pins.gitDir.startsWith(`${pins.top.path}${sep}`);
  const mounts: BindMount[] = [
    {
      hostPath: pins.top.path,
      pin: { dev: pins.top.dev, ino: pins.top.ino },
      guard: { keep: chainBelow(pins.top.path, pins.directory.path), ...(gitDirInside ? { gitDirs: [relative(pins.top.path, pins.gitDir!)] } : {}) },
    },
    ...(pins.commonDir ? [{ hostPath: pins.commonDir.path, pin: { dev: pins.commonDir.dev, ino: pins.commonDir.ino }, guard: { gitDirRoot: true } }] : []),
    ...shared.map((hostPath) => ({ hostPath })),
  ];
  return { mounts, roots };
}

/**
 * The cwd to run in, if it lies inside one of the mounts. A cwd spelled through a host symlink above the
 * mounts (e.g. /home → /usr/home) is accepted by its real path; one that reaches outside the mounts
 * through a symlink inside them (the guest's) is refused, since the VM would not find it there.
 * Resolving it never blocks: realpath reads links, it opens nothing.
 */
export function checkCwd(cwd: string, roots: string[]): string {
  if (!cwd.startsWith("/")) throw new CwdOutsideMountsError(cwd, roots);
  const isInside = (path: string) => roots.some((root) => path === root || path.startsWith(root + sep));
  const realCwd = real(cwd, "cwd");
  if (!isInside(realCwd)) throw new CwdOutsideMountsError(cwd, roots);
  return realCwd;
}
