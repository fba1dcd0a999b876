// Runs the msb binary: a minimal child environment, stdin closed, output collected or streamed,
// a wall-clock limit per command, and a trace hook so tests and logs can see every command line.
import type { Subprocess } from "bun";
import { microvmSecretsOf, RuntimeError, type VmSpec } from "../driver";
import { secretEnvOf } from "./secret-args";

export type MsbOutput = { args: string[]; exitCode: number | null; signalCode: string | null; stdout: string; stderr: string };

export type MsbTraceEvent = { args: string[]; exitCode: number | null; signalCode: string | null; durationMs: number };

type StreamingChild = Subprocess<"ignore" | "pipe", "pipe", "pipe">;

// Only what msb needs reaches it: the manager's own secrets (its token) stay out of msb's env.
const PASSED_THROUGH = ["PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "LANG", "LC_ALL", "XDG_RUNTIME_DIR", "RUST_LOG"];

/** The env of every msb child. MSB_BACKEND=local: never let a stray profile or key select the cloud. */
export function buildMsbEnv(hostEnv: Record<string, string | undefined>, msbHome?: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of PASSED_THROUGH) {
    const value = hostEnv[key];
    if (value !== undefined) env[key] = value;
  }
  const home = msbHome ?? hostEnv.MSB_HOME;
  if (home !== undefined) env.MSB_HOME = home;
  env.MSB_BACKEND = "local";
  env.NO_COLOR = "1";
  return env;
}

/** Bun types a child's signal as a name or a number; msb output records it as text. */
export function signalOf(child: { signalCode: unknown }): string | null {
  return child.signalCode === null || child.signalCode === undefined ? null : String(child.signalCode);
}

/** The VM a command may boot: create's `--name=`, or the sandbox operand of start, restart and exec. */
function bootedBy(args: readonly string[]): string | undefined {
  if (args[0] === "create" || args[0] === "run") return args.find((a) => a.startsWith("--name="))?.slice("--name=".length);
  return args[0] === "start" || args[0] === "restart" || args[0] === "exec" ? args[1] : undefined;
}

export class MsbCli {
  /** Per VM: the secret values msb reads from its env whenever it boots that VM (runtime/msb/secret-args.ts). */
  readonly #secretEnv = new Map<string, Record<string, string>>();

  constructor(
    readonly binary: string,
    readonly env: Record<string, string>,
    private readonly trace?: (event: MsbTraceEvent) => void,
  ) {}

  /**
   * Keeps the spec's secret values for every later call that may boot it: msb fails such a call with
   * "host environment variable X is not set" otherwise, and a value must not sit in argv or msb's config.
   */
  rememberSecrets(spec: VmSpec): void {
    if (microvmSecretsOf(spec).length > 0) this.#secretEnv.set(spec.name, secretEnvOf(spec));
    else this.#secretEnv.delete(spec.name);
  }

  /**
   * Starts msb with stdin from /dev/null (msb exec would otherwise wait for stdin EOF, msb #1549), or with
   * a pipe for a command's input (`withStdin`), which the caller ends.
   */
  spawn(args: string[], withStdin = false): StreamingChild {
    try {
      const name = bootedBy(args);
      const env = name === undefined ? this.env : { ...this.env, ...this.#secretEnv.get(name) };
      return Bun.spawn([this.binary, ...args], { env, stdin: withStdin ? "pipe" : "ignore", stdout: "pipe", stderr: "pipe" });
    } catch (error) {
      throw new RuntimeError(
        "UNAVAILABLE",
        `cannot run msb at ${this.binary} (${(error as Error).message}); run \`bun install\` (microsandbox is a devDependency) or set MSB_PATH`,
      );
    }
  }

  /** Reports a finished command to the trace hook. */
  traced(args: string[], child: { exitCode: number | null; signalCode: unknown }, startedAt: number): void {
    this.trace?.({ args, exitCode: child.exitCode, signalCode: signalOf(child), durationMs: Date.now() - startedAt });
  }

  /** Runs to completion and collects both streams; kills msb and throws past `timeoutMs`. */
  async run(args: string[], options: { timeoutMs: number }): Promise<MsbOutput> {
    const startedAt = Date.now();
    const child = this.spawn(args);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, options.timeoutMs);
    try {
      const [stdout, stderr] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
      this.traced(args, child, startedAt);
      if (timedOut) throw new RuntimeError("FAILED", `msb ${args.slice(0, 2).join(" ")} did not finish within ${options.timeoutMs} ms and was killed`);
      return { args, exitCode: child.exitCode, signalCode: signalOf(child), stdout, stderr };
    } finally {
      clearTimeout(timer);
    }
  }
}
