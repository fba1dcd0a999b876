// `session-sandbox logs <session> [-n N] [-f]`: a session's commands from its exec history
// (GET /api/sessions/:id/execs), oldest first: when, outcome, duration, the command and the tail of its
// output. -f then prints each command as it finishes (woken by the manager's exec events).
import type { SandboxClient } from "../../sdk/index";
import { sessionOfTarget } from "../target";
import { executeCommand, expectPositionals } from "../frame";
import { isoOrNull, isoTime, timeCell } from "../format";
import type { Output } from "../output";
import { parseWholeNumber } from "../parse";
import { untilInterrupted } from "../interrupt";
import { sinkFor } from "../terminal-safe";

type ExecEntry = Awaited<ReturnType<SandboxClient["execs"]["list"]>>["execs"][number];

const DEFAULT_COUNT = 20;
/** How far back -f looks for commands that finished since its last look. */
const FOLLOW_WINDOW = 50;

const HELP = `usage: session-sandbox logs <session|vm> [-n N] [-f] [--json]
       session-sandbox logs <session|vm> <call id> [-f]

The session's last N commands (default ${DEFAULT_COUNT}, at most 200), oldest first: when each started, how it
ended (exit code, timed out, cancelled, still running), how long it took, the command, and the last
4 KiB of its output (stdout and stderr merged). For a root session: every command of its tree; for a
child: its own. -f (--follow) then prints each command as it finishes, until Ctrl-C; with --json, one
JSON object per line. The manager keeps the last 200 commands per root session.

With a call id (see \`ps\`): that running command's own output as it prints it, stdout to stdout and stderr
to stderr — what it printed last (a background command's last 1 MiB, a foreground one's 64 KiB), then with -f everything that comes until it ends (exiting with its
exit code). Works for background commands (exec -d) and for foreground ones in progress alike.`;

/** 350 → "350ms", 1234 → "1.2s", 75_000 → "1m15s". */
function formatElapsed(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1).replace(/\.0$/, "")}s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes}m${Math.round((ms % 60_000) / 1000)}s`;
}

function outcome(entry: ExecEntry, out: Output): string {
  if (entry.finishedAt === null) return out.paint.yellow("running");
  if (entry.timedOut) return out.paint.red("timed out");
  if (entry.cancelled) return out.paint.yellow("cancelled");
  if (entry.exitCode === null) return out.paint.red("failed");
  return entry.exitCode === 0 ? out.paint.green("exit 0") : out.paint.red(`exit ${entry.exitCode}`);
}

/** One entry: a header line, then the output tail indented (and the runtime's error, if any). */
export function renderEntry(entry: ExecEntry, session: string, out: Output): string {
  const who = entry.sessionID === session ? "" : `  ${out.paint.dim(`[${entry.sessionID}]`)}`;
  const duration = entry.durationMs === null ? "-" : formatElapsed(entry.durationMs);
  const lines = [`${timeCell(entry.startedAt, out)}  ${outcome(entry, out)}  ${duration}${who}  ${out.paint.bold("$")} ${entry.command.split("\n")[0]}`];
  const tail = entry.outputTail.replace(/\n$/, "");
  const tailBytes = Buffer.byteLength(entry.outputTail);
  if (entry.outputBytes > tailBytes) lines.push(out.paint.dim(`  … (the last ${tailBytes} of ${entry.outputBytes} bytes)`));
  if (tail !== "") lines.push(...tail.split("\n").map((line) => `  ${line}`));
  if (entry.error) lines.push(out.paint.red(`  ${entry.error}`));
  return lines.join("\n");
}

export function entryJson(entry: ExecEntry) {
  return { ...entry, startedAt: isoTime(entry.startedAt), finishedAt: isoOrNull(entry.finishedAt) };
}

/**
 * One running command's output, as it prints it: stdout and stderr to ours. A gap (this reader fell more than
 * what is kept behind) is said on stderr. Following, exits with the command's exit code.
 */
async function followOutput(client: SandboxClient, session: string, callID: string, follow: boolean, raw: boolean): Promise<number> {
  // On a terminal the guest's escape sequences are shown, not obeyed (as `exec` does), unless --raw.
  const stdout = sinkFor(process.stdout, raw);
  const stderr = sinkFor(process.stderr, raw);
  return untilInterrupted(async (interrupted) => {
    let code = 0;
    try {
      for await (const event of client.processes.logs(session, callID, { follow, signal: interrupted })) {
        if ("data" in event) (event.type === "stdout" ? stdout : stderr).write(event.data);
        else if (event.type === "skipped") process.stderr.write(`session-sandbox: … ${event.bytes} bytes of output not kept\n`);
        else code = event.timedOut ? 124 : event.cancelled ? 130 : event.exitCode;
      }
    } catch (error) {
      if (interrupted.aborted) return 130;
      throw error;
    } finally {
      stdout.end();
      stderr.end();
    }
    return code;
  });
}

/** Prints each command of the root's tree as it finishes, until Ctrl-C; `seen` holds what was printed. */
async function follow(client: SandboxClient, session: string, count: number, seen: Set<string>, out: Output): Promise<void> {
  const { rootSessionID } = await client.sessions.get(session);
  const printNew = async () => {
    const fresh = (await client.execs.list(session, { limit: count })).execs.filter((e) => e.finishedAt !== null && !seen.has(e.id)).reverse();
    for (const entry of fresh) {
      seen.add(entry.id);
      out.line(out.json ? JSON.stringify(entryJson(entry)) : renderEntry(entry, session, out));
    }
  };
  await untilInterrupted(async (interrupted) => {
    const events = client.events(interrupted);
    const first = events.next(); // opens the stream; what finished before it opened is caught by printNew below
    await printNew();
    for (let next = await first; !next.done; next = await events.next()) {
      const event = next.value;
      if (event.type === "exec" && event.phase === "finished" && event.rootSessionID === rootSessionID) await printNew();
    }
  });
}

export async function run(argv: string[]): Promise<number> {
  const options = { follow: { type: "boolean", short: "f" }, lines: { type: "string", short: "n" } } as const;
  /** A followed command's own exit code, which `logs <session> <call id> -f` exits with. */
  let commandExit: number | undefined;
  const failed = await executeCommand({ name: "logs", help: HELP, options }, argv, async ({ positionals, values, out, client }) => {
    const [target, callID] = expectPositionals(positionals, ["session|vm", "call id"], 1) as [string, string | undefined];
    const session = await sessionOfTarget(client, target);
    if (callID !== undefined) return void (commandExit = await followOutput(client, session, callID, Boolean(values.follow), Boolean(values.raw)));
    const count = values.lines === undefined ? DEFAULT_COUNT : parseWholeNumber(values.lines, "-n");
    if (values.follow) {
      // The last `count` that finished now; every other one as it finishes (running ones included).
      const window = Math.max(count, FOLLOW_WINDOW);
      const done = (await client.execs.list(session, { limit: window })).execs.filter((entry) => entry.finishedAt !== null).reverse();
      for (const entry of done.slice(-count)) out.line(out.json ? JSON.stringify(entryJson(entry)) : renderEntry(entry, session, out));
      return void (await follow(client, session, window, new Set(done.map((entry) => entry.id)), out));
    }
    const entries = (await client.execs.list(session, { limit: count })).execs.reverse();
    if (out.json) return void out.printJson({ execs: entries.map(entryJson) });
    out.line(entries.length === 0 ? out.paint.dim("(no commands yet)") : entries.map((entry) => renderEntry(entry, session, out)).join("\n"));
  });
  return failed !== 0 ? failed : (commandExit ?? 0);
}
