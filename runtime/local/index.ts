// The embedded `local` runtime driver: one crun container per VM, isolated by namespaces, an
// unprivileged uid range, cgroups and seccomp. createLocalDriver wires the modules of this folder.
import { chmodSync, existsSync, mkdirSync, readdirSync } from "node:fs";
import { RuntimeError, type Capability, type ExecRequest, type ExecResult, type ExecSink, type RuntimeDriver, type VmInfo } from "../driver";
import { ensureVm } from "../ensure";
import { attestStoredSpec } from "./attest";
import { detectCgroupLayout, type CgroupLayout } from "./cgroup-layout";
import type { DriverContext } from "./context";
import { Crun } from "./crun";
import { execInVm } from "./exec";
import { adoptVmSeccompProgram } from "./vm-seccomp";
import { ensureVmRelay } from "./vm-relay-binary";
import { ensureExecAgent } from "./exec-agent-binary";
import { refusalLogEnds, refusalNotes } from "../repo-fs/refusal-notes";
import type { OciRuntime } from "./oci-runtime";
import { CRUN_TERMINAL, openTerminal, type TerminalBackend } from "./terminal";
import { cleanUpIncomplete } from "./incomplete";
import { createVm, removeVm, startVm, stopVm } from "./lifecycle";
import { probeLocal } from "./probe";
import { isValidName, StatePaths } from "./state-paths";
import { DEFAULT_UID_REGISTRY_DIR } from "./uid-registry";
import { VmStore } from "./vm-store";
import { readCgroupStats, readVolumeDisk } from "./vm-stats";
import { Volumes } from "./volumes";

export { defaultRootfsDir, ensureRootfs } from "./rootfs";

export type LocalDriverOptions = {
  /** Where bundles, VM records, crun state and volumes live (created 0700). Never visible in a guest. */
  stateDir: string;
  /** The rootfs the probe checks for (specs name their own `image`); usually defaultRootfsDir(). */
  rootfsDir?: string;
  crunPath?: string;
  tiniPath?: string;
  /** Top-level cgroup under which every VM's cgroup is created. */
  cgroupParent?: string;
  /** pids.max of each VM (processes + threads). */
  pidsLimit?: number;
  /** First host uid of the VM uid blocks (each VM gets 65536), and how many blocks there are. */
  firstHostUid?: number;
  uidSlots?: number;
  /** Where uid ranges are claimed, host-wide: every manager on a host must use the same one. */
  uidRegistryDir?: string;
  /**
   * What a probe of this same configuration found, on another thread (the manager probes every runtime at
   * start; each actor Worker gets it in its init message): the first VM operation uses it instead of
   * probing again on every new session's first command. Blocking problems still refuse, and after
   * a refusal the driver probes for itself.
   */
  probed?: Capability;
  /** The VMs' seccomp program as another thread compiled it from this same code (base64; vm-seccomp.ts). */
  seccompProgram?: string;
  /**
   * Runs commands through a resident agent in each new VM (a fork/exec in the guest) instead of a `crun exec`
   * each (default true; SANDBOX_EXEC_AGENT=off). `crun exec` stays the path for terminals, for VMs made
   * without the agent, and whenever the agent cannot take a command.
   */
  execAgent?: boolean;
  /** Where the agent binary is built (shared by every driver on the host); DEFAULT_EXEC_AGENT_DIR. */
  execAgentDir?: string;
};

/**
 * What a tier built on this driver swaps in (runtime/gvisor/): the OCI runtime, its probe, how a command
 * runs, whether it has terminals. createLocalDriver uses crun's (the `local` tier) when given none.
 */
type OciTier = {
  driverName: "local" | "gvisor";
  runtime: OciRuntime;
  probe(): Promise<Capability>;
  /** Cheap liveness check of the runtime binary itself. */
  ping(): Promise<boolean>;
  exec(ctx: DriverContext, name: string, request: ExecRequest, sink: ExecSink): Promise<ExecResult>;
  /** How openTerminal runs on this runtime; none: the driver has no openTerminal. */
  terminal?: TerminalBackend;
  /** Whether its VMs can run commands through the exec agent (its processes are host processes whose cgroup the host sets). */
  execAgent?: boolean;
};
/** What the driver computes once and a tier builds on. */
type TierBase = { paths: StatePaths; layout: CgroupLayout | undefined; initPath: string };

function crunTier(options: LocalDriverOptions, { paths, layout, initPath }: TierBase): OciTier {
  const crunPath = Bun.which(options.crunPath ?? "crun");
  const unsharePath = Bun.which("unshare");
  const crun = new Crun({ crunPath: crunPath ?? "crun", unsharePath: unsharePath ?? "unshare", crunRoot: paths.crunRoot, layout: layout ?? { kind: "v1", hierarchies: new Map() } });
  return {
    driverName: "local",
    runtime: crun,
    probe: async () => withExecAgentStatus(await probeLocal({ crun, crunPath, initPath, unsharePath, layout, rootfsDir: options.rootfsDir }), options),
    ping: async () => crunPath !== null && (await crun.version()) !== undefined,
    exec: (ctx, name, request, sink) => execInVm(ctx, name, request, sink),
    terminal: CRUN_TERMINAL,
    execAgent: true,
  };
}

/** The probe's version line says how commands run: through the exec agent, or with `crun exec` and why. */
function withExecAgentStatus(capability: Capability, options: LocalDriverOptions): Capability {
  if (!capability.available) return capability;
  if (options.execAgent === false) return { ...capability, version: `${capability.version}, commands by crun exec (SANDBOX_EXEC_AGENT=off)` };
  const build = ensureExecAgent(options.execAgentDir);
  const how = build.path ? "commands by the in-VM exec agent" : `commands by crun exec: no exec agent, ${build.problem}`;
  return { ...capability, version: `${capability.version}, ${how}` };
}

export type LocalDriver = RuntimeDriver & {
  /** Where this driver keeps a VM's cgroup (same path in every hierarchy); for tests and diagnostics. */
  cgroupPath(name: string): string;
};

export function createLocalDriver(options: LocalDriverOptions, makeTier?: (base: TierBase) => OciTier): LocalDriver {
  // 0711: the VMs' unprivileged host uids must traverse it to reach their root and volume, because
  // crun sets up mounts from inside the VM's user namespace; listing stays denied.
  mkdirSync(options.stateDir, { recursive: true });
  chmodSync(options.stateDir, 0o711);
  const paths = new StatePaths(options.stateDir, options.cgroupParent ?? "session-sandbox");
  if (options.seccompProgram) adoptVmSeccompProgram(options.seccompProgram);
  const initPath = options.tiniPath ?? "/usr/bin/tini-static";
  const layout = detectCgroupLayout();
  const tier = (makeTier ?? ((base) => crunTier(options, base)))({ paths, layout, initPath });
  const probe = tier.probe;

  let ready: Promise<DriverContext> | undefined;
  let probed = options.probed;
  const firstProbe = (): Promise<Capability> => {
    const known = probed;
    probed = undefined;
    return known ? Promise.resolve(known) : probe();
  };
  /** Fails every VM operation with the probe's findings until the host has what the driver needs. */
  const context = (): Promise<DriverContext> =>
    (ready ??= firstProbe().then((capability) => {
      const blocking = capability.problems.filter((p) => !p.what.startsWith("root filesystem"));
      if (blocking.length > 0 || !layout) {
        ready = undefined;
        throw new RuntimeError("UNAVAILABLE", `${tier.driverName} runtime unavailable: ${blocking.map((p) => `${p.what} (fix: ${p.fix})`).join("; ")}`);
      }
      return {
        paths,
        store: new VmStore(paths),
        volumes: new Volumes(paths, {
          firstHostUid: options.firstHostUid ?? 1 << 30,
          slots: options.uidSlots ?? 16384,
          registryDir: options.uidRegistryDir ?? DEFAULT_UID_REGISTRY_DIR,
        }),
        runtime: tier.runtime,
        layout,
        pidsLimit: options.pidsLimit ?? 1024,
        initPath,
        execAgent: tier.execAgent && options.execAgent !== false ? ensureExecAgent(options.execAgentDir).path : undefined,
        relay: ensureVmRelay(options.execAgentDir).path,
      };
    }));
  const store = new VmStore(paths);

  const driver: LocalDriver = {
    name: tier.driverName,
    probe,
    ensure: (spec) => ensureVm(driver, spec),
    attest: attestStoredSpec,
    ping: tier.ping,
    create: async (spec, createOptions) => createVm(await context(), spec, createOptions),
    start: async (name) => {
      if (!isValidName(name)) throw new RuntimeError("NOT_FOUND", `VM ${name} does not exist`);
      await startVm(await context(), name);
    },
    stop: async (name) => {
      if (isValidName(name)) await stopVm(await context(), name);
    },
    remove: async (name, removeOptions) => {
      if (isValidName(name)) await removeVm(await context(), name, removeOptions);
    },
    exec: async (name, request, sink) => {
      if (!isValidName(name)) throw new RuntimeError("NOT_FOUND", `VM ${name} does not exist`);
      // What the repository view refused meanwhile is told on the command's stderr, after its own output.
      const since = refusalLogEnds(paths.stateDir, name);
      const result = await tier.exec(await context(), name, request, sink);
      for (const note of refusalNotes(paths.stateDir, name, since)) sink.stderr(new TextEncoder().encode(note));
      return result;
    },
    openTerminal: (name, request, output, room) => {
      if (!isValidName(name)) throw new RuntimeError("NOT_FOUND", `VM ${name} does not exist`);
      return openTerminal(context(), name, request, output, tier.terminal, room);
    },
    inspect: async (name) => (isValidName(name) ? store.info(name) : undefined),
    list: async (labels) =>
      store
        .names()
        .map((name) => store.info(name))
        .filter((info): info is VmInfo => !!info && Object.entries(labels).every(([k, v]) => info.spec.labels[k] === v)),
    listVolumes: async () => (existsSync(paths.volumesDir) ? readdirSync(paths.volumesDir) : []),
    removeVolume: async (name) => {
      if (isValidName(name)) await (await context()).volumes.remove(name);
    },
    cleanUpIncomplete: async () => cleanUpIncomplete(await context()),
    stats: async (name) => {
      const record = isValidName(name) ? store.read(name) : undefined;
      if (!record) return undefined;
      const running = store.livePid(name) !== undefined;
      const usage = running && layout ? (readCgroupStats(layout, record.cgroupPath) ?? null) : null;
      return { name, status: running ? "running" : "stopped", usage, disk: readVolumeDisk(paths.volumeData(record.spec.volume.name)) ?? null };
    },
    cgroupPath: (name) => paths.cgroupPath(name),
  };
  // A runtime without terminals has no openTerminal, as the contract says (the API then refuses one).
  if (!tier.terminal) delete driver.openTerminal;
  return driver;
}
