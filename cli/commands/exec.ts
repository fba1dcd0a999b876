// `session-sandbox exec <session> [--cwd DIR] [--timeout 90s] -- <command…>`: runs the command in the
// session's VM (POST /api/sessions/:id/exec), its stdout and stderr streamed to ours as they come, and
// exits with the command's own exit code. Ctrl-C cancels it in the VM.
import type { SandboxClient } from "../../sdk/index";
import { executeCommand } from "../frame";
import { UsageError } from "../errors";
import { parseDurationMs } from "../parse";
import { untilInterrupted } from "../interrupt";
import { safeStream } from "../terminal-safe";

/** Exit codes of exec itself, outside what commands usually return (as `docker exec` does). */
const EXEC_EXIT = { notRun: 125, timedOut: 124, interrupted: 130 } as const;

const HELP = `usage: session-sandbox exec <session> [--cwd DIR] [--timeout 90s] [--raw] -- <command…>

Runs <command…> with \`sh -c\` in the session's VM, its stdout and stderr streamed to this terminal's as
they come, and exits with the command's exit code. The words after \`--\` are joined with spaces, as ssh
does: quote a command that needs its own quoting (\`-- 'ls -la "my dir"'\`). --cwd defaults to the
session's directory; --timeout to the execTimeoutMs setting. Ctrl-C cancels the command in the VM. On a
terminal, escape sequences other than colors are shown, not obeyed (--raw: as they are); piped output
is passed on byte for byte.

exit codes: the command's own; ${EXEC_EXIT.timedOut} when it timed out, ${EXEC_EXIT.interrupted} when cancelled (Ctrl-C),
${EXEC_EXIT.notRun} when it did not run or the stream broke (the reason is on stderr)`;

/** Splits at the first `--`: the exec's own arguments, and the command's words. */
function splitCommand(argv: string[]): { own: string[]; command: string | undefined } {
  const dashes = argv.indexOf("--");
  if (dashes < 0) return { own: argv, command: undefined };
  const words = argv.slice(dashes + 1);
  return { own: argv.slice(0, dashes), command: words.length > 0 ? words.join(" ") : undefined };
}

export async function run(argv: string[]): Promise<number> {
  const { own, command: afterDashes } = splitCommand(argv);
  let exitCode: number | undefined;
  const failed = await executeCommand(
    { name: "exec", help: HELP, options: { cwd: { type: "string" }, timeout: { type: "string" } } },
    own,
    async ({ positionals, values, client }) => {
      const [session, ...words] = positionals;
      if (session === undefined) throw new UsageError("missing <session>", "session-sandbox exec <session> -- <command…>");
      const command = afterDashes ?? (words.length > 0 ? words.join(" ") : undefined);
      if (command === undefined) throw new UsageError("missing <command…>", "put the command after `--`");
      if (afterDashes !== undefined && words.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(words[0])} before \`--\``);
      const timeoutMs = values.timeout === undefined ? undefined : parseDurationMs(values.timeout, "--timeout");
      exitCode = await stream(client, session, { command, cwd: values.cwd, timeoutMs }, Boolean(values.raw));
    },
  );
  return exitCode ?? (failed === 0 ? 0 : EXEC_EXIT.notRun);
}

/**
 * Where one of the command's streams goes: a pipe gets its bytes unchanged; a terminal gets them with every
 * control sequence but colors shown, not obeyed (terminal-safe.ts), unless `--raw`.
 */
function sinkFor(stream: NodeJS.WriteStream, raw: boolean): { write(chunk: Uint8Array): void; end(): void } {
  if (raw || !stream.isTTY) return { write: (chunk) => void stream.write(chunk), end: () => {} };
  return safeStream((text) => void stream.write(text));
}

/** Settles once `stream` can take more (at once unless its buffer is full). */
function writable(stream: NodeJS.WriteStream): Promise<void> | undefined {
  if (!stream.writableNeedDrain) return undefined;
  return new Promise((resolve) => {
    const done = () => {
      stream.off("drain", done);
      stream.off("close", done);
      resolve();
    };
    stream.on("drain", done).on("close", done);
  });
}

/** Streams one command; resolves to the exit code to leave with. */
function stream(client: SandboxClient, session: string, request: { command: string; cwd?: string; timeoutMs?: number }, raw: boolean): Promise<number> {
  const stdout = sinkFor(process.stdout, raw);
  const stderr = sinkFor(process.stderr, raw);
  return untilInterrupted(async (interrupted) => {
    try {
      for await (const event of client.exec(session, request, interrupted)) {
        if (event.type === "stdout") stdout.write(event.data);
        else if (event.type === "stderr") stderr.write(event.data);
        // Backpressure: a slow reader of our output (a pager, a pipe) holds the command in the VM back,
        // through the manager, instead of this process buffering what it cannot write yet.
        if (event.type === "stdout" || event.type === "stderr") await writable(event.type === "stdout" ? process.stdout : process.stderr);
        if (event.type === "exit") return event.timedOut ? EXEC_EXIT.timedOut : event.cancelled ? EXEC_EXIT.interrupted : event.exitCode;
      }
      return EXEC_EXIT.notRun;
    } catch (error) {
      // Our own Ctrl-C closed the stream, which cancelled the command in the VM.
      if (interrupted.aborted) return EXEC_EXIT.interrupted;
      throw error;
    } finally {
      stdout.end();
      stderr.end();
    }
  });
}
