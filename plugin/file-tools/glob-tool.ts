// The `glob` tool that replaces OpenCode's (same arguments: pattern, path; same output). It lists files
// where the session's files are (the VM for a sandboxed session), with ripgrep's rules: ignored and
// hidden files skipped, symlinks not followed; at most 100 results.
import { tool } from "@opencode-ai/plugin";
import { resolve } from "node:path";
import type { SessionTracker } from "../sessions";
import { GLOB_DESCRIPTION } from "./descriptions";
import { globToRegex } from "./glob-pattern";
import { globFiles } from "./jobs";
import { absolutePath, askExternalDirectory, titleOf } from "./paths";
import { runnerFor } from "./runner";

const GLOB_LIMIT = 100;

export function createGlobTool(sessions: SessionTracker) {
  return tool({
    description: GLOB_DESCRIPTION,
    args: {
      pattern: tool.schema.string().describe("The glob pattern to match files against"),
      path: tool.schema
        .string()
        .optional()
        .describe(
          'The directory to search in. If not specified, the current working directory will be used. IMPORTANT: Omit this field to use the default directory. DO NOT enter "undefined" or "null" - simply omit it for the default behavior. Must be a valid directory path if provided.',
        ),
    },
    async execute(args, context) {
      const runner = await runnerFor(sessions, context, "glob");
      await context.ask({ permission: "glob", patterns: [args.pattern], always: ["*"], metadata: { pattern: args.pattern, path: args.path } });
      const dir = absolutePath(args.path ?? context.directory, context);
      await askExternalDirectory(context, dir, "directory");
      const found = await globFiles(runner, dir, globToRegex(args.pattern), GLOB_LIMIT);
      if (found.kind === "notdir") throw new Error(`glob path must be a directory: ${dir}`);
      if (found.kind === "missing") throw new Error(`glob path does not exist: ${dir}`);
      const paths = found.paths.slice(0, GLOB_LIMIT).map((path) => resolve(dir, path));
      const truncated = paths.length === GLOB_LIMIT;
      const lines = paths.length === 0 ? ["No files found"] : paths;
      if (truncated) lines.push("", `(Results are truncated: showing first ${GLOB_LIMIT} results. Consider using a more specific path or pattern.)`);
      return { title: titleOf(dir, context), output: lines.join("\n"), metadata: { count: paths.length, truncated, where: runner.where } };
    },
  });
}
