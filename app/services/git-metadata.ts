// The git metadata a guest must not change, because host git would run what it says: config (hooks
// path, fsmonitor, pager, editor, filters, diff drivers, credential helpers, includes, gpg.program, ssh
// command), hooks, info, submodule git dirs, and `commondir`, which redirects all of those elsewhere.
// They are mounted read-only in the VM; the directories holding them are mounted onto themselves, so
// the guest cannot rename them away and put its own in their place. Normal git work (objects, refs,
// index, HEAD, logs, rebase state) stays writable.
import { chownSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { entryKind, readSmallFile, UnsafePathError } from "./host-fs";

/** `self`: a read-write mount of a directory onto itself; `read-only`: a read-only mount. */
export type GuardedPath = { path: string; mode: "self" | "read-only"; kind: "file" | "directory" };

type Owner = { uid: number; gid: number };

/** Creates a missing guarded entry as the repository's owner, so there is something to mount read-only. */
function ensureEntry(path: string, kind: "file" | "directory", owner: Owner, content = ""): void {
  const found = entryKind(path);
  if (found === kind) return;
  if (found !== null) throw new UnsafePathError(path, `${path} is a ${found === "symlink" ? "symbolic link" : found}, where git keeps a ${kind}`);
  // O_EXCL ("wx") and mkdir never follow a symlink planted in between: they fail instead.
  if (kind === "directory") mkdirSync(path, { mode: 0o755 });
  else writeFileSync(path, content, { flag: "wx", mode: 0o644 });
  chownSync(path, owner.uid, owner.gid);
}

/** Present entries only: these are read when they exist and are harmless when absent. */
function ifPresent(path: string, kind: "file" | "directory"): GuardedPath[] {
  const found = entryKind(path);
  if (found === null) return [];
  if (found !== kind) throw new UnsafePathError(path, `${path} is a ${found === "symlink" ? "symbolic link" : found}, where git keeps a ${kind}`);
  return [{ path, mode: "read-only", kind }];
}

/** A main repository's git dir has no `commondir`, or the one this module wrote: ".", i.e. itself. */
function ensureSelfCommondir(gitDir: string, owner: Owner): void {
  const path = join(gitDir, "commondir");
  if (entryKind(path) === "file" && readSmallFile(path).trim() !== ".") {
    throw new UnsafePathError(path, `${path} redirects git to another directory, which a main repository never does; remove it after checking its content`);
  }
  // "." names the git dir itself (git accepts it: status, commit, worktree add and gc were checked).
  // Without it, a guest could create the file and point host git at a config of its own.
  ensureEntry(path, "file", owner, ".\n");
}

/** The pieces of one config-holding git dir (a main repository's) to guard. */
function configDirGuards(dir: string, owner: Owner): GuardedPath[] {
  ensureEntry(join(dir, "config"), "file", owner);
  for (const sub of ["hooks", "info", "modules"]) ensureEntry(join(dir, sub), "directory", owner);
  ensureSelfCommondir(dir, owner);
  return [
    { path: join(dir, "config"), mode: "read-only", kind: "file" },
    ...["hooks", "info", "modules"].map((sub): GuardedPath => ({ path: join(dir, sub), mode: "read-only", kind: "directory" })),
    { path: join(dir, "commondir"), mode: "read-only", kind: "file" },
    ...ifPresent(join(dir, "config.worktree"), "file"),
  ];
}

/**
 * Guards for a repository whose git dir is `gitDir`. For a linked worktree, `commonDir` is the main
 * repository's git dir (mounted read-write as a pinned root): its config pieces are guarded, and the
 * worktree's own entry keeps its `commondir`, `gitdir` and `config.worktree` read-only.
 */
export function gitMetadataGuards(gitDir: string, commonDir: string | null = null): GuardedPath[] {
  const stats = statSync(gitDir);
  const owner = { uid: stats.uid, gid: stats.gid };
  const self: GuardedPath = { path: gitDir, mode: "self", kind: "directory" };
  if (!commonDir) return [self, ...configDirGuards(gitDir, owner)];
  return [
    ...configDirGuards(commonDir, owner),
    self,
    ...ifPresent(join(gitDir, "commondir"), "file"),
    ...ifPresent(join(gitDir, "gitdir"), "file"),
    ...ifPresent(join(gitDir, "config.worktree"), "file"),
  ];
}
