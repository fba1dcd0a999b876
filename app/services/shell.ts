// Turns a prepared exec into a terminal one: the session's VM, mounts, environment and refusals exactly as
// for exec (the exec service prepares both), with the guest's interactive shell on a PTY inside the VM
// instead of an agent's `sh -c`. It is the operator's explicit interactive mode; no agent command is ever
// turned into one.
import type { ExecCommand } from "../../workers/protocol";

export type ShellOptions = { rows: number; cols: number; term?: string };

const DEFAULT_TERM = "xterm-256color";

/**
 * A shell lasts as long as its operator keeps it open, up to the longest exec timeout (24 h, which the
 * exec service prepares it with); it holds its VM's place under the cap like a running command, so the VM
 * is neither evicted nor swept meanwhile.
 */
export function shellOf<Prepared extends { command: ExecCommand }>(prepared: Prepared, options: ShellOptions): Prepared {
  const env = { ...prepared.command.env, TERM: options.term ?? DEFAULT_TERM };
  return { ...prepared, command: { ...prepared.command, argv: [], env, terminal: { rows: options.rows, cols: options.cols } } };
}
