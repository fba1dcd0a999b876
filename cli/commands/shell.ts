// `session-sandbox shell <session>`: an interactive terminal in the session's VM (GET /api/sessions/:id/shell,
// a WebSocket). The local terminal goes into raw mode, so every key (Ctrl-C, Ctrl-Z, Ctrl-D too) goes to
// the VM's PTY, not to this process; window resizes follow on SIGWINCH; the terminal is restored on the
// way out and the exit code is the remote shell's. Without a terminal on stdin, stdin is piped through.
import type { ShellConnection } from "../../sdk/index";
import { openShell } from "../../sdk/shell";
import { executeCommand, expectPositionals } from "../frame";

const HELP = `usage: session-sandbox shell <session> [--term NAME]
       (in the repository: bun run shell …)

An interactive shell (bash, else sh) in the VM of the session's root, on a terminal made inside the VM,
starting in the session's directory. Every key goes to the VM: Ctrl-C interrupts the program running
there, and \`exit\` (or Ctrl-D) ends the shell and returns here with its exit code. The window size follows
this terminal. The VM boots first if it is not running; the shell holds it like a running command (it is
not stopped for being idle, and counts toward maxRunningVms), for at most 24 hours.
--term: TERM in the VM (default: this terminal's $TERM, else xterm-256color).`;

const TERM_NAME = /^[A-Za-z0-9._+-]{1,64}$/;

/** A terminal dimension the manager takes (1..1000), or none to let it default. */
const size = (n: number | undefined) => (n && n > 0 ? Math.min(n, 1000) : undefined);

type Io = { stdin: NodeJS.ReadStream; stdout: NodeJS.WriteStream };

/** Wires the local terminal to the shell until it ends; always leaves the terminal as it found it. */
async function attach(shell: ShellConnection, io: Io): Promise<number> {
  const raw = Boolean(io.stdin.isTTY);
  const onData = (chunk: Buffer) => shell.write(new Uint8Array(chunk));
  const onEnd = () => shell.end();
  const onResize = () => shell.resize(size(io.stdout.rows) ?? 24, size(io.stdout.columns) ?? 80);
  if (raw) io.stdin.setRawMode(true);
  io.stdin.on("data", onData);
  io.stdin.on("end", onEnd);
  process.on("SIGWINCH", onResize);
  io.stdin.resume();
  try {
    const { exitCode } = await shell.exited;
    return exitCode;
  } finally {
    process.off("SIGWINCH", onResize);
    io.stdin.off("data", onData);
    io.stdin.off("end", onEnd);
    if (raw) io.stdin.setRawMode(false);
    io.stdin.pause();
  }
}

/** Runs `shell` on its arguments (after the subcommand); resolves to the exit code: the remote shell's, or the CLI's own on failure. */
export function run(argv: string[]): Promise<number> {
  return executeCommand({ name: "shell", help: HELP, options: { term: { type: "string" } } }, argv, async ({ positionals, values, connection }) => {
    const [session] = expectPositionals(positionals, ["session"]);
    const envTerm = process.env.TERM && TERM_NAME.test(process.env.TERM) ? process.env.TERM : undefined;
    const io: Io = { stdin: process.stdin, stdout: process.stdout };
    const shell = openShell(connection, session!, {
      rows: size(io.stdout.isTTY ? io.stdout.rows : undefined),
      cols: size(io.stdout.isTTY ? io.stdout.columns : undefined),
      term: values.term ?? envTerm,
      onOutput: (chunk) => void io.stdout.write(chunk),
    });
    // The remote code as it is (0-255); the CLI's own codes (1-3) only come from failures before it ran.
    return (await attach(shell, io)) as 0;
  });
}
