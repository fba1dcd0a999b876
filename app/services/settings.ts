// Server-wide sandbox settings: explicit values from the database over env and built-in defaults,
// with range checks against the host.
import type { SettingsRepo } from "../db/settings-repo";
import { ResourceOutOfRangeError, SettingOutOfRangeError } from "../errors";
import type { HostLimits } from "./host-limits";
import type { Notify } from "./lifecycle-events";
import type { NetworkPolicy } from "../../egress/network-policy";
import { DEFAULT_DISK_MIB, MIN_DISK_MIB } from "../../runtime/driver";
import { checkNetworkPolicy } from "./network-policy";
import { DEFAULT_IMAGE, type ImageChoice } from "../images/image-choice";
import type { IsolationChoice } from "../../runtime/isolation";

/** Checks an image choice against its grammar and what the runtime can boot; returns it normalized. Throws a 400. */
export type NormalizeImage = (choice: ImageChoice) => ImageChoice;

type SandboxSettings = {
  enabled: boolean;
  defaultForNewSessions: boolean;
  cpus: number;
  memoryMib: number;
  /** A quiescent VM unused this long (no command, no activity of its sessions) is removed with its volume. */
  idleStopMinutes: number;
  /** Opt-in (0 = off): a quiescent VM unused this long is stopped first, volume and definition kept, so its next command restarts it quickly. */
  idleSuspendMinutes: number;
  /** A working session (busy, or retrying within the limit) holds its VM: the sweep never removes it and the cap never evicts it. */
  holdWhileBusy: boolean;
  /** The longest one busy stretch holds a VM: a session stuck busy (a plugin that died mid-turn) counts as quiescent after it. */
  maxHoldMinutes: number;
  maxRunningVms: number;
  execTimeoutMs: number;
  /** The egress policy of sessions without an override of their own. */
  network: NetworkPolicy;
  /** Opt-in: forward the configured git credentials (SANDBOX_GIT_CREDENTIALS) into sandboxes. */
  forwardGitCredentials: boolean;
  /** Disk quota of each VM's home volume (and the most /tmp can hold): writes past it fail with ENOSPC. */
  diskMib: number;
  /** The guest image of sessions without an override of their own. */
  image: ImageChoice;
  /** The most an image build or pull may write (its unpacked size): past it, IMAGE_TOO_LARGE, checked while it unpacks. */
  maxImageMib: number;
  /** The isolation tier of sessions without an override of their own; auto = the strongest that works here. */
  isolation: IsolationChoice;
  /** Whether sessions without an override of their own get a Docker Engine in their VM (docs/docker.md). */
  docker: boolean;
};

/** A PATCH: each key set to a value, or to null to go back to its default. */
type SettingsPatch = { [K in keyof SandboxSettings]?: SandboxSettings[K] | null };

export type EnvDefaults = { cpus?: number; memoryMib?: number; execTimeoutMs?: number; isolation?: IsolationChoice };

/** Throws a 400 naming why, when an explicit isolation tier does not work on this host. */
export type CheckIsolation = (choice: IsolationChoice) => void;

type SettingsOptions = {
  notify?: Notify;
  /** Free MiB where the runtime keeps volumes, when known (checked on each change of diskMib). */
  diskFreeMib?: () => number | undefined;
  normalizeImage?: NormalizeImage;
  checkIsolation?: CheckIsolation;
  /** Throws a 400 when the tier `isolation` runs in cannot hold a Docker Engine; none by default. */
  checkDocker?: CheckIsolation;
  /** The network check for the tier `isolation` runs in (see checkNetworkPolicy); the grammar alone by default. */
  checkNetwork?: (policy: NetworkPolicy, isolation: IsolationChoice) => void;
};

export const MIN_CPUS = 1;
export const MIN_MEMORY_MIB = 128;
const BUILT_IN_CPUS = 2;
const BUILT_IN_MEMORY_MIB = 2048;
const BUILT_IN_EXEC_TIMEOUT_MS = 120_000;

export const RANGES = {
  idleStopMinutes: { min: 1, max: 7 * 24 * 60, unit: "minutes" },
  idleSuspendMinutes: { min: 0, max: 7 * 24 * 60, unit: "minutes (0 = off)" },
  maxHoldMinutes: { min: 1, max: 7 * 24 * 60, unit: "minutes" },
  maxRunningVms: { min: 1, max: 256, unit: "VMs" },
  execTimeoutMs: { min: 1_000, max: 24 * 60 * 60 * 1000, unit: "ms" },
  maxImageMib: { min: 64, max: 1024 * 1024, unit: "MiB" },
} as const;

/** Room for the larger dev images (a devcontainer's universal image), many times the size of the built-in one. */
export const DEFAULT_MAX_IMAGE_MIB = 16 * 1024;

/** Checks cpus and memoryMib against the minimum and the host; `label` names where they came from. */
export function checkResources(resources: { cpus?: number | null; memoryMib?: number | null }, host: HostLimits, label: string): void {
  const { cpus, memoryMib } = resources;
  if (cpus != null && (cpus < MIN_CPUS || cpus > host.cpus)) {
    throw new ResourceOutOfRangeError(
      `${label}cpus ${cpus} is out of range: it must be between ${MIN_CPUS} and the host's ${host.cpus} CPUs`,
    );
  }
  if (memoryMib != null && (memoryMib < MIN_MEMORY_MIB || memoryMib > host.memoryMib)) {
    throw new ResourceOutOfRangeError(
      `${label}memoryMib ${memoryMib} is out of range: it must be between ${MIN_MEMORY_MIB} MiB and the host's ${host.memoryMib} MiB`,
    );
  }
}

/**
 * A disk quota below ext4's useful minimum, or above the free space where volumes live (`freeMib`:
 * undefined when unknown), is refused. Volume images are sparse, so this bounds one VM, not their sum.
 */
function checkDiskMib(diskMib: number, freeMib: number | undefined): void {
  if (diskMib < MIN_DISK_MIB) throw new SettingOutOfRangeError(`diskMib ${diskMib} is out of range: it must be at least ${MIN_DISK_MIB} MiB`);
  if (freeMib !== undefined && diskMib > freeMib) {
    throw new SettingOutOfRangeError(`diskMib ${diskMib} is out of range: it must be at most the ${freeMib} MiB free on the disk that holds the VMs' volumes`);
  }
}

export function createSettingsService(repo: SettingsRepo, host: HostLimits, env: EnvDefaults, options: SettingsOptions = {}) {
  const { notify = () => undefined, diskFreeMib = () => undefined, normalizeImage = (choice) => choice, checkIsolation = () => undefined, checkDocker = () => undefined, checkNetwork = (policy: NetworkPolicy) => checkNetworkPolicy(policy) } = options;
  checkResources(env, host, "the environment's SANDBOX_CPUS/SANDBOX_MEMORY: ");
  const defaults: SandboxSettings = {
    enabled: true,
    defaultForNewSessions: true,
    cpus: env.cpus ?? Math.min(BUILT_IN_CPUS, host.cpus),
    memoryMib: env.memoryMib ?? Math.min(BUILT_IN_MEMORY_MIB, host.memoryMib),
    idleStopMinutes: 30,
    idleSuspendMinutes: 0,
    holdWhileBusy: true,
    // A working day: long agent turns (a loop runner's) fit; a session stuck busy overnight does not.
    maxHoldMinutes: 8 * 60,
    maxRunningVms: 4,
    execTimeoutMs: env.execTimeoutMs ?? BUILT_IN_EXEC_TIMEOUT_MS,
    network: { mode: "none" },
    forwardGitCredentials: false,
    diskMib: DEFAULT_DISK_MIB,
    image: DEFAULT_IMAGE,
    maxImageMib: DEFAULT_MAX_IMAGE_MIB,
    isolation: env.isolation ?? "auto",
    docker: false,
  };

  function read(): SandboxSettings {
    const stored = repo.readAll();
    const settings = { ...defaults };
    for (const key of Object.keys(defaults) as (keyof SandboxSettings)[]) {
      if (key in stored) (settings as Record<string, unknown>)[key] = stored[key];
    }
    return settings;
  }

  // Read once, then again after each write: every read path (each GET, each command) used to query the table,
  // and this service is the only writer of it (the admin scripts go through the API; one manager per data dir).
  let cached = read();

  /** A copy of the current settings; its nested objects (network, image) are shared, as the defaults' always were. */
  function get(): SandboxSettings {
    return { ...cached };
  }

  function patch(changes: SettingsPatch): SandboxSettings {
    checkResources(changes, host, "");
    // The default policy against the default tier: either changing can make an entry unenforceable.
    if (changes.network || changes.isolation) checkNetwork(changes.network ?? get().network, changes.isolation ?? get().isolation);
    if (changes.diskMib != null) checkDiskMib(changes.diskMib, diskFreeMib());
    if (changes.image != null) changes = { ...changes, image: normalizeImage(changes.image) };
    if (changes.isolation != null) checkIsolation(changes.isolation);
    // Docker by default needs a default tier that can hold it: turning either on can break that.
    if (changes.docker !== undefined || changes.isolation !== undefined) {
      const docker = changes.docker === undefined ? get().docker : (changes.docker ?? defaults.docker);
      if (docker) checkDocker(changes.isolation === undefined ? get().isolation : (changes.isolation ?? defaults.isolation));
    }
    for (const [key, range] of Object.entries(RANGES)) {
      const value = changes[key as keyof typeof RANGES];
      if (value != null && (value < range.min || value > range.max)) {
        throw new SettingOutOfRangeError(`${key} ${value} is out of range: it must be between ${range.min} and ${range.max} ${range.unit}`);
      }
    }
    const suspend = changes.idleSuspendMinutes === undefined ? get().idleSuspendMinutes : (changes.idleSuspendMinutes ?? defaults.idleSuspendMinutes);
    const stop = changes.idleStopMinutes === undefined ? get().idleStopMinutes : (changes.idleStopMinutes ?? defaults.idleStopMinutes);
    if (suspend > 0 && suspend >= stop) {
      throw new SettingOutOfRangeError(`idleSuspendMinutes ${suspend} must be below idleStopMinutes ${stop}: a VM is stopped first, then removed later (or set idleSuspendMinutes to 0 to remove without stopping first)`);
    }
    const before = get();
    repo.write(changes);
    cached = read();
    const after = get();
    if (before.enabled && !after.enabled) notify({ type: "sandboxing-disabled" });
    if (after.maxRunningVms !== before.maxRunningVms) notify({ type: "cap-changed" });
    if (JSON.stringify(after.network) !== JSON.stringify(before.network)) notify({ type: "default-network-changed" });
    if (after.forwardGitCredentials !== before.forwardGitCredentials) notify({ type: "git-credentials-changed" });
    if (changes.image !== undefined) notify({ type: "image-chosen", choice: after.image });
    const changed = (Object.keys(after) as (keyof SandboxSettings)[]).filter((key) => JSON.stringify(after[key]) !== JSON.stringify(before[key]));
    if (changed.length > 0) notify({ type: "settings-changed", keys: changed });
    return after;
  }

  return { get, patch, defaults: () => ({ ...defaults }), checkNetwork, checkDocker };
}

export type SettingsService = ReturnType<typeof createSettingsService>;
