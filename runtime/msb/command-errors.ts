// Maps a failed lifecycle command (create, start, stop, remove, inspect, list, volume remove) to a
// RuntimeError, from the last `error:` block msb printed. Messages are those of msb 0.6.18.
import { RuntimeError } from "../driver";
import type { MsbOutput } from "./msb-cli";
import { formatErrorBlock, lastErrorBlock } from "./stderr-tail";

function header(output: MsbOutput): string {
  return lastErrorBlock(output.stderr)?.header ?? "";
}

export function isSandboxNotFound(output: MsbOutput, name: string): boolean {
  return output.exitCode !== 0 && header(output) === `sandbox not found: ${name}`;
}

export function isVolumeNotFound(output: MsbOutput, volume: string): boolean {
  return output.exitCode !== 0 && header(output) === `volume not found: ${volume}`;
}

export function isAlreadyExists(output: MsbOutput): boolean {
  return output.exitCode !== 0 && header(output).startsWith("sandbox already exists: ");
}

/** `msb start` on a running sandbox: "sandbox still running: cannot start sandbox 'X': already running". */
export function isAlreadyRunning(output: MsbOutput): boolean {
  return output.exitCode !== 0 && /^sandbox still running: .*already running/.test(header(output));
}

/** The RuntimeError for a command that did not exit 0. */
export function commandFailure(output: MsbOutput): RuntimeError {
  const block = lastErrorBlock(output.stderr);
  const status = output.exitCode === null ? `killed by ${output.signalCode}` : `exit ${output.exitCode}`;
  const what = `msb ${output.args.slice(0, output.args[0] === "volume" ? 2 : 1).join(" ")}`;
  const reason = block ? formatErrorBlock(block) : output.stderr.trim().split("\n").slice(-3).join("; ") || "no error message";
  const message = `${what} failed (${status}): ${reason}`;
  const text = block?.header ?? "";
  if (text.startsWith("sandbox not found: ") || text.startsWith("volume not found: ")) return new RuntimeError("NOT_FOUND", message);
  if (text.startsWith("sandbox already exists: ")) return new RuntimeError("ALREADY_EXISTS", message);
  // A VM that did not boot: a host without usable KVM, a broken image, a guest kernel that stopped.
  if (text.startsWith("failed to start ")) return new RuntimeError("UNAVAILABLE", message);
  return new RuntimeError("FAILED", message);
}
