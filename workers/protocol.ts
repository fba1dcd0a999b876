// The message protocol between the main thread and a session actor Worker. Plain data only: specs,
// byte chunks and error records cross the boundary, never objects with behaviour.
import type { Capability, VmSpec } from "../runtime/driver";
import type { IsolationTier } from "../runtime/isolation";
import { vmSeccompProgramBase64 } from "../runtime/local/vm-seccomp";

/**
 * One runtime driver: the embedded container tier (crun), the gVisor tier (runsc) or msb's microVMs.
 * `probed`: the main thread's probe of this same config, so an actor does not probe again (runtime/local/index.ts);
 * `seccompProgram`: the VMs' seccomp program the main thread compiled, so an actor does not compile it again
 * (runtime/local/vm-seccomp.ts).
 */
export type SingleDriverConfig =
  | { kind: "local"; stateDir: string; rootfsDir?: string; cgroupParent?: string; probed?: Capability; seccompProgram?: string; execAgent?: boolean }
  | { kind: "gvisor"; stateDir: string; rootfsDir?: string; cgroupParent?: string; probed?: Capability; seccompProgram?: string }
  | { kind: "msb"; msbPath?: string; msbHome?: string; viewsDir?: string };

/**
 * `config` carrying what the main thread already found and built for it, so that no actor Worker redoes it: its
 * probe, and the VMs' seccomp program (an embedded tier's; msb's own client has neither to skip).
 */
export function withStartupFindings(config: SingleDriverConfig, probed: Capability): SingleDriverConfig {
  return config.kind === "msb" ? config : { ...config, probed, seccompProgram: vmSeccompProgramBase64() };
}

/**
 * How to build the runtime driver inside the Worker (a driver cannot cross threads): one driver, or the
 * tiered driver (runtime/tiered.ts) over several, each VM on the tier its spec names.
 */
export type DriverConfig = SingleDriverConfig | { kind: "tiered"; defaultTier: IsolationTier; tiers: Partial<Record<IsolationTier, SingleDriverConfig>> };

/** The runtime a config boots VMs with by default: a tiered config's default tier's. */
export function primaryRuntime(config: DriverConfig): SingleDriverConfig {
  if (config.kind !== "tiered") return config;
  return config.tiers[config.defaultTier] ?? Object.values(config.tiers)[0]!;
}

/** The runtime whose VMs can keep every write in their memory (VmSpec.scratchWrites: image builds): gVisor's, when configured. */
export function scratchWritesRuntime(config: DriverConfig | undefined): SingleDriverConfig | undefined {
  if (config?.kind === "tiered") return config.tiers.gvisor;
  return config?.kind === "gvisor" ? config : undefined;
}

export type VmStatus = "absent" | "booting" | "running" | "stopping" | "stopped" | "removing";

export type StopReason = "idle" | "suspend" | "cap" | "toggle-off" | "deleted" | "spec-change" | "crash" | "sweep" | "manual" | "disabled" | "recovery" | "shutdown";

export type ActorState = {
  vmName: string;
  status: VmStatus;
  spec: VmSpec | null;
  createdAt: number | null;
  runningExecs: number;
  lastStopReason: StopReason | null;
};

export type ExecCommand = {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  /** An interactive shell on a PTY in the VM (the driver's openTerminal) instead of `argv`, which is then unused. */
  terminal?: { rows: number; cols: number };
  /** Its standard input follows in "input" requests, ending with `data: null`; without it, stdin is /dev/null. */
  stdin?: true;
};

/** The first message a session actor Worker gets (instead of workerData: node:worker_threads costs each Worker memory). */
export type ActorInit = { type: "init"; vmName: string; driver: DriverConfig };

export type ActorRequest =
  | { type: "exec"; id: number; spec: VmSpec; command: ExecCommand }
  | { type: "cancel"; id: number; execId: number }
  | { type: "stop"; id: number; reason: StopReason; onlyIfIdle: boolean }
  | { type: "remove"; id: number; reason: StopReason }
  | { type: "discover"; id: number }
  /**
   * Keystrokes for a terminal exec, or the next chunk of an exec's stdin (answered once the command's
   * runtime took it: workers/input-queue.ts); `data: null` ends its input.
   */
  | { type: "input"; id: number; execId: number; data: Uint8Array | null }
  | { type: "terminal-resize"; id: number; execId: number; rows: number; cols: number };

/**
 * A message to the actor that gets no reply: the main thread's consumer of an exec's output took `bytes` more
 * of it (workers/output-window.ts), in batches of a quarter of the window: a reply each would double the messages.
 */
export type ActorNotice = { type: "output-taken"; execId: number; bytes: number };

export type ErrorRecord = { code: ActorErrorCode; message: string };
export type ActorErrorCode = "RUNTIME_FAILED" | "RUNTIME_UNAVAILABLE" | "BUSY" | "ACTOR_CRASHED" | "REVOKED";

/** Removals that withdraw the session's sandbox: commands still waiting from before them must not run. */
export const REVOKING_REASONS: ReadonlySet<StopReason> = new Set(["toggle-off", "deleted", "disabled"]);

/** How a command ended; `oomKilled`: the kernel killed it at the VM's memory limit (runtime/driver.ts ExecResult). */
export type ExecOutcome = { exitCode: number; timedOut: boolean; cancelled: boolean; oomKilled: boolean };

export type ActorEvent =
  | { type: "ready" }
  | { type: "state"; state: ActorState }
  /** The exec's VM is running and its command has been handed to the runtime. */
  | { type: "exec-started"; id: number }
  | { type: "chunk"; id: number; stream: "stdout" | "stderr"; data: Uint8Array }
  /** A line for the manager's log (a Worker has no logger of its own). */
  | { type: "log"; level: "info" | "warn"; message: string; fields: Record<string, unknown> }
  | { type: "reply"; id: number; ok: true; value: unknown }
  | { type: "reply"; id: number; ok: false; error: ErrorRecord };
