// Builds the `msb exec` argument vectors: the guest command itself, and the sweep that kills its
// process tree on timeout or cancel. Pure functions.
import type { ExecRequest } from "../driver";
import { checkEnvEntry, checkName, checkWorkdir, InvalidSpecError } from "./spec-checks";

/**
 * Set on every guest command and inherited by its descendants. msb drops an exec's processes only
 * when their process group is killed; this marker lets the sweep find every descendant, including
 * ones that called setsid. Killing the msb CLI does not stop the guest command (agentd keeps
 * sessions of a disconnected client running).
 * Exported so the tests expect it in the arguments.
 */
export const EXEC_MARKER_ENV = "SESSION_SANDBOX_EXEC_ID";

/** msb's --timeout takes whole seconds (s/m/h only, no ms). Exported so a test checks the rounding. */
export function timeoutSeconds(timeoutMs: number): number {
  return Math.max(1, Math.ceil(timeoutMs / 1000));
}

/**
 * `msb exec NAME --no-tty --stream --quiet --workdir=CWD [--env=K=V]… --env=MARKER=ID [--timeout=Ns] -- ARGV…`.
 * `--stream` forwards output chunk by chunk (the default mode buffers everything until exit) and
 * turns host stdin EOF into guest stdin EOF; the driver spawns with stdin from /dev/null.
 */
export function buildExecArgs(name: string, request: Pick<ExecRequest, "argv" | "cwd" | "env" | "timeoutMs">, execId: string): string[] {
  if (request.argv.length === 0 || request.argv[0] === "") {
    // With no command msb would run the image's default command instead.
    throw new InvalidSpecError("exec needs a non-empty argv");
  }
  if (!/^[A-Za-z0-9-]+$/.test(execId)) throw new InvalidSpecError(`exec id "${execId}" must be alphanumeric`);
  const env = request.env ?? {};
  const envArgs = Object.keys(env)
    .sort()
    .map((key) => {
      const value = env[key] ?? "";
      checkEnvEntry(key, value);
      if (key === EXEC_MARKER_ENV) throw new InvalidSpecError(`environment variable ${EXEC_MARKER_ENV} is reserved by the driver`);
      return `--env=${key}=${value}`;
    });
  const args = ["exec", checkName(name, "VM name"), "--no-tty", "--stream", "--quiet", `--workdir=${checkWorkdir(request.cwd)}`, ...envArgs];
  args.push(`--env=${EXEC_MARKER_ENV}=${execId}`);
  if (request.timeoutMs !== undefined) {
    if (!(request.timeoutMs > 0)) throw new InvalidSpecError(`timeoutMs must be positive (got ${request.timeoutMs})`);
    // Guest-side backstop: msb kills the command's process group even if the driver's host dies.
    args.push(`--timeout=${timeoutSeconds(request.timeoutMs)}s`);
  }
  args.push("--", ...request.argv);
  return args;
}

/**
 * Stops, then kills (twice, to catch children forked during the first pass) every guest process
 * whose environment carries the marker. POSIX sh, tr and grep only: busybox images have them.
 */
const KILL_TREE_SCRIPT = [
  'marker="$1"',
  "for sig in STOP KILL KILL; do",
  "  for dir in /proc/[0-9]*; do",
  '    if tr "\\000" "\\n" 2>/dev/null <"$dir/environ" | grep -qxF "$marker"; then kill "-$sig" "${dir#/proc/}" 2>/dev/null; fi',
  "  done",
  "done",
  // Reached only if every fork succeeded: a shell that cannot fork (a guest at its process limit) exits non-zero.
  "exit 0",
].join("\n");

/** `msb exec NAME --no-tty --quiet --timeout=30s -- /bin/sh -c SCRIPT sh MARKER=ID`. */
export function buildKillTreeArgs(name: string, execId: string): string[] {
  if (!/^[A-Za-z0-9-]+$/.test(execId)) throw new InvalidSpecError(`exec id "${execId}" must be alphanumeric`);
  return ["exec", checkName(name, "VM name"), "--no-tty", "--quiet", "--timeout=30s", "--", "/bin/sh", "-c", KILL_TREE_SCRIPT, "sh", `${EXEC_MARKER_ENV}=${execId}`];
}
