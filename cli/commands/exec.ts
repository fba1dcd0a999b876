// `session-sandbox exec [OPTIONS] <session> [--] <command…>`: runs the command in the
// session's VM (POST /api/sessions/:id/exec), its stdout and stderr streamed to ours as they come, and
// exits with the command's own exit code. Ctrl-C cancels it in the VM.
import { fstatSync } from "node:fs";
import type { ExecRequest, SandboxClient } from "../../sdk/index";
import { executeCommand } from "../frame";
import { UsageError } from "../errors";
import { parseDurationMs } from "../parse";
import { untilInterrupted } from "../interrupt";
import { sinkFor } from "../terminal-safe";

/** Exit codes of exec itself, outside what commands usually return (as `docker exec` does). */
const EXEC_EXIT = { notRun: 125, timedOut: 124, interrupted: 130 } as const;

const HELP = `usage: session-sandbox exec [OPTIONS] <session> [--] <command…>

Runs <command…> with \`sh -c\` in the session's VM, its stdout and stderr streamed to this terminal's as
they come, and exits with the command's exit code. As with \`docker exec\`, options come before the
command: the first word after <session> starts it (\`exec ses ls -la\`), or everything after \`--\`. Its
words are joined with spaces, as ssh does: quote a command that needs its own quoting
(\`-- 'ls -la "my dir"'\`). Ctrl-C cancels the command in the VM. On a terminal, escape sequences other
than colors are shown, not obeyed (--raw: as they are); piped output is passed on byte for byte.

options:
  -w, --cwd DIR        where it runs (default: the session's directory; also --workdir)
  -e, --env K=V        an environment variable (repeatable; -e K takes K from this environment)
      --timeout 90s    its timeout (default: the execTimeoutMs setting)
  -t, --tty            a terminal: with a shell as the command (\`-it ses bash\`), the session's
                       interactive shell (session-sandbox shell)
  -d, --detach         run it in the background: print its call id and return at once; follow it
                       with \`logs <session> <call id> -f\`, list with \`ps\`, end with \`kill\`
  -i, --interactive    pass this terminal's input to the command (piped or redirected input is
                       always passed: \`echo hi | session-sandbox exec ses cat\`)

exit codes: the command's own; ${EXEC_EXIT.timedOut} when it timed out, ${EXEC_EXIT.interrupted} when cancelled (Ctrl-C),
${EXEC_EXIT.notRun} when it did not run or the stream broke (the reason is on stderr)`;

/** Options that take a value: their value is the next word unless written with `=`. */
const VALUED = new Set(["--cwd", "-w", "--workdir", "--timeout", "-e", "--env"]);
const SHELLS = new Set(["sh", "bash", "zsh", "ash", "dash", "fish", "/bin/sh", "/bin/bash", "/usr/bin/bash", "/bin/zsh", "/usr/bin/zsh"]);

/**
 * Docker's order: the exec's own options and the session, then the command, which starts at the first
 * word after the session that is not an option, or after `--`.
 */
function splitCommand(argv: string[]): { own: string[]; command: string[] } {
  const own: string[] = [];
  let session = false;
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!;
    if (word === "--") return { own, command: argv.slice(i + 1) };
    if (word.startsWith("-") && word !== "-") {
      own.push(word);
      if (VALUED.has(word) && i + 1 < argv.length) own.push(argv[++i]!);
    } else if (!session) {
      own.push(word);
      session = true;
    } else return { own, command: argv.slice(i) };
  }
  return { own, command: [] };
}

/** `-e K=V` as docker takes it; `-e K` copies K from this environment (and is skipped when unset there). */
function envOf(values: string[] | undefined): Record<string, string> | undefined {
  if (!values || values.length === 0) return undefined;
  const env: Record<string, string> = {};
  for (const item of values) {
    const at = item.indexOf("=");
    const name = at < 0 ? item : item.slice(0, at);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new UsageError(`-e ${JSON.stringify(item)} is not NAME=VALUE`, "write -e NAME=VALUE, e.g. -e NODE_ENV=test");
    if (at >= 0) env[name] = item.slice(at + 1);
    else if (process.env[name] !== undefined) env[name] = process.env[name]!;
  }
  return env;
}

export async function run(argv: string[]): Promise<number> {
  const { own, command: words } = splitCommand(argv);
  let exitCode: number | undefined;
  let shellOf: string | undefined;
  const options = {
    cwd: { type: "string", short: "w" },
    workdir: { type: "string" },
    timeout: { type: "string" },
    env: { type: "string", short: "e", multiple: true },
    tty: { type: "boolean", short: "t" },
    interactive: { type: "boolean", short: "i" },
    detach: { type: "boolean", short: "d" },
  } as const;
  const failed = await executeCommand({ name: "exec", help: HELP, options }, own, async ({ positionals, values, client }) => {
    const [session] = positionals;
    if (session === undefined) throw new UsageError("missing <session>", "session-sandbox exec <session> <command…>");
    if (words.length === 0) throw new UsageError("missing <command…>", "put the command after the session: session-sandbox exec <session> <command…>");
    const command = words.join(" ");
    if (values.tty) {
      if (words.length === 1 && SHELLS.has(words[0]!)) return void (shellOf = session);
      throw new UsageError("-t runs only an interactive shell here", `for a terminal, run \`session-sandbox shell ${session}\`; for a command, drop -t`);
    }
    const timeoutMs = values.timeout === undefined ? undefined : parseDurationMs(values.timeout, "--timeout");
    const cwd = values.cwd ?? values.workdir;
    if (values.detach) {
      const started = await client.processes.start(session, { command, cwd, timeoutMs, env: envOf(values.env) });
      process.stdout.write(values.json ? `${JSON.stringify(started)}\n` : `${started.callID}\n`);
      return void (exitCode = 0);
    }
    const stdin = passesStdin(Boolean(values.interactive)) ? Bun.stdin.stream() : undefined;
    exitCode = await stream(client, session, { command, cwd, timeoutMs, env: envOf(values.env), ...(stdin ? { stdin } : {}) }, Boolean(values.raw));
  });
  // `exec -it <session> bash`: the session's interactive shell, as docker users type it.
  if (shellOf !== undefined) return (await import("./shell")).run([shellOf]);
  return exitCode ?? (failed === 0 ? 0 : EXEC_EXIT.notRun);
}

/**
 * Whether the command gets this process's stdin: piped or redirected input always (as `docker exec -i`
 * would; a script that pipes data in means it), a terminal only with -i, /dev/null and the like never
 * (nothing to pass, and the command keeps the faster path without input).
 */
function passesStdin(interactive: boolean): boolean {
  if (process.stdin.isTTY) return interactive;
  try {
    const stat = fstatSync(0);
    return stat.isFIFO() || stat.isFile() || stat.isSocket();
  } catch {
    return false; // closed
  }
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
function stream(client: SandboxClient, session: string, request: ExecRequest, raw: boolean): Promise<number> {
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
