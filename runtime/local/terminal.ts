// An interactive shell in a running VM under a PTY made inside the guest, by the guest's own `script`
// (util-linux; Debian's essential bsdutils). crun 1.8.1's own `exec --tty` needs a terminal on crun's
// stdin or an fd passed over a console socket (SCM_RIGHTS), neither of which Bun offers; here stdin and
// output stay plain pipes to crun, and nothing of the shell runs on the host.
//
// A resize runs `stty -F /dev/pts/N rows R cols C` in the VM as a second exec (argv, no shell):
// the kernel then sends SIGWINCH to the terminal's foreground programs. N is the controlling terminal of
// script's child, read by the host from /proc (tty_nr), never from anything the guest says.
import type { FileSink } from "bun";
import { readFileSync } from "node:fs";
import type { ExecRequest, ExecResult, ExecSink, OutputRoom, TerminalHandle, TerminalRequest } from "../driver";
import type { DriverContext } from "./context";
import { execInVm, type ExecAttach, type ExecStarted } from "./exec";

/**
 * How a runtime runs the terminal's commands (with stdin attached for the shell) and finds the shell's
 * PTY inside the guest. crun's is below; runsc's in runtime/gvisor/terminal.ts.
 */
export type TerminalBackend = {
  exec(ctx: DriverContext, name: string, request: ExecRequest, sink: ExecSink, attach?: ExecAttach): Promise<ExecResult>;
  /** The guest PTY (`/dev/pts/N`) of the shell under the started runtime process, once `script` has made it. */
  findPts(ctx: DriverContext, name: string, started: ExecStarted): Promise<string | undefined>;
};

/** The PTY slave majors (UNIX98_PTY_SLAVE_MAJOR 136, 8 majors of 256 minors each). */
const PTS_MAJORS = { first: 136, count: 8 };
const RESIZE_TIMEOUT_MS = 5000;

/**
 * The guest-side command: size the fresh PTY, then the image's bash (sh without it), interactive.
 * Exported so a test checks it directly.
 */
export function terminalArgv(rows: number, cols: number): string[] {
  if (!Number.isInteger(rows) || !Number.isInteger(cols) || rows < 1 || cols < 1) throw new Error(`bad terminal size ${rows}x${cols}`);
  const inner = `stty rows ${rows} cols ${cols}; if command -v bash >/dev/null 2>&1; then export SHELL="$(command -v bash)"; exec bash -i; else export SHELL=/bin/sh; exec sh -i; fi`;
  // -q: no "Script started" banner; -e: script exits with the shell's code; the session log is thrown away.
  return ["script", "-q", "-e", "-c", inner, "/dev/null"];
}

/**
 * /dev/pts/N from a /proc/<pid>/stat line's tty_nr (field 7), or undefined when it is no PTY slave.
 * Exported so a test checks it directly.
 */
export function ptsFromStat(stat: string): string | undefined {
  // comm (field 2) may hold spaces and parentheses: the fields after it start at the last ')'.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ttyNr = Number(fields[4]);
  const major = (ttyNr >> 8) & 0xfff;
  const minor = (ttyNr & 0xff) | ((ttyNr >> 12) & 0xfff00);
  if (!Number.isInteger(ttyNr) || major < PTS_MAJORS.first || major >= PTS_MAJORS.first + PTS_MAJORS.count) return undefined;
  return `/dev/pts/${(major - PTS_MAJORS.first) * 256 + minor}`;
}

function children(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").split(" ").filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** The guest PTY of the shell under crun exec `crunPid`: crun → script → the shell, whose controlling terminal it is. */
function findPts(crunPid: number): string | undefined {
  for (const script of children(crunPid)) {
    for (const shell of children(script)) {
      try {
        const pts = ptsFromStat(readFileSync(`/proc/${shell}/stat`, "utf8"));
        if (pts) return pts;
      } catch {
        // Gone meanwhile.
      }
    }
  }
  return undefined;
}

/** crun: the shell is a host process (crun → script → shell), whose controlling terminal the host's /proc shows. */
export const CRUN_TERMINAL: TerminalBackend = {
  exec: execInVm,
  findPts: async (_ctx, _name, started) => findPts(started.pid),
};

export function openTerminal(
  ctx: Promise<DriverContext>,
  name: string,
  request: TerminalRequest,
  output: (chunk: Uint8Array) => void,
  backend: TerminalBackend = CRUN_TERMINAL,
  room?: OutputRoom,
): TerminalHandle {
  const { rows, cols, ...exec } = request;
  let stdin: FileSink | undefined;
  let started: ExecStarted | undefined;
  let pts: string | undefined;
  let inputEnded = false;
  /**
   * Everything typed until the shell's first output: written again into a retried start (a failed
   * namespace join, exec.ts), whose first process never ran anything. Output proves the start held.
   */
  let unconfirmed: Uint8Array[] | null = [];
  const send = (data: Uint8Array) => {
    try {
      stdin!.write(data);
      stdin!.flush();
    } catch {
      // The shell is gone: what was typed after it has nowhere to go.
    }
  };
  const confirmed = (chunk: Uint8Array) => {
    unconfirmed = null;
    output(chunk);
  };
  const result: Promise<ExecResult> = ctx.then((context) =>
    backend.exec(context, name, { ...exec, argv: terminalArgv(rows, cols) }, { stdout: confirmed, stderr: confirmed, room }, (attached) => {
      started = attached;
      stdin = attached.stdin;
      pts = undefined;
      for (const data of unconfirmed ?? []) send(data);
      if (inputEnded) void stdin.end();
    }),
  );

  /** A resize right after opening may come before script has started the shell: wait for it a little. */
  async function waitForPts(context: DriverContext): Promise<string | undefined> {
    const deadline = performance.now() + RESIZE_TIMEOUT_MS;
    for (;;) {
      const found = started === undefined ? undefined : await backend.findPts(context, name, started);
      if (found || performance.now() > deadline) return found;
      await Bun.sleep(20);
    }
  }

  // One stty at a time; a burst of resizes (a window being dragged) ends with the last size.
  let wanted: { rows: number; cols: number } | undefined;
  let resizing: Promise<void> | undefined;
  async function applyResizes(context: DriverContext): Promise<void> {
    while (wanted) {
      const size = wanted;
      wanted = undefined;
      pts ??= await waitForPts(context);
      if (!pts) continue; // the shell never came up, or is gone
      const argv = ["stty", "-F", pts, "rows", String(size.rows), "cols", String(size.cols)];
      await backend.exec(context, name, { argv, cwd: "/", timeoutMs: RESIZE_TIMEOUT_MS }, { stdout: () => {}, stderr: () => {} }).catch(() => undefined);
    }
  }

  return {
    write(data) {
      if (inputEnded) return;
      unconfirmed?.push(data);
      if (stdin) send(data);
    },
    closeInput() {
      if (inputEnded) return;
      inputEnded = true;
      if (stdin) void stdin.end();
    },
    async resize(newRows, newCols) {
      terminalArgv(newRows, newCols); // validates
      wanted = { rows: newRows, cols: newCols };
      resizing ??= (async () => {
        try {
          await applyResizes(await ctx);
        } finally {
          resizing = undefined;
        }
      })();
      await resizing;
    },
    result,
  };
}
