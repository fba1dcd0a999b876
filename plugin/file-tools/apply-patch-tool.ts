// The `apply_patch` tool that replaces OpenCode's (same argument: patchText; same patch language,
// messages and summary). OpenCode offers it instead of edit/write to GPT models. Every file is read and
// changed where the session's files are; all changes are verified before the first one is made.
import { tool } from "@opencode-ai/plugin";
import { relative } from "node:path";
import type { SessionTracker } from "../sessions";
import { commitRemoval, commitText, currentFile, expectedState, splitBom, type Current } from "./change";
import { APPLY_PATCH_DESCRIPTION } from "./descriptions";
import { applyChunks, parsePatch, type Hunk } from "./patch";
import { absolutePath, askExternalDirectory } from "./paths";
import type { ReadStamps } from "./read-stamps";
import { runnerFor, type FileRunner } from "./runner";
import { countChanges, unifiedDiff } from "./unified-diff";

type Change = { type: "add" | "update" | "move" | "delete"; filePath: string; movePath?: string; before: string; after: string; bom: boolean; expect: string; diff: string };

const failed = (reason: string) => new Error(`apply_patch verification failed: ${reason}`);

function parse(patchText: string): Hunk[] {
  if (!patchText) throw new Error("patchText is required");
  let hunks: Hunk[];
  try {
    hunks = parsePatch(patchText);
  } catch (error) {
    throw failed(String(error));
  }
  if (hunks.length > 0) return hunks;
  const normalized = patchText.replace(/\r\n/g, "\n").replace(/\r/g, "\n").trim();
  throw normalized === "*** Begin Patch\n*** End Patch" ? new Error("patch rejected: empty patch") : failed("no hunks found");
}

async function planned(runner: FileRunner, hunk: Hunk, filePath: string, movePath: string | undefined): Promise<Change> {
  if (hunk.type === "add") {
    const contents = hunk.contents === "" || hunk.contents.endsWith("\n") ? hunk.contents : `${hunk.contents}\n`;
    const { bom, text } = splitBom(contents);
    return { type: "add", filePath, before: "", after: text, bom, expect: "", diff: unifiedDiff(filePath, "", text) };
  }
  let current: Current;
  try {
    current = await currentFile(runner, filePath);
  } catch (error) {
    if (hunk.type === "update") throw failed(`Failed to read file to update: ${filePath}`);
    throw failed((error as Error).message);
  }
  if (!current.exists) throw failed(hunk.type === "update" ? `Failed to read file to update: ${filePath}` : `Failed to read file to delete: ${filePath}`);
  if (hunk.type === "delete") return { type: "delete", filePath, before: current.text, after: "", bom: current.bom, expect: expectedState(current), diff: unifiedDiff(filePath, current.text, "") };
  let after: string;
  try {
    after = applyChunks(filePath, current.text, hunk.chunks);
  } catch (error) {
    throw failed(String(error));
  }
  const next = splitBom(after);
  return { type: movePath ? "move" : "update", filePath, movePath, before: current.text, after: next.text, bom: current.bom || next.bom, expect: expectedState(current), diff: unifiedDiff(filePath, current.text, next.text) };
}

export function createApplyPatchTool(sessions: SessionTracker, stamps: ReadStamps) {
  return tool({
    description: APPLY_PATCH_DESCRIPTION,
    args: { patchText: tool.schema.string().describe("The full patch text that describes all changes to be made") },
    async execute(args, context) {
      const hunks = parse(args.patchText);
      const runner = await runnerFor(sessions, context, "patch");
      const rel = (path: string) => relative(context.worktree, path).replaceAll("\\", "/");
      const changes: Change[] = [];
      for (const hunk of hunks) {
        const filePath = absolutePath(hunk.path, context);
        await askExternalDirectory(context, filePath, "file");
        const movePath = hunk.type === "update" && hunk.movePath ? absolutePath(hunk.movePath, context) : undefined;
        if (movePath) await askExternalDirectory(context, movePath, "file");
        changes.push(await planned(runner, hunk, filePath, movePath));
      }
      const diff = changes.map((change) => `${change.diff}\n`).join("");
      const files = changes.map((change) => ({
        filePath: change.filePath,
        relativePath: rel(change.movePath ?? change.filePath),
        type: change.type,
        patch: change.diff,
        ...(change.type === "delete" ? { additions: 0, deletions: change.before.split("\n").length } : countChanges(change.before, change.after)),
        ...(change.movePath ? { movePath: change.movePath } : {}),
      }));
      const patterns = changes.map((change) => rel(change.filePath));
      await context.ask({ permission: "edit", patterns, always: ["*"], metadata: { filepath: patterns.join(", "), diff, files } });
      for (const change of changes) {
        if (change.type === "delete") await commitRemoval(runner, change.filePath, change.expect);
        else if (change.type === "move") {
          await commitText(runner, stamps, context.sessionID, change.movePath!, change.after, change.bom, "");
          await commitRemoval(runner, change.filePath, change.expect);
        } else await commitText(runner, stamps, context.sessionID, change.filePath, change.after, change.bom, change.expect);
      }
      const summary = changes.map((change) => `${{ add: "A", delete: "D", update: "M", move: "M" }[change.type]} ${rel(change.movePath ?? change.filePath)}`);
      const output = `Success. Updated the following files:\n${summary.join("\n")}`;
      return { title: output, output, metadata: { diff, files, diagnostics: {}, where: runner.where } };
    },
  });
}
