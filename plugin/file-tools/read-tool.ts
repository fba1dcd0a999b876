// The `read` tool that replaces OpenCode's (same arguments: filePath, offset, limit; same output). It
// reads where the session's files are: the VM for a sandboxed session, so a symlink the guest planted
// resolves in the guest and never reaches a host file. Records the read for read-before-write.
import { tool } from "@opencode-ai/plugin";
import { dirname } from "node:path";
import type { SessionTracker } from "../sessions";
import { READ_DESCRIPTION } from "./descriptions";
import { pathKind, readBase64, readFile } from "./jobs";
import { absolutePath, askExternalDirectory, insideProject, titleOf } from "./paths";
import { attachableMime, DEFAULT_READ_LIMIT, formatDirectory, formatFileWindow, looksBinary, MAX_LINE_CHARS, MAX_OUTPUT_BYTES, notFoundMessage } from "./read-format";
import type { ReadStamps } from "./read-stamps";
import { runnerFor } from "./runner";

/** Bytes per line and in all that a read job sends back: enough for 2000 characters and 50 KiB out. */
const LINE_BYTES = MAX_LINE_CHARS * 4 + 4;
const CAP_BYTES = MAX_OUTPUT_BYTES * 2 + LINE_BYTES;

export function createReadTool(sessions: SessionTracker, stamps: ReadStamps) {
  return tool({
    description: READ_DESCRIPTION,
    args: {
      filePath: tool.schema.string().describe("The absolute path to the file or directory to read"),
      offset: tool.schema.number().int().min(0).optional().describe("The line number to start reading from (1-indexed)"),
      limit: tool.schema.number().int().min(0).optional().describe("The maximum number of lines to read (defaults to 2000)"),
    },
    async execute(args, context) {
      const path = absolutePath(args.filePath, context);
      const title = titleOf(path, context);
      const runner = await runnerFor(sessions, context, "read");
      if (!insideProject(path, context)) await askExternalDirectory(context, path, (await pathKind(runner, path)) === "dir" ? "directory" : "file");
      await context.ask({ permission: "read", patterns: [title], always: ["*"], metadata: {} });
      const offset = args.offset || 1;
      const limit = args.limit ?? DEFAULT_READ_LIMIT;
      const found = await readFile(runner, path, { offset, limit, lineBytes: LINE_BYTES, capBytes: CAP_BYTES });
      if (found.kind === "missing") throw new Error(notFoundMessage(path, dirname(path), found.siblings));
      if (found.kind === "special" || found.kind === "unreadable") throw new Error(`Cannot read ${path}: it is ${found.kind === "special" ? "not a regular file" : "not readable"}`);
      if (found.kind === "dir") {
        const listing = formatDirectory(path, found.entries, offset, limit);
        const display = { type: "directory", path, entries: listing.entries, offset, totalEntries: found.entries.length, truncated: listing.truncated };
        return { title, output: listing.output, metadata: { preview: listing.entries.slice(0, 20).join("\n"), truncated: listing.truncated, loaded: [], display, where: runner.where } };
      }
      stamps.record(context.sessionID, path, found.sha256);
      const mime = attachableMime(path, found.sample);
      if (mime) {
        const output = mime === "application/pdf" ? "PDF read successfully" : "Image read successfully";
        const url = `data:${mime};base64,${await readBase64(runner, path)}`;
        return { title, output, metadata: { preview: output, truncated: false, loaded: [], where: runner.where }, attachments: [{ type: "file" as const, mime, url }] };
      }
      if (looksBinary(path, found.sample)) throw new Error(`Cannot read binary file: ${path}`);
      const window = formatFileWindow(path, found.lines, found.count, offset, limit);
      const display = { type: "file", path, text: window.text, lineStart: offset, lineEnd: window.lineEnd, totalLines: found.count, truncated: window.truncated };
      return { title, output: window.output, metadata: { preview: window.preview, truncated: window.truncated, loaded: [], display, where: runner.where } };
    },
  });
}
