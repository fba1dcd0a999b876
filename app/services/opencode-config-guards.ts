// OpenCode's project configuration is code the host runs: `opencode.json(c)` names MCP servers it
// starts and plugins it loads, `.opencode/` holds plugins and custom tools (TypeScript run by OpenCode).
// OpenCode looks for them in every directory from its working directory up to the git top level. A
// guest that writes them makes the user's next OpenCode start run its code on the host (measured with
// 1.18.33: a local MCP server named in a project opencode.json starts at the first prompt).
//
// So, in the VM, each of those names is read-only in the top level and in every directory down to the
// session's own, and each such directory is mounted onto itself so the guest cannot rename it away and
// recreate it. A missing name gets a harmless placeholder (`{}` or an empty directory) to mount over,
// kept out of `git status` through `.git/info/exclude` (written on the host, read-only in the VM).
import { appendFileSync, chownSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import type { GuardedPath } from "./git-metadata";
import { entryKind, readSmallFile, UnsafePathError } from "./host-fs";

const CONFIG_FILES = ["opencode.json", "opencode.jsonc"];
const CONFIG_DIR = ".opencode";
const EXCLUDE_MARK = "# added by session-sandbox: placeholders that keep the sandbox from writing OpenCode config";

/** The directories from `top` down to `directory` (both included), parents first. */
function chain(top: string, directory: string): string[] {
  const dirs = [top];
  if (directory === top) return dirs;
  let current = top;
  for (const part of relative(top, directory).split(sep)) {
    current = join(current, part);
    dirs.push(current);
  }
  return dirs;
}

function placeholder(path: string, kind: "file" | "directory", owner: { uid: number; gid: number }): boolean {
  const found = entryKind(path);
  if (found === kind) return false;
  if (found !== null) throw new UnsafePathError(path, `${path} is a ${found === "symlink" ? "symbolic link" : found}, where OpenCode reads its ${kind === "file" ? "config file" : "config directory"}`);
  // mkdir and O_EXCL ("wx") never follow a symlink planted in between: they fail instead.
  if (kind === "directory") mkdirSync(path, { mode: 0o755 });
  else writeFileSync(path, "{}\n", { flag: "wx", mode: 0o644 });
  chownSync(path, owner.uid, owner.gid);
  return true;
}

/** Keeps the placeholders out of `git status` in a repository whose git dir is `gitDir`. */
function excludePlaceholders(gitDir: string | null, top: string, created: string[]): void {
  if (!gitDir || created.length === 0) return;
  const exclude = join(gitDir, "info", "exclude");
  if (entryKind(exclude) === "symlink" || entryKind(join(gitDir, "info")) !== "directory") return;
  const current = entryKind(exclude) === "file" ? readSmallFile(exclude, 1 << 20) : "";
  const lines = created.map((path) => `/${relative(top, path)}`).filter((line) => !current.split("\n").includes(line));
  if (lines.length === 0) return;
  appendFileSync(exclude, `${current && !current.endsWith("\n") ? "\n" : ""}${current.includes(EXCLUDE_MARK) ? "" : `${EXCLUDE_MARK}\n`}${lines.join("\n")}\n`);
}

/**
 * Guards for OpenCode's config in `top` and each directory down to `directory`. `gitDir` is the
 * repository's git dir (for the exclude file), or null outside git.
 */
export function openCodeConfigGuards(top: string, directory: string, gitDir: string | null): GuardedPath[] {
  const guards: GuardedPath[] = [];
  const created: string[] = [];
  for (const dir of chain(top, directory)) {
    const stats = statSync(dir);
    const owner = { uid: stats.uid, gid: stats.gid };
    // The top is a mount of its own already; deeper directories become mount points so they stay put.
    if (dir !== top) guards.push({ path: dir, mode: "self", kind: "directory" });
    for (const name of CONFIG_FILES) {
      if (placeholder(join(dir, name), "file", owner)) created.push(join(dir, name));
      guards.push({ path: join(dir, name), mode: "read-only", kind: "file" });
    }
    if (placeholder(join(dir, CONFIG_DIR), "directory", owner)) created.push(join(dir, CONFIG_DIR));
    guards.push({ path: join(dir, CONFIG_DIR), mode: "read-only", kind: "directory" });
  }
  excludePlaceholders(gitDir, top, created);
  return guards;
}
