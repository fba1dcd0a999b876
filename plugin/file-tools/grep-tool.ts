// The `grep` tool that replaces OpenCode's (same arguments: pattern, path, include; same output, including
// the line terminator ripgrep leaves in each match's text). It searches where the session's files are
// (the VM for a sandboxed session): ignored and binary files skipped, hidden ones searched, at most 100
// matches.
import { tool } from "@opencode-ai/plugin";
import { dirname, resolve } from "node:path";
import type { SessionTracker } from "../sessions";
import { GREP_DESCRIPTION } from "./descriptions";
import { globToRegex } from "./glob-pattern";
import { grepFiles, pathKind, type GrepMatch } from "./jobs";
import { absolutePath, askExternalDirectory, insideProject } from "./paths";
import { runnerFor } from "./runner";

const GREP_LIMIT = 100;
const MAX_TEXT_CHARS = 2000;
/** Bytes per output line: a path of up to 4 KiB, the line number, and 2000 characters of text. */
const LINE_BYTES = 4096 + 32 + MAX_TEXT_CHARS * 4;

/**
 * OpenCode's grep listing: matches grouped by file, a blank line between files.
 * Exported so a test checks the listing byte for byte.
 */
export function formatMatches(matches: GrepMatch[], truncated: boolean): string {
  const out = [`Found ${matches.length} matches${truncated ? " (more matches available)" : ""}`];
  let current = "";
  for (const match of matches) {
    if (current !== match.path) {
      if (current !== "") out.push("");
      current = match.path;
      out.push(`${match.path}:`);
    }
    out.push(`  Line ${match.line}: ${match.text}`);
  }
  if (truncated) out.push("", "(Results truncated. Consider using a more specific path or pattern.)");
  return out.join("\n");
}

/** The text ripgrep reports for a line: with its terminator, cut at 2000 characters. */
const matchText = (text: string) => {
  const full = `${text}\n`;
  return full.length > MAX_TEXT_CHARS ? full.slice(0, MAX_TEXT_CHARS).replace(/[\uD800-\uDBFF]$/, "") + "..." : full;
};

export function createGrepTool(sessions: SessionTracker) {
  return tool({
    description: GREP_DESCRIPTION,
    args: {
      pattern: tool.schema.string().describe("The regex pattern to search for in file contents"),
      path: tool.schema.string().optional().describe("The directory to search in. Defaults to the current working directory."),
      include: tool.schema.string().optional().describe('File pattern to include in the search (e.g. "*.js", "*.{ts,tsx}")'),
    },
    async execute(args, context) {
      const empty = { title: args.pattern, metadata: { matches: 0, truncated: false }, output: "No files found" };
      if (!args.pattern) throw new Error("pattern is required");
      const runner = await runnerFor(sessions, context, "grep");
      await context.ask({ permission: "grep", patterns: [args.pattern], always: ["*"], metadata: { pattern: args.pattern, path: args.path, include: args.include } });
      const target = absolutePath(args.path ?? context.directory, context);
      if (!insideProject(target, context)) await askExternalDirectory(context, target, (await pathKind(runner, target)) === "dir" ? "directory" : "file");
      const include = args.include ? globToRegex(args.include).regex : undefined;
      const found = await grepFiles(runner, { target, pattern: args.pattern, include }, GREP_LIMIT, LINE_BYTES);
      if (found.kind === "missing") return { ...empty, metadata: { ...empty.metadata, where: runner.where } };
      if (found.kind === "badpattern") throw new Error(`regex parse error:\n    ${found.message}`);
      const base = found.target === "dir" ? target : dirname(target);
      const matches = found.matches.slice(0, GREP_LIMIT).map((match) => ({ path: resolve(base, match.path), line: match.line, text: matchText(match.text) }));
      if (matches.length === 0) return { ...empty, metadata: { ...empty.metadata, where: runner.where } };
      const truncated = matches.length === GREP_LIMIT;
      return { title: args.pattern, output: formatMatches(matches, truncated), metadata: { matches: matches.length, truncated, where: runner.where } };
    },
  });
}
