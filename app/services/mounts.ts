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
  /** The main repository's git common dir, for a verified linked worktree. */
  commonDir: PinnedDir | null;
  /** Git metadata: directories mounted onto themselves (so they cannot be renamed away) and read-only pieces. */
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

/** First resolution: follows the registered directory (trusted: no guest of this session has run yet), then pins. */
export function pinSessionMounts(directory: string, protectedDirs: ProtectedDirs): PinnedMounts {
  const start = real(directory, "session directory");
  if (!statSync(start).isDirectory()) throw new UnsafeMountError(start, "it is not a directory");
  refuseDenied(start, protectedDirs);
  const git = findGitTop(start);
  const topPath = git?.top ?? start;
  refuseDenied(topPath, protectedDirs);
  try {
    const top = pinDir(topPath);
    const directory = pinDir(start);
    if (!git) return { directory, top, commonDir: null, guards: openCodeConfigGuards(topPath, start, null) };
    const dotGit = join(topPath, ".git");
    if (git.dotGit === "directory") {
      return { directory, top, commonDir: null, guards: [...gitMetadataGuards(dotGit), ...openCodeConfigGuards(topPath, start, dotGit)] };
    }
    const { gitDir, commonDir: commonPath } = verifiedCommonDir(topPath);
    if (commonPath) {
      refuseDenied(commonPath, protectedDirs);
      // The common dir is mounted read-write with the worktree's owner mapping: it must be that owner's.
      const [worktreeOwner, mainOwner] = [statSync(topPath).uid, statSync(commonPath).uid];
      if (worktreeOwner !== mainOwner) {
        throw new WorktreeUnverifiedError(topPath, `its main repository ${commonPath} belongs to uid ${mainOwner}, the worktree to uid ${worktreeOwner}`);
      }
    }
    const guards: GuardedPath[] = [
      { path: dotGit, mode: "read-only", kind: "file" },
      ...gitMetadataGuards(gitDir, commonPath),
      ...openCodeConfigGuards(topPath, start, commonPath ?? gitDir),
    ];
    return { directory, top, commonDir: commonPath ? pinDir(commonPath) : null, guards };
  } catch (error) {
    if (error instanceof UnsafePathError) throw new UnsafeMountError(topPath, error.reason);
    throw error;
  }
}

/**
 * A directory pinned outside git that has since become a repository (the guest ran `git init` at the
 * top): its git metadata is guarded from the next VM on, so the guest cannot keep rewriting it. What the
 * guest wrote before that is its own (see docs/runtime-local.md, residual risks). Null when unchanged.
 */
export function guardNewRepository(pins: PinnedMounts): PinnedMounts | null {
  const dotGit = join(pins.top.path, ".git");
  if (pins.commonDir || pins.guards.some((guard) => guard.path === dotGit)) return null;
  if (entryKind(dotGit) !== "directory") return null;
  try {
    return { ...pins, guards: [...gitMetadataGuards(dotGit), ...pins.guards] };
  } catch (error) {
    if (error instanceof UnsafePathError) throw new UnsafeMountError(pins.top.path, error.reason);
    throw error;
  }
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
  const top = pins.top.path;
  const dotGit = join(top, ".git");
  const hasGit = pins.guards.some((guard) => guard.path === dotGit);
  try {
    if (pins.commonDir) {
      // A worktree's own git dir is the guard of mode "self" inside the common dir.
      const gitDir = pins.guards.find((guard) => guard.mode === "self" && guard.path.startsWith(`${pins.commonDir!.path}/`))?.path ?? pins.commonDir.path;
      return { ...pins, guards: [{ path: dotGit, mode: "read-only", kind: "file" }, ...gitMetadataGuards(gitDir, pins.commonDir.path), ...openCodeConfigGuards(top, pins.directory.path, pins.commonDir.path)] };
    }
    const git = hasGit ? gitMetadataGuards(dotGit) : [];
    return { ...pins, guards: [...git, ...openCodeConfigGuards(top, pins.directory.path, hasGit ? dotGit : null)] };
  } catch (error) {
    if (error instanceof UnsafePathError) throw new UnsafeMountError(top, error.reason);
    throw error;
  }
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
