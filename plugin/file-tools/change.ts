// What write, edit and apply_patch share: the file's current text (BOM split off, as OpenCode keeps a
// BOM the file had), and committing new text where the session's files are, refused if the file
// changed since the tool looked at it (a bash command in the VM, say). A successful change counts as
// a fresh read for read-before-write.
import { probe, removeFile, writeBytes, type ChangeOutcome } from "./jobs";
import type { ReadStamps } from "./read-stamps";
import type { FileRunner } from "./runner";

const BOM = "\uFEFF";

export type Current = { exists: false; text: ""; bom: false } | { exists: true; text: string; bom: boolean; sha256: string; mtimeSeconds: number };

export function splitBom(text: string): { bom: boolean; text: string } {
  return text.startsWith(BOM) ? { bom: true, text: text.slice(1) } : { bom: false, text };
}

/** The file's current text; throws for a directory or anything that is not a readable regular file. */
export async function currentFile(runner: FileRunner, path: string): Promise<Current> {
  const found = await probe(runner, path);
  if (found.kind === "absent") return { exists: false, text: "", bom: false };
  if (found.kind === "dir") throw new Error(`Path is a directory, not a file: ${path}`);
  if (found.kind !== "file") throw new Error(`Cannot change ${path}: it is ${found.kind === "special" ? "not a regular file" : "not readable"}`);
  const { bom, text } = splitBom(new TextDecoder("utf-8", { ignoreBOM: true }).decode(found.bytes));
  return { exists: true, text, bom, sha256: found.sha256, mtimeSeconds: found.mtimeSeconds };
}

/** The state a commit must still find: the file's sha256, or "absent". */
export const expectedState = (current: Current) => (current.exists ? current.sha256 : "absent");

function settle(path: string, outcome: ChangeOutcome): string {
  if (outcome.ok) return outcome.state;
  if ("changed" in outcome) throw new Error(`File ${path} changed while this tool was working on it. Read it again, then retry.`);
  const reason = outcome.failed.replace(/^(?:\/bin\/)?sh: \d+: /gm, "").trim();
  throw new Error(`Failed to write ${path}: ${reason}`);
}

/** Writes `text` (with a BOM if `bom`) over what `current` was; records it as read by the session. */
export async function commitText(runner: FileRunner, stamps: ReadStamps, sessionID: string, path: string, text: string, bom: boolean, expect: string): Promise<void> {
  const state = settle(path, await writeBytes(runner, path, Buffer.from((bom ? BOM : "") + text, "utf8"), expect));
  stamps.record(sessionID, path, state);
}

export async function commitRemoval(runner: FileRunner, path: string, expect: string): Promise<void> {
  settle(path, await removeFile(runner, path, expect));
}
