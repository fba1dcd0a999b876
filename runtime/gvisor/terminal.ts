// The terminal on the gvisor tier: the local tier's (runtime/local/terminal.ts: `script` makes the PTY in
// the guest, a resize is `stty -F` in the guest), with the shell's PTY found inside the guest — gVisor's
// processes are not host processes, and its /proc/<pid>/stat leaves tty_nr at 0, so the shell's stdin link
// (`/proc/<shell>/fd/0`, where `script` put the PTY) names it.
import type { TerminalBackend } from "../local/terminal";
import { execInSandbox, guestProcesses } from "./exec";
import { runscId } from "./runsc";

const PTS = /^\/dev\/pts\/\d+$/;

export const RUNSC_TERMINAL: TerminalBackend = {
  exec: execInSandbox,
  async findPts(ctx, name, started) {
    const scriptPid = started.guestPid?.();
    if (scriptPid === undefined) return undefined;
    const id = runscId(ctx.paths.containerId(name));
    const shell = (await guestProcesses(ctx, id)).find((p) => p.ppid === scriptPid);
    if (!shell) return undefined;
    const proc = Bun.spawn(ctx.runtime.argv(["exec", id, "readlink", `/proc/${shell.pid}/fd/0`]), { stdin: "ignore", stdout: "pipe", stderr: "ignore" });
    const [link] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    // Only ever an argument of stty inside the guest, and only in this exact shape.
    return PTS.test(link.trim()) ? link.trim() : undefined;
  },
};
