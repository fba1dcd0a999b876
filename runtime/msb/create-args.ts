// Builds the `msb create` argument vector for a VmSpec. Pure: the same spec always gives the same argv.
import { GUEST_CA_BUNDLE, GUEST_SYSTEM_CA_BUNDLE, type VmSpec } from "../driver";
import { buildNetworkArgs } from "./network-rules";
import { checkImage, checkLabel, checkMountPath, checkName, checkPositiveInteger, InvalidSpecError } from "./spec-checks";

/** Where the persistent data volume is mounted (HOME of the guest user). */
export const VOLUME_GUEST_PATH = "/home/agent";
export const TMP_GUEST_PATH = "/tmp";
/**
 * The spec's diskMib, kept as a label so it reads back and a change recreates the sandbox. msb does not
 * enforce it: see docs/runtime-msb.md ("Disk quota") for what msb 0.6.18's disk volumes would need.
 */
export const DISK_MIB_LABEL = "session-sandbox.disk-mib";

/** Where the CA bundle (VmSpec.caBundle) appears: the path the exec env names, and the system store. */
export const CA_GUEST_PATHS = [GUEST_CA_BUNDLE, GUEST_SYSTEM_CA_BUNDLE] as const;

// Mount targets the driver owns; a bind mount there would shadow the tmpfs, the volume, the root or the CA bundle.
const RESERVED_GUEST_PATHS = new Set<string>(["/", TMP_GUEST_PATH, VOLUME_GUEST_PATH, ...CA_GUEST_PATHS]);

function mountArgs(spec: VmSpec): string[] {
  const seen = new Set<string>();
  const args: string[] = [];
  for (const mount of spec.mounts) {
    const path = checkMountPath(mount.hostPath, "mount path");
    if (RESERVED_GUEST_PATHS.has(path)) throw new InvalidSpecError(`mount path "${path}" is reserved for the driver`);
    if (seen.has(path)) throw new InvalidSpecError(`mount path "${path}" is listed twice`);
    seen.add(path);
    // Identical path inside the guest: tools see the same absolute paths as on the host.
    args.push(`--mount-${mount.kind === "file" ? "file" : "dir"}=${path}:${path}${mount.readOnly ? ":ro" : ""}`);
  }
  return args;
}

/** The CA bundle as read-only file mounts. msb boots the image itself, so it is mounted at both paths unconditionally. */
function caBundleArgs(spec: VmSpec): string[] {
  if (spec.caBundle === undefined) return [];
  const host = checkMountPath(spec.caBundle, "CA bundle");
  return CA_GUEST_PATHS.map((guest) => `--mount-file=${host}:${guest}:ro`);
}

function labelArgs(labels: Record<string, string>): string[] {
  return Object.keys(labels)
    .sort()
    .map((key) => {
      const value = labels[key] ?? "";
      checkLabel(key, value);
      return `--label=${key}=${value}`;
    });
}

/**
 * `msb create IMAGE --name=… --cpus=… --memory=…M [--mount-dir=P:P[:ro]]… [--mount-file=CA:G:ro]… --tmpfs=/tmp:…M
 * --mount-named=VOLUME:/home/agent [--label=K=V]… NETWORK --quiet [--replace]`.
 * Every value uses the `--flag=value` form so no value can be taken for a flag.
 */
export function buildCreateArgs(spec: VmSpec, options: { replace?: boolean } = {}): string[] {
  const args = [
    "create",
    checkImage(spec.image),
    `--name=${checkName(spec.name, "VM name")}`,
    `--cpus=${checkPositiveInteger(spec.cpus, "cpus")}`,
    // A bare number is MiB to msb too; the suffix makes the unit explicit in logs.
    `--memory=${checkPositiveInteger(spec.memoryMib, "memoryMib")}M`,
    ...mountArgs(spec),
    ...caBundleArgs(spec),
    `--tmpfs=${TMP_GUEST_PATH}:${checkPositiveInteger(spec.tmpSizeMib, "tmpSizeMib")}M`,
    // --mount-named creates the volume when missing; an existing one (and its data) is reused as is.
    `--mount-named=${checkName(spec.volume.name, "volume name")}:${VOLUME_GUEST_PATH}`,
    ...labelArgs(spec.diskMib === undefined ? spec.labels : { ...spec.labels, [DISK_MIB_LABEL]: String(checkPositiveInteger(spec.diskMib, "diskMib")) }),
    ...buildNetworkArgs(spec.network),
    "--quiet",
  ];
  if (options.replace) args.push("--replace");
  return args;
}
