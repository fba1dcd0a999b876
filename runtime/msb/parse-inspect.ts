// Reads `msb inspect NAME --format=json` and `msb list --format=json` into VmInfo. Defensive: unknown
// fields are ignored, missing or unrecognised ones become `anomalies`, which attestation treats as
// mismatches, so a sandbox that cannot be fully read is never reused.
import type { BindMount, VmInfo, VmSpec, VmStatus } from "../driver";
import { GUEST_SYSTEM_CA_BUNDLE, GUEST_TRUST_DIR, TRUST_BUNDLE_FILE } from "../driver";
import { GUEST_HOME } from "../guest-layout";
import { DISK_MIB_LABEL, TMP_GUEST_PATH } from "./create-args";
import { asArray, asBoolean, asNumber, asRecord, asString } from "./json-guards";
import { readNetworkPolicy } from "./network-rules";
import { readSecrets } from "./secret-args";
import { isRepoViewPath } from "../repo-fs/repo-views";

/** VmInfo plus what could not be read from msb's output. */
export type MsbVmInfo = VmInfo & { anomalies: string[] };

// "Draining"/"Starting"/"Paused" still hold a VM process; only these have none.
const STOPPED_STATUSES = new Set(["Stopped", "Crashed", "Created"]);
const RUNNING_STATUSES = new Set(["Running", "Draining", "Starting", "Paused"]);

function readStatus(value: unknown, anomalies: string[]): VmStatus {
  const status = asString(value);
  if (status !== undefined && RUNNING_STATUSES.has(status)) return "running";
  if (status === undefined || !STOPPED_STATUSES.has(status)) anomalies.push(`status not recognised: ${JSON.stringify(value)}`);
  return "stopped";
}

function readCreatedAt(value: unknown): number {
  const parsed = Date.parse(asString(value) ?? "");
  return Number.isNaN(parsed) ? 0 : parsed;
}

/** msb tags the image source: {"Bind":{path}}, {"Oci":{reference}} or {"DiskImage":{path}}. */
function readImage(value: unknown, anomalies: string[]): string {
  if (typeof value === "string") return value;
  const image = asRecord(value);
  const path = asString(asRecord(image?.Bind)?.path) ?? asString(asRecord(image?.DiskImage)?.path);
  const reference = asString(asRecord(image?.Oci)?.reference);
  const found = reference ?? path;
  if (found === undefined) anomalies.push(`image not recognised: ${JSON.stringify(value)}`);
  return found ?? "";
}

type MountReading = { mounts: BindMount[]; tmpSizeMib: number; volumeName: string; trustDir?: string };
type TrustMount = { host: string; readOnly: boolean };
const TRUST_GUEST_PATHS = new Set([GUEST_TRUST_DIR, GUEST_SYSTEM_CA_BUNDLE]);

function readMountOptions(mount: Record<string, unknown>, label: string, anomalies: string[]): boolean {
  const options = asRecord(mount.options);
  for (const flag of ["noexec", "nosuid", "nodev"]) {
    if (options?.[flag] === true) anomalies.push(`${label} has ${flag} set`);
  }
  return asBoolean(options?.readonly) === true;
}

function readMounts(value: unknown, anomalies: string[]): MountReading {
  const reading: MountReading = { mounts: [], tmpSizeMib: 0, volumeName: "" };
  const trust = new Map<string, TrustMount>();
  for (const item of asArray(value) ?? []) {
    const mount = asRecord(item);
    const type = asString(mount?.type);
    const guest = asString(mount?.guest);
    if (!mount || !guest) {
      anomalies.push(`mount not recognised: ${JSON.stringify(item)}`);
      continue;
    }
    const readOnly = readMountOptions(mount, `mount ${guest}`, anomalies);
    const host = asString(mount.host);
    if (type === "Bind" && host !== undefined && TRUST_GUEST_PATHS.has(guest)) {
      trust.set(guest, { host, readOnly });
    } else if (type === "Bind" && host !== undefined) {
      // A repository view (runtime/repo-fs) serves the directory that appears at `guest`.
      const viaView = isRepoViewPath(host);
      if (host !== guest && !viaView) anomalies.push(`mount ${host} appears at ${guest}, not at the identical path`);
      const hostPath = viaView ? guest : host;
      reading.mounts.push(readOnly ? { hostPath, readOnly: true } : { hostPath });
    } else if (type === "Tmpfs" && guest === TMP_GUEST_PATH && !readOnly) {
      reading.tmpSizeMib = asNumber(mount.size_mib) ?? 0;
    } else if (type === "Named" && guest === GUEST_HOME && asString(mount.name) && !readOnly) {
      reading.volumeName = asString(mount.name) ?? "";
    } else {
      anomalies.push(`mount not recognised: ${JSON.stringify(item)}`);
    }
  }
  if (trust.size > 0) reading.trustDir = readTrustDir(trust, anomalies);
  return reading;
}

/** What create-args makes: one directory read-only at GUEST_TRUST_DIR, and its bundle read-only over the system store. */
function readTrustDir(mounts: Map<string, TrustMount>, anomalies: string[]): string | undefined {
  const dir = mounts.get(GUEST_TRUST_DIR);
  const store = mounts.get(GUEST_SYSTEM_CA_BUNDLE);
  if (dir?.readOnly && store?.readOnly && store.host === `${dir.host}/${TRUST_BUNDLE_FILE}`) return dir.host;
  const found = [...mounts].map(([guest, m]) => `${m.host} at ${guest} (${m.readOnly ? "ro" : "rw"})`).join(", ");
  anomalies.push(`trust mounts are not one read-only directory at ${GUEST_TRUST_DIR} with its ${TRUST_BUNDLE_FILE} at ${GUEST_SYSTEM_CA_BUNDLE}: found ${found}`);
  return undefined;
}

function readLabels(value: unknown, anomalies: string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const [key, raw] of Object.entries(asRecord(value) ?? {})) {
    const text = asString(raw);
    if (text === undefined) anomalies.push(`label ${key} has a non-string value`);
    else labels[key] = text;
  }
  return labels;
}

/** The VmSpec a sandbox's config describes, as far as it can be read. */
function readSpec(config: Record<string, unknown> | undefined, fallbackName: string, anomalies: string[]): VmSpec {
  if (!config) anomalies.push("inspect output has no config object");
  const resources = asRecord(config?.resources);
  const mounts = readMounts(config?.mounts, anomalies);
  const network = readNetworkPolicy(config?.network);
  anomalies.push(...network.anomalies);
  const secrets = readSecrets(config?.network);
  if (secrets === undefined) anomalies.push(`secrets not recognised: ${JSON.stringify(asRecord(config?.network)?.secrets)}`);
  const cpus = asNumber(resources?.cpus);
  const memoryMib = asNumber(resources?.memory_mib);
  if (cpus === undefined || memoryMib === undefined) anomalies.push(`resources not recognised: ${JSON.stringify(config?.resources)}`);
  const { [DISK_MIB_LABEL]: diskLabel, ...labels } = readLabels(config?.labels, anomalies);
  const diskMib = diskLabel === undefined ? undefined : Number(diskLabel);
  if (diskMib !== undefined && !Number.isSafeInteger(diskMib)) anomalies.push(`label ${DISK_MIB_LABEL} is not a whole number: ${JSON.stringify(diskLabel)}`);
  return {
    name: asString(config?.name) ?? fallbackName,
    image: readImage(config?.image, anomalies),
    cpus: cpus ?? 0,
    memoryMib: memoryMib ?? 0,
    mounts: mounts.mounts,
    tmpSizeMib: mounts.tmpSizeMib,
    volume: { name: mounts.volumeName },
    labels,
    network: network.policy,
    ...(diskMib === undefined ? {} : { diskMib }),
    ...(mounts.trustDir === undefined ? {} : { trustDir: mounts.trustDir }),
    ...(secrets === undefined || secrets.length === 0 ? {} : { tierPart: { kind: "microvm" as const, secrets } }),
  };
}

/** Parses the JSON object printed by `msb inspect NAME --format=json`. */
export function parseInspect(value: unknown, requestedName: string): MsbVmInfo {
  const anomalies: string[] = [];
  const top = asRecord(value);
  if (!top) anomalies.push("inspect output is not a JSON object");
  const name = asString(top?.name) ?? requestedName;
  if (name !== requestedName) anomalies.push(`inspect answered for "${name}", not "${requestedName}"`);
  const pending = asArray(top?.pending_changes);
  // Changes made with `msb modify` wait for a restart: the running VM does not match `config` yet.
  if (pending && pending.length > 0) anomalies.push(`config has ${pending.length} pending change(s) not applied to the running VM`);
  const spec = readSpec(asRecord(top?.config), name, anomalies);
  return { name, status: readStatus(top?.status, anomalies), spec, createdAt: readCreatedAt(top?.created_at), anomalies };
}

type ListEntry = { name: string; status: VmStatus };

/** Parses `msb list --format=json`: an array of {name, status, image, created_at}. Nameless entries are skipped. */
export function parseList(value: unknown): { entries: ListEntry[]; anomalies: string[] } {
  const anomalies: string[] = [];
  const items = asArray(value);
  if (!items) return { entries: [], anomalies: ["list output is not a JSON array"] };
  const entries: ListEntry[] = [];
  for (const item of items) {
    const name = asString(asRecord(item)?.name);
    if (name === undefined) {
      anomalies.push(`list entry without a name: ${JSON.stringify(item)}`);
      continue;
    }
    entries.push({ name, status: readStatus(asRecord(item)?.status, anomalies) });
  }
  return { entries, anomalies };
}
