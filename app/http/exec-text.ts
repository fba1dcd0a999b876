// The text/plain form of the exec stream: the command's stdout and stderr bytes as they come (merged, in
// arrival order), then one status line. The status line starts on a line of its own: a newline is put
// before it only when the output did not end with one. Clients that need stdout and stderr apart, or
// every byte exactly, use the NDJSON form.
import type { ExecOutcome } from "../../workers/protocol";

export const EXEC_TEXT_STATUS_PREFIX = "session-sandbox:";

/** `session-sandbox: exit=<code> timedOut=<bool> cancelled=<bool>`, the last line of a text/plain exec. */
export function exitLine(outcome: ExecOutcome): string {
  return `${EXEC_TEXT_STATUS_PREFIX} exit=${outcome.exitCode} timedOut=${outcome.timedOut} cancelled=${outcome.cancelled}\n`;
}

/** `session-sandbox: error=<CODE> <message>`, the last line when the runtime failed mid-command. */
export function errorLine(code: string, message: string): string {
  return `${EXEC_TEXT_STATUS_PREFIX} error=${code} ${message.replace(/\s+/g, " ")}\n`;
}

/** Whether a request asks for the text form: text/plain accepted, NDJSON not named. */
export function wantsText(accept: string | null): boolean {
  if (!accept) return false;
  const types = accept.split(",").map((part) => part.split(";")[0]!.trim().toLowerCase());
  return types.includes("text/plain") && !types.includes("application/x-ndjson");
}

/** Tracks whether the output so far ends with a newline, so the status line starts a line of its own. */
export function createLineTracker() {
  let atLineStart = true;
  return {
    saw(data: Uint8Array): void {
      if (data.byteLength > 0) atLineStart = data[data.byteLength - 1] === 0x0a;
    },
    /** The status line, with the newline that separates it from unterminated output. */
    final: (line: string) => (atLineStart ? line : `\n${line}`),
  };
}
