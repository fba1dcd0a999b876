// The `edit` tool that replaces OpenCode's (same arguments: filePath, oldString, newString, replaceAll;
// same matching, messages and output). It reads and writes where the session's files are, keeps the
// file's line endings and BOM, and needs a read of the file in this session first.
import { tool } from "@opencode-ai/plugin";
import type { SessionTracker } from "../sessions";
import { commitText, currentFile, expectedState, splitBom } from "./change";
import { EDIT_DESCRIPTION } from "./descriptions";
import { absolutePath, askExternalDirectory, titleOf } from "./paths";
import type { ReadStamps } from "./read-stamps";
import { replaceText } from "./replace";
import { runnerFor } from "./runner";
import { countChanges, unifiedDiff } from "./unified-diff";

const toLf = (text: string) => text.replaceAll("\r\n", "\n");
const toEnding = (text: string, ending: string) => (ending === "\n" ? text : text.replaceAll("\n", ending));

export function createEditTool(sessions: SessionTracker, stamps: ReadStamps) {
  return tool({
    description: EDIT_DESCRIPTION,
    args: {
      filePath: tool.schema.string().describe("The absolute path to the file to modify"),
      oldString: tool.schema.string().describe("The text to replace"),
      newString: tool.schema.string().describe("The text to replace it with (must be different from oldString)"),
      replaceAll: tool.schema.boolean().optional().describe("Replace all occurrences of oldString (default false)"),
    },
    async execute(args, context) {
      if (!args.filePath) throw new Error("filePath is required");
      if (args.oldString === args.newString) throw new Error("No changes to apply: oldString and newString are identical.");
      const path = absolutePath(args.filePath, context);
      const runner = await runnerFor(sessions, context, "edit");
      await askExternalDirectory(context, path, "file");
      const current = await currentFile(runner, path);
      let before: string;
      let after: string;
      let bom: boolean;
      if (args.oldString === "") {
        if (current.exists) throw new Error("oldString cannot be empty when editing an existing file. Provide the exact text to replace, or use write for an intentional full-file replacement.");
        const created = splitBom(args.newString);
        [before, after, bom] = ["", created.text, created.bom];
      } else {
        if (!current.exists) throw new Error(`File ${path} not found`);
        stamps.assertFresh(context.sessionID, path, current);
        const ending = current.text.includes("\r\n") ? "\r\n" : "\n";
        const replaced = splitBom(replaceText(current.text, toEnding(toLf(args.oldString), ending), toEnding(toLf(args.newString), ending), args.replaceAll));
        [before, after, bom] = [current.text, replaced.text, current.bom || replaced.bom];
      }
      const diff = unifiedDiff(path, toLf(before), toLf(after));
      await context.ask({ permission: "edit", patterns: [titleOf(path, context)], always: ["*"], metadata: { filepath: path, diff } });
      await commitText(runner, stamps, context.sessionID, path, after, bom, expectedState(current));
      const filediff = { file: path, patch: diff, ...countChanges(before, after) };
      context.metadata({ metadata: { diff, filediff, diagnostics: {} } });
      return { title: titleOf(path, context), output: "Edit applied successfully.", metadata: { diagnostics: {}, diff, filediff, where: runner.where } };
    },
  });
}
