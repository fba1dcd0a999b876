// Tells a guest's exit code apart from an msb failure after `msb exec` ends. msb exits 1 (or 126/127
// for a spawn failure) after printing `error: …` as the last thing on stderr; a guest can exit with
// the same codes, so only a trailing block whose header is one msb is known to print, naming this
// sandbox, counts as msb's. Headers are those of msb 0.6.18 (crates/cli exec.rs, sdk error.rs).
import { RuntimeError } from "../driver";
import { formatErrorBlock, trailingErrorBlock } from "./stderr-tail";

type ExecOutcome =
  /** The guest command ran (or failed to spawn, as a shell reports it) and exited with this code. */
  | { kind: "exited"; exitCode: number; forwardHeld: boolean }
  /** msb's own --timeout killed the guest command's process group. */
  | { kind: "timed-out" }
  | { kind: "runtime-error"; error: RuntimeError };

/** Exported so the tests build exits to classify. */
export type ExecExit = {
  exitCode: number | null;
  signalCode: string | null;
  /** The held-back trailing stderr that may be msb's error block. */
  heldStderr: string;
  /** The last few KiB of all stderr, to spot a usage error from msb's argument parser. */
  stderrTail: string;
  name: string;
};

// msb exits 1 for its own errors, and 126/127 when the guest program cannot be spawned.
const MSB_ERROR_EXIT_CODES = new Set([1, 126, 127]);

function runtimeError(code: RuntimeError["code"], message: string): ExecOutcome {
  return { kind: "runtime-error", error: new RuntimeError(code, message) };
}

export function classifyExecExit(exit: ExecExit): ExecOutcome {
  if (exit.exitCode === null) return runtimeError("FAILED", `msb exec was killed by ${exit.signalCode ?? "a signal"} before it reported an exit code`);
  // clap (msb's argument parser) exits 2 with a usage text; the argv builders are tested against it.
  if (exit.exitCode === 2 && exit.stderrTail.includes("Usage: msb exec") && exit.stderrTail.includes("For more information, try '--help'")) {
    return runtimeError("FAILED", `msb rejected the exec command line: ${exit.stderrTail.trim()}`);
  }
  const block = MSB_ERROR_EXIT_CODES.has(exit.exitCode) ? trailingErrorBlock(exit.heldStderr) : undefined;
  if (!block) return { kind: "exited", exitCode: exit.exitCode, forwardHeld: true };
  const { header } = block;
  const detail = formatErrorBlock(block);
  // A spawn failure (not found / not executable / bad cwd) is the guest's result, as in a shell: keep
  // msb's explanation on the guest's stderr.
  if (header.startsWith('failed to exec "')) return { kind: "exited", exitCode: exit.exitCode, forwardHeld: true };
  if (exit.exitCode !== 1) return { kind: "exited", exitCode: exit.exitCode, forwardHeld: true };
  if (header.startsWith("exec timed out after ")) return { kind: "timed-out" };
  if (header === `sandbox not found: ${exit.name}`) return runtimeError("NOT_FOUND", `msb exec: ${detail}`);
  if (header.startsWith(`failed to start "${exit.name}"`) || header.startsWith(`sandbox '${exit.name}' is in state`)) {
    return runtimeError("UNAVAILABLE", `msb exec could not start the VM: ${detail}`);
  }
  if (header === "exec session ended without exit event" || header.startsWith("exec failed to start")) {
    return runtimeError("FAILED", `msb exec lost the guest command: ${detail}`);
  }
  return { kind: "exited", exitCode: exit.exitCode, forwardHeld: true };
}
