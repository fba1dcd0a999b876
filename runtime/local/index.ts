// The embedded `local` runtime driver: one crun container per VM, isolated by namespaces, an
// unprivileged uid range, cgroups and seccomp. createLocalDriver wires the modules of this folder.
import { chmodSync, existsSync, mkdirSync, readdirSync } from "node:fs";
import { RuntimeError, type RuntimeDriver, type VmInfo } from "../driver";
import { ensureVm } from "../ensure";
import { attestStoredSpec } from "./attest";
import { detectCgroupLayout } from "./cgroup-layout";
import type { DriverContext } from "./context";
import { Crun } from "./crun";
import { execInVm } from "./exec";
import { openTerminal } from "./terminal";
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
};

export type LocalDriver = RuntimeDriver & {
  /** Where this driver keeps a VM's cgroup (same path in every hierarchy); for tests and diagnostics. */
  cgroupPath(name: string): string;
};

export function createLocalDriver(options: LocalDriverOptions): LocalDriver {
  // 0711: the VMs' unprivileged host uids must traverse it to reach their root and volume, because
  // crun sets up mounts from inside the VM's user namespace; listing stays denied.
  mkdirSync(options.stateDir, { recursive: true });
  chmodSync(options.stateDir, 0o711);
  const paths = new StatePaths(options.stateDir, options.cgroupParent ?? "session-sandbox");
  const crunPath = Bun.which(options.crunPath ?? "crun");
  const unsharePath = Bun.which("unshare");
  const initPath = options.tiniPath ?? "/usr/bin/tini-static";
  const layout = detectCgroupLayout();
  const crun = new Crun({ crunPath: crunPath ?? "crun", unsharePath: unsharePath ?? "unshare", crunRoot: paths.crunRoot, layout: layout ?? { kind: "v1", hierarchies: new Map() } });
  const probe = () => probeLocal({ crun, crunPath, initPath, unsharePath, layout, rootfsDir: options.rootfsDir });

  let ready: Promise<DriverContext> | undefined;
  /** Fails every VM operation with the probe's findings until the host has what the driver needs. */
  const context = (): Promise<DriverContext> =>
    (ready ??= probe().then((capability) => {
      const blocking = capability.problems.filter((p) => !p.what.startsWith("root filesystem"));
      if (blocking.length > 0 || !layout) {
        ready = undefined;
        throw new RuntimeError("UNAVAILABLE", `local runtime unavailable: ${blocking.map((p) => `${p.what} (fix: ${p.fix})`).join("; ")}`);
      }
      return {
        paths,
        store: new VmStore(paths),
        volumes: new Volumes(paths, {
          firstHostUid: options.firstHostUid ?? 1 << 30,
          slots: options.uidSlots ?? 16384,
          registryDir: options.uidRegistryDir ?? DEFAULT_UID_REGISTRY_DIR,
        }),
        crun,
        layout,
        pidsLimit: options.pidsLimit ?? 1024,
        initPath,
      };
    }));
  const store = new VmStore(paths);

  const driver: LocalDriver = {
    name: "local",
    probe,
    ensure: (spec) => ensureVm(driver, spec),
    attest: attestStoredSpec,
    ping: async () => crunPath !== null && (await crun.version()) !== undefined,
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
      return execInVm(await context(), name, request, sink);
    },
    openTerminal: (name, request, output) => {
      if (!isValidName(name)) throw new RuntimeError("NOT_FOUND", `VM ${name} does not exist`);
      return openTerminal(context(), name, request, output);
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
  return driver;
}
