// Typed file operations over a FileRunner: each builds one script's env, runs it where the session's
// files are, and parses its status line. A runner that fails (manager down, sandbox refused) fails
// the tool with the reason; nothing falls back to the host.
import type { FileRunner, Job } from "./runner";
import { BASE64_SCRIPT, CHUNK_CHARS, CONTENT_VARS, GLOB_SCRIPT, GREP_SCRIPT, KIND_SCRIPT, PROBE_SCRIPT, READ_SCRIPT, REMOVE_SCRIPT, WRITE_SCRIPT } from "./scripts";

type Reply = { status: string; fields: string; payload: Uint8Array };

async function run(runner: FileRunner, job: Job): Promise<Reply> {
  let result;
  try {
    result = await runner.run(job);
  } catch (error) {
    const reason = (error as Error).message.replace(/\.?\s*$/, ".");
    if (runner.where === "host") throw new Error(`The file operation failed on the host: ${reason}`);
    throw new Error(`Not run: the sandbox (${runner.where}) refused or failed: ${reason} Nothing ran on the host.`);
  }
  // Every script exits 0 once it has answered: anything else may be a partial answer.
  if (result.exitCode === null) throw new Error(`The file operation (${runner.where}) was cancelled or timed out; nothing it found is shown.`);
  const bytes = Buffer.from(result.stdout);
  const newline = bytes.indexOf(10);
  const head = (newline < 0 ? bytes : bytes.subarray(0, newline)).toString("utf8");
  if (!head) {
    const detail = result.exitCode === null ? "it was cancelled or timed out" : `it exited ${result.exitCode}${result.stderr ? `: ${result.stderr.trim().slice(0, 500)}` : ""}`;
    throw new Error(`The file operation (${runner.where}) gave no answer: ${detail}`);
  }
  const space = head.indexOf(" ");
  return {
    status: space < 0 ? head : head.slice(0, space),
    fields: space < 0 ? "" : head.slice(space + 1),
    payload: newline < 0 ? new Uint8Array() : bytes.subarray(newline + 1),
  };
}

/** Directory entries as printed by the scripts' `entries`: names, directories with a trailing "/". */
function parseEntries(payload: Uint8Array): string[] {
  return Buffer.from(payload)
    .toString("utf8")
    .split("\0")
    .filter(Boolean)
    .map((entry) => (entry.startsWith("d\t") ? `${entry.slice(2)}/` : entry.slice(2)));
}

type ReadReply =
  | { kind: "dir"; entries: string[] }
  | { kind: "missing"; siblings: string[] }
  | { kind: "special" }
  | { kind: "unreadable" }
  | { kind: "file"; sha256: string; size: number; sample: Uint8Array; lines: string[]; count: number };

export async function readFile(runner: FileRunner, path: string, window: { offset: number; limit: number; lineBytes: number; capBytes: number }): Promise<ReadReply> {
  const env = { OCF_PATH: path, OCF_OFFSET: String(window.offset), OCF_LIMIT: String(window.limit), OCF_LINE_BYTES: String(window.lineBytes), OCF_CAP: String(window.capBytes) };
  const reply = await run(runner, { script: READ_SCRIPT, env });
  if (reply.status === "dir") return { kind: "dir", entries: parseEntries(reply.payload) };
  if (reply.status === "missing") return { kind: "missing", siblings: parseEntries(reply.payload).map((name) => name.replace(/\/$/, "")) };
  if (reply.status === "special") return { kind: "special" };
  if (reply.status === "unreadable") return { kind: "unreadable" };
  if (reply.status !== "file") throw new Error(`unexpected answer from the read script: ${reply.status}`);
  const [sha256 = "", size = "0"] = reply.fields.split(" ");
  const text = Buffer.from(reply.payload).toString("utf8");
  const sampleEnd = text.indexOf("\n");
  const sample = Buffer.from(text.slice(0, sampleEnd), "base64");
  // Lines and the trailing count; a window line never contains "\n" (awk split on it).
  const rest = text.slice(sampleEnd + 1).split("\n");
  rest.pop(); // after the final "\n"
  const count = Number(rest.pop());
  if (!Number.isInteger(count)) throw new Error(`The read script (${runner.where}) gave no line count; is awk missing there?`);
  return { kind: "file", sha256, size: Number(size), sample, lines: rest, count };
}

export async function readBase64(runner: FileRunner, path: string): Promise<string> {
  const reply = await run(runner, { script: `printf 'ok\\n'; ${BASE64_SCRIPT}`, env: { OCF_PATH: path } });
  return Buffer.from(reply.payload).toString("utf8");
}

export async function pathKind(runner: FileRunner, path: string): Promise<"dir" | "file" | "absent"> {
  return (await run(runner, { script: KIND_SCRIPT, env: { OCF_PATH: path } })).status as "dir" | "file" | "absent";
}

type Probe =
  | { kind: "dir" | "absent" | "special" | "unreadable" }
  | { kind: "file"; mtimeSeconds: number; sha256: string; bytes: Uint8Array };

/** The current bytes and state of a path a tool is about to change. */
export async function probe(runner: FileRunner, path: string): Promise<Probe> {
  const reply = await run(runner, { script: PROBE_SCRIPT, env: { OCF_PATH: path } });
  if (reply.status !== "file") return { kind: reply.status as "dir" | "absent" | "special" | "unreadable" };
  const [mtime = "0", sha256 = ""] = reply.fields.split(" ");
  return { kind: "file", mtimeSeconds: Number(mtime), sha256, bytes: reply.payload };
}

/** What a change reports: done (with the new state), the path changed under us, or a failure. */
export type ChangeOutcome = { ok: true; state: string } | { ok: false; changed: string } | { ok: false; failed: string };

function outcomeOf(reply: Reply): ChangeOutcome {
  if (reply.status === "ok") return { ok: true, state: reply.fields };
  if (reply.status === "changed") return { ok: false, changed: reply.fields };
  return { ok: false, failed: reply.fields || reply.status };
}

/**
 * Writes `bytes` to `path` where the session's files are. `expect` is the state the tool saw ("absent"
 * or a sha256); the write is refused if the path is no longer that. Content travels in base64 env
 * chunks; more than one job's worth is staged in a temp file and copied over the path at the end.
 */
export async function writeBytes(runner: FileRunner, path: string, bytes: Uint8Array, expect: string): Promise<ChangeOutcome> {
  const base64 = Buffer.from(bytes).toString("base64");
  const chunks: string[] = [];
  for (let at = 0; at < base64.length; at += CHUNK_CHARS) chunks.push(base64.slice(at, at + CHUNK_CHARS));
  const perJob = Math.max(1, Math.min(CONTENT_VARS, Math.floor(runner.envBudgetBytes / CHUNK_CHARS)));
  const batches: string[][] = [];
  for (let at = 0; at < chunks.length; at += perJob) batches.push(chunks.slice(at, at + perJob));
  if (batches.length === 0) batches.push([]);
  const vars = (batch: string[]) => Object.fromEntries(batch.map((chunk, index) => [`OCF_C${index}`, chunk]));
  const job = (mode: string, batch: string[], extra: Record<string, string> = {}) => ({ script: WRITE_SCRIPT, env: { OCF_PATH: path, OCF_MODE: mode, ...vars(batch), ...extra } });
  if (batches.length === 1) return outcomeOf(await run(runner, job("put", batches[0]!, { OCF_EXPECT: expect })));
  const begun = await run(runner, job("begin", batches[0]!));
  if (begun.status !== "tmp") return outcomeOf(begun);
  const tmp = begun.fields;
  for (const batch of batches.slice(1, -1)) {
    const appended = await run(runner, job("append", batch, { OCF_TMP: tmp }));
    if (appended.status !== "ok") return outcomeOf(appended);
  }
  return outcomeOf(await run(runner, job("commit", batches.at(-1)!, { OCF_TMP: tmp, OCF_EXPECT: expect })));
}

export async function removeFile(runner: FileRunner, path: string, expect: string): Promise<ChangeOutcome> {
  return outcomeOf(await run(runner, { script: REMOVE_SCRIPT, env: { OCF_PATH: path, OCF_EXPECT: expect } }));
}

type GlobReply = { kind: "notdir" } | { kind: "missing" } | { kind: "ok"; paths: string[] };

export async function globFiles(runner: FileRunner, dir: string, match: { regex: string; invert: boolean }, limit: number): Promise<GlobReply> {
  const env = { OCF_DIR: dir, OCF_REGEX: match.regex, OCF_INVERT: match.invert ? "1" : "0", OCF_HIDDEN: "0", OCF_LIMIT: String(limit) };
  const reply = await run(runner, { script: GLOB_SCRIPT, env });
  if (reply.status === "notdir") return { kind: "notdir" };
  if (reply.status !== "ok") return { kind: "missing" };
  const paths = [...new Set(Buffer.from(reply.payload).toString("utf8").split("\0").filter(Boolean))];
  return { kind: "ok", paths };
}

export type GrepMatch = { path: string; line: number; text: string };
type GrepReply = { kind: "missing" } | { kind: "badpattern"; message: string } | { kind: "ok"; target: "dir" | "file"; matches: GrepMatch[] };

/** Matching lines under `target` (a directory, or one file); paths relative to the directory searched. */
export async function grepFiles(runner: FileRunner, search: { target: string; pattern: string; include?: string }, limit: number, lineBytes: number): Promise<GrepReply> {
  if (search.pattern.includes("\0")) return { kind: "badpattern", message: "the pattern contains a NUL character" };
  const env: Record<string, string> = { OCF_TARGET: search.target, OCF_PATTERN: search.pattern, OCF_LIMIT: String(limit), OCF_LINE_BYTES: String(lineBytes) };
  if (search.include) env.OCF_INCLUDE = search.include;
  const reply = await run(runner, { script: GREP_SCRIPT, env });
  if (reply.status === "missing") return { kind: "missing" };
  if (reply.status === "badpattern") return { kind: "badpattern", message: reply.fields.replace(/^grep: /, "") };
  const matches: GrepMatch[] = [];
  for (const line of Buffer.from(reply.payload).toString("utf8").split("\n")) {
    const nul = line.indexOf("\0");
    const colon = line.indexOf(":", nul + 1);
    if (nul < 0 || colon < 0) continue;
    matches.push({ path: line.slice(0, nul).replace(/^\.\//, ""), line: Number(line.slice(nul + 1, colon)), text: line.slice(colon + 1) });
  }
  return { kind: "ok", target: reply.fields.endsWith("file") ? "file" : "dir", matches };
}
