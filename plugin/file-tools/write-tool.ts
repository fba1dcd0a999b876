// The `write` tool that replaces OpenCode's (same arguments: content, filePath; same output). It writes
// where the session's files are: through a symlink only as the VM resolves it, and into `.git` only if
// the VM allows it. Overwriting needs a read of the file in this session first.
import { tool } from "@opencode-ai/plugin";
import type { SessionTracker } from "../sessions";
import { commitText, currentFile, expectedState, splitBom } from "./change";
import { WRITE_DESCRIPTION } from "./descriptions";
import { absolutePath, askExternalDirectory, titleOf } from "./paths";
import type { ReadStamps } from "./read-stamps";
import { runnerFor } from "./runner";
import { unifiedDiff } from "./unified-diff";

export function createWriteTool(sessions: SessionTracker, stamps: ReadStamps) {
  return tool({
    description: WRITE_DESCRIPTION,
    args: {
      content: tool.schema.string().describe("The content to write to the file"),
      filePath: tool.schema.string().describe("The absolute path to the file to write (must be absolute, not relative)"),
    },
    async execute(args, context) {
      const path = absolutePath(args.filePath, context);
      const runner = await runnerFor(sessions, context, "write");
      await askExternalDirectory(context, path, "file");
      const current = await currentFile(runner, path);
      if (current.exists) stamps.assertFresh(context.sessionID, path, current);
      const next = splitBom(args.content);
      const diff = unifiedDiff(path, current.text, next.text);
      await context.ask({ permission: "edit", patterns: [titleOf(path, context)], always: ["*"], metadata: { filepath: path, diff } });
      await commitText(runner, stamps, context.sessionID, path, next.text, current.bom || next.bom, expectedState(current));
      return { title: titleOf(path, context), output: "Wrote file successfully.", metadata: { diagnostics: {}, filepath: path, exists: current.exists, where: runner.where } };
    },
  });
}
