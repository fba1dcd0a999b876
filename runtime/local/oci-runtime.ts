// The OCI runtime the embedded driver runs its bundles under: crun (the `local` tier, crun.ts) or runsc
// (the `gvisor` tier, runtime/gvisor/runsc.ts). Everything else — bundle, guest root, volumes, cgroups,
// VM records, recovery — is the same code for both; only what is below differs.
import type { BindMount, VmSpec } from "../driver";
import type { OciConfig } from "./oci-config";

/** The VM a runtime step is about: its name and container id, spec, uid block, cgroup and bundle. */
export type RuntimeVm = {
  name: string;
  id: string;
  spec: VmSpec;
  hostUidBase: number;
  cgroupPath: string;
  bundleDir: string;
  /** Each session mount's host source: its repository view when guarded (repo-fs/repo-views.ts). */
  sources: Map<BindMount, string>;
};

/** A config.json as a runtime runs it: the driver's, where a runtime may drop what it does not apply (runsc: seccomp, hooks). */
export type RuntimeConfig = Omit<OciConfig, "hooks" | "linux" | "root"> & {
  /** Writable only where the runtime keeps the writes from the host (runsc's in-memory overlay). */
  root: { path: string; readonly: boolean };
  hooks?: OciConfig["hooks"];
  linux: Omit<OciConfig["linux"], "seccomp"> & { seccomp?: OciConfig["linux"]["seccomp"] };
};

/** The exec agent's listening socket, bound on the host for one boot (exec-agent.c, `--bind`). */
export type AgentListener = { binary: string; socket: string };

export interface OciRuntime {
  readonly name: "crun" | "runsc";
  /** Whether it can keep every guest write in the VM's memory (VmSpec.scratchWrites). */
  readonly keepsWritesInMemory: boolean;
  /** Whether its guests can hold a Docker Engine without opening the host's kernel (VmSpec.docker). */
  readonly holdsDocker: boolean;
  /** argv for `<runtime> <args>` against this driver's own state root (so ids never collide across drivers). */
  argv(args: string[]): string[];
  version(): Promise<string | undefined>;
  /** The config.json this runtime runs, from the one the driver builds (crun: unchanged). */
  adaptConfig(config: OciConfig, vm: RuntimeVm): RuntimeConfig;
  /** Host-side preparation each boot needs before `startDetached` (runsc: the repository's idmapped mounts). */
  prepareStart(vm: RuntimeVm): Promise<void>;
  /**
   * Creates and starts the container detached; its host PID (what `livePid` watches) goes to `pidFile`.
   * `agent`: bind the exec agent's socket at `socket` with `binary` and hand the listener to the VM's init
   * as fd 3 (exec-agent.c); runtimes without the agent ignore it.
   */
  startDetached(id: string, bundleDir: string, pidFile: string, logFile: string, agent?: AgentListener): Promise<void>;
  /**
   * After start, before any command runs: every problem with the session mounts (verify-mounts.ts), and,
   * with egress, a wait until the guest's forwarder listens. A non-empty answer stops the VM.
   */
  checkStarted(vm: RuntimeVm, pid: number): Promise<string[]>;
  /** Removes the runtime's own state of a container whose processes are dead or dying; a missing one is fine. */
  delete(id: string): Promise<void>;
  /** Host-side resources of a VM to release once all its processes are gone (runsc: the idmapped mounts). */
  release(vm: Pick<RuntimeVm, "name">): Promise<void>;
  /**
   * At startup (incomplete.ts): what this runtime keeps for VMs that no longer exist — left by a crash
   * between steps — is removed; returns what went, for the log. `vmNames`: every VM directory there is.
   */
  cleanUpLeftovers(vmNames: string[]): Promise<string[]>;
}
