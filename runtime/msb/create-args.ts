// Builds the `msb create` argument vector for a VmSpec. Pure: the same spec always gives the same argv.
import { GUEST_SYSTEM_CA_BUNDLE, GUEST_TRUST_DIR, TRUST_BUNDLE_FILE, type BindMount, type VmSpec } from "../driver";
import { GUEST_HOME } from "../guest-layout";
import { buildNetworkArgs } from "./network-rules";
import { buildSecretArgs } from "./secret-args";
import { checkImage, checkLabel, checkMountPath, checkName, checkPositiveInteger, InvalidSpecError } from "./spec-checks";

export const TMP_GUEST_PATH = "/tmp";
/**
 * The spec's diskMib, kept as a label so it reads back and a change recreates the sandbox. msb does not
 * enforce it: see docs/runtime-msb.md ("Disk quota") for what msb 0.6.18's disk volumes would need.
 */
export const DISK_MIB_LABEL = "session-sandbox.disk-mib";

// Mount targets the driver owns; a bind mount there would shadow the tmpfs, the volume, the root or the trust files.
const RESERVED_GUEST_PATHS = new Set<string>(["/", TMP_GUEST_PATH, GUEST_HOME, GUEST_TRUST_DIR, GUEST_SYSTEM_CA_BUNDLE]);

function mountArgs(spec: VmSpec, sources: Map<BindMount, string>): string[] {
  const seen = new Set<string>();
  const args: string[] = [];
  for (const mount of spec.mounts) {
    const path = checkMountPath(mount.hostPath, "mount path");
    if (RESERVED_GUEST_PATHS.has(path)) throw new InvalidSpecError(`mount path "${path}" is reserved for the driver`);
    if (seen.has(path)) throw new InvalidSpecError(`mount path "${path}" is listed twice`);
    seen.add(path);
    // Identical path inside the guest: tools see the same absolute paths as on the host. A guarded
    // repository comes from its view (runtime/repo-fs), which applies the repository rules.
    const source = checkMountPath(sources.get(mount) ?? path, "mount source");
    args.push(`--mount-${mount.kind === "file" ? "file" : "dir"}=${source}:${path}${mount.readOnly ? ":ro" : ""}`);
  }
  return args;
}

/**
 * The trust directory, read-only at GUEST_TRUST_DIR, and its bundle over the system store. msb boots the
 * image itself, so the manager cannot see whether it has a store: the bundle is mounted there regardless.
 */
function trustArgs(spec: VmSpec): string[] {
  if (spec.trustDir === undefined) return [];
  const dir = checkMountPath(spec.trustDir, "trust directory");
  return [`--mount-dir=${dir}:${GUEST_TRUST_DIR}:ro`, `--mount-file=${dir}/${TRUST_BUNDLE_FILE}:${GUEST_SYSTEM_CA_BUNDLE}:ro`];
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
 * `msb create IMAGE --name=… --cpus=… --memory=…M [--mount-dir=P:P[:ro]]… [--mount-dir=TRUST:/run/session-sandbox:ro --mount-file=TRUST/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro] --tmpfs=/tmp:…M
 * --mount-named=VOLUME:/home/agent [--label=K=V]… NETWORK [--secret=ENV@HOST,HOST]… --quiet [--replace]`.
 * Every value uses the `--flag=value` form so no value can be taken for a flag.
 */
export function buildCreateArgs(spec: VmSpec, options: { replace?: boolean; sources?: Map<BindMount, string> } = {}): string[] {
  const args = [
    "create",
    checkImage(spec.image),
    `--name=${checkName(spec.name, "VM name")}`,
    `--cpus=${checkPositiveInteger(spec.cpus, "cpus")}`,
    // A bare number is MiB to msb too; the suffix makes the unit explicit in logs.
    `--memory=${checkPositiveInteger(spec.memoryMib, "memoryMib")}M`,
    ...mountArgs(spec, options.sources ?? new Map()),
    ...trustArgs(spec),
    `--tmpfs=${TMP_GUEST_PATH}:${checkPositiveInteger(spec.tmpSizeMib, "tmpSizeMib")}M`,
    // --mount-named creates the volume when missing; an existing one (and its data) is reused as is.
    `--mount-named=${checkName(spec.volume.name, "volume name")}:${GUEST_HOME}`,
    ...labelArgs(spec.diskMib === undefined ? spec.labels : { ...spec.labels, [DISK_MIB_LABEL]: String(checkPositiveInteger(spec.diskMib, "diskMib")) }),
    ...buildNetworkArgs(spec.network),
    ...buildSecretArgs(spec),
    "--quiet",
  ];
  if (options.replace) args.push("--replace");
  return args;
}
