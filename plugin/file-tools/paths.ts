// Path rules the file tools share with OpenCode's built-in ones: relative paths resolve against the
// session directory, titles are relative to the worktree, and a path outside the project asks the
// `external_directory` permission first (a text comparison, as OpenCode makes it; what the path then
// resolves to is decided where the tool runs: in a sandboxed session, the VM).
import type { ToolContext } from "@opencode-ai/plugin";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";

/** The absolute path a tool argument names. */
export function absolutePath(input: string, context: Pick<ToolContext, "directory">): string {
  if (input.includes("\0")) throw new Error(`The path contains a NUL character, which no file path can: ${JSON.stringify(input)}`);
  return isAbsolute(input) ? resolve(input) : resolve(context.directory, input);
}

function contains(parent: string, child: string): boolean {
  const rel = relative(parent, child);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/** Inside the session directory or its worktree (a worktree of "/" contains nothing, as in OpenCode). */
export function insideProject(path: string, context: Pick<ToolContext, "directory" | "worktree">): boolean {
  if (contains(context.directory, path)) return true;
  return context.worktree !== "/" && contains(context.worktree, path);
}

/** The title OpenCode shows for a path: relative to the worktree. */
export function titleOf(path: string, context: Pick<ToolContext, "worktree">): string {
  return relative(context.worktree, path);
}

/** Asks `external_directory` for a path outside the project, exactly as the built-in tools do. */
export async function askExternalDirectory(context: ToolContext, path: string, kind: "file" | "directory"): Promise<void> {
  if (insideProject(path, context)) return;
  const parentDir = kind === "directory" ? path : dirname(path);
  const pattern = join(parentDir, "*").replaceAll("\\", "/");
  await context.ask({ permission: "external_directory", patterns: [pattern], always: [pattern], metadata: { filepath: path, parentDir } });
}
