// Turns a shell request into a terminal exec: the session's VM, mounts, environment and refusals exactly as
// for exec, with the guest's interactive shell on a PTY inside the VM instead of an agent's `sh -c`. It is
// the operator's explicit interactive mode; no agent command is ever turned into one.
import { MAX_EXEC_TIMEOUT_MS, type ExecService, type PreparedExec } from "./exec";
import type { SessionsService } from "./sessions";

export type ShellOptions = { rows: number; cols: number; term?: string };

export const DEFAULT_TERM = "xterm-256color";

/**
 * A shell lasts as long as its operator keeps it open, up to the longest exec timeout (24 h); it holds
 * its VM's place under the cap like a running command, so the VM is neither evicted nor swept meanwhile.
 */
export async function prepareShell(execService: ExecService, sessions: SessionsService, sessionId: string, options: ShellOptions): Promise<PreparedExec> {
  // The shell starts in the session's own directory (checked against its mounts like any cwd).
  const cwd = sessions.require(sessionId).directory;
  const prepared = await execService.prepare(sessionId, { command: "", cwd, timeoutMs: MAX_EXEC_TIMEOUT_MS });
  const env = { ...prepared.command.env, TERM: options.term ?? DEFAULT_TERM };
  return { ...prepared, command: { ...prepared.command, argv: [], env, terminal: { rows: options.rows, cols: options.cols } } };
}
