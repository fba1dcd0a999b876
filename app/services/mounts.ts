// What a session's VM mounts, decided once and pinned: the git top level of its directory, the main
// repository's common dir for a verified linked worktree, and — read-only inside those — every piece of
// git metadata that can make host git run a program, and OpenCode's project config (same reason). Later
// commands compare against the pins and never re-resolve a path the guest can write.
import { lstatSync, realpathSync, statSync } from "node:fs";
import { dirname, join, resolve, sep } from "node:path";
import { CwdOutsideMountsError, MountsChangedError, PathNotFoundError, UnsafeMountError, WorktreeUnverifiedError } from "../errors";
import { entryKind, identityOf, UnsafePathError, type Identity } from "./host-fs";
import { gitMetadataGuards, type GuardedPath } from "./git-metadata";
import { deniedBy, type ProtectedDirs } from "./mount-deny-list";
import { openCodeConfigGuards } from "./opencode-config-guards";
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
  /** Git metadata and OpenCode config: directories mounted onto themselves (so they cannot be renamed away) and read-only pieces. */
  guards: GuardedPath[];
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

/**
 * The guards of a repository (or of a plain directory, with `gitDir` null): its git metadata, a worktree's
 * pointer file, and OpenCode's config from the top down to the session directory. Missing entries are
 * created (see git-metadata.ts, opencode-config-guards.ts); a path that is not what git or OpenCode keep
 * there is a refusal naming the top.
 */
function guardsOf(top: string, directory: string, gitDir: string | null, commonDir: string | null): GuardedPath[] {
  const dotGit = join(top, ".git");
  return refusingUnsafe(top, () => {
    const git: GuardedPath[] = !gitDir
      ? []
      : [
          // A pointer file (worktree, or a git dir elsewhere in the repository) redirects host git: read-only.
          ...(gitDir !== dotGit ? [{ path: dotGit, mode: "read-only" as const, kind: "file" as const }] : []),
          ...gitMetadataGuards(gitDir, commonDir),
        ];
    return [...git, ...openCodeConfigGuards(top, directory, commonDir ?? gitDir)];
  });
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
    guards: guardsOf(topPath, start, gitDir, commonPath),
  }));
}

/**
 * A directory pinned outside git that has since become a repository (the guest ran `git init` at the
 * top): its git metadata is guarded from the next VM on, so the guest cannot keep rewriting it. What the
 * guest wrote before that is its own (see docs/runtime-local.md, residual risks). Null when unchanged.
 */
export function guardNewRepository(pins: PinnedMounts): PinnedMounts | null {
  const dotGit = join(pins.top.path, ".git");
  if (pins.gitDir || entryKind(dotGit) !== "directory") return null;
  return { ...pins, gitDir: dotGit, guards: guardsOf(pins.top.path, pins.directory.path, dotGit, null) };
}

/**
 * A guarded entry the host user removed since (e.g. the `opencode.json` placeholder) is made again, so
 * the next VM can mount it read-only. Cheap when nothing is missing: one lstat per guard. Null if unchanged.
 */
export function restoreMissingGuards(pins: PinnedMounts): PinnedMounts | null {
  const missing = pins.guards.some((guard) => {
    try {
      lstatSync(guard.path);
      return false;
    } catch {
      return true;
    }
  });
  if (!missing) return null;
  return { ...pins, guards: guardsOf(pins.top.path, pins.directory.path, pins.gitDir, pins.commonDir?.path ?? null) };
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

/** The VM's mounts, parents before children: pinned roots, git guards inside them, shared dirs. */
export function mountsOf(pins: PinnedMounts, sharedDirs: string[]): { mounts: BindMount[]; roots: string[] } {
  const shared = sharedDirs.flatMap((dir) => {
    try {
      return [realpathSync(dir)];
    } catch {
      return [];
    }
  });
  const roots = [pins.top.path, ...(pins.commonDir ? [pins.commonDir.path] : []), ...shared];
  const mounts: BindMount[] = [
    { hostPath: pins.top.path, pin: { dev: pins.top.dev, ino: pins.top.ino } },
    ...(pins.commonDir ? [{ hostPath: pins.commonDir.path, pin: { dev: pins.commonDir.dev, ino: pins.commonDir.ino } }] : []),
    ...pins.guards.map((guard): BindMount => ({
      hostPath: guard.path,
      ...(guard.mode === "read-only" ? { readOnly: true } : {}),
      ...(guard.kind === "file" ? { kind: "file" as const } : {}),
    })),
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
