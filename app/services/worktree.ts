// A linked worktree's `.git` pointer file, verified from the main repository's own metadata. The pointer
// is written by whoever can write the worktree (a guest): it is read as hostile input (no symlink, no
// FIFO, at most 4 KiB) and trusted only when the main repository's worktree entry points back at it.
import { realpathSync } from "node:fs";
import { basename, join, resolve, sep } from "node:path";
import { WorktreeUnverifiedError } from "../errors";
import { entryKind, readSmallFile } from "./host-fs";

function realpathOr(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}

/**
 * The git dir the pointer at `top/.git` names and, when that lies outside the repository, the main
 * repository's common dir. Throws WorktreeUnverifiedError when the main repository does not vouch for it.
 */
export function verifiedCommonDir(top: string): { gitDir: string; commonDir: string | null } {
  const dotGit = join(top, ".git");
  const pointer = /^gitdir:\s*(.+?)\s*$/m.exec(readSmallFile(dotGit))?.[1];
  if (!pointer) throw new WorktreeUnverifiedError(top, "its .git file has no gitdir line");
  const gitDir = realpathOr(resolve(top, pointer));
  if (!gitDir) throw new WorktreeUnverifiedError(top, `its .git file points at ${pointer}, which does not exist`);
  // Inside the repository: the guest's own git dir, guarded like a main repository's.
  if (gitDir === top || gitDir.startsWith(top + sep)) return { gitDir, commonDir: null };
  if (entryKind(join(gitDir, "commondir")) !== "file") {
    throw new WorktreeUnverifiedError(top, `its .git file points outside the repository, to ${gitDir}, which is not a worktree entry`);
  }
  const commonDir = realpathOr(resolve(gitDir, readSmallFile(join(gitDir, "commondir")).trim()));
  // Trust only the main repository's side: its worktrees/<name> entry must be the one the .git file
  // named, and that entry's gitdir must name this worktree's .git — compared as text, never resolved,
  // so a symlink planted on either side cannot make two different paths look equal.
  const entry = commonDir ? join(commonDir, "worktrees", basename(gitDir)) : null;
  const backLink = entry && entryKind(join(entry, "gitdir")) === "file" ? resolve(readSmallFile(join(entry, "gitdir")).trim()) : null;
  if (!commonDir || !entry || realpathOr(entry) !== gitDir || backLink !== dotGit) {
    throw new WorktreeUnverifiedError(top, `the main repository's worktree entry does not point back at ${dotGit}`);
  }
  return { gitDir, commonDir };
}
