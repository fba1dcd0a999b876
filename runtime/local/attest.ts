// Attestation on the embedded runtimes (crun, runsc): the driver stores the spec it booted verbatim, so
// every field must be equal, pinned identities included (a repository re-registered at the same path is
// another directory). Each mismatch names the field with both values, for the log of a recreate.
import { commonFieldMismatches, fieldMismatch } from "../attest-fields";
import { egressSocketOf, type Attestation, type BindMount, type VmInfo, type VmSpec } from "../driver";

function mountText(mount: BindMount): string {
  const pin = mount.pin ? ` pinned ${mount.pin.dev}:${mount.pin.ino}` : "";
  return `${mount.hostPath} (${mount.kind ?? "directory"}, ${mount.readOnly ? "ro" : "rw"}${pin})`;
}

function sortedEntries(record: Record<string, string>): string {
  return JSON.stringify(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)));
}

export function attestStoredSpec(expected: VmSpec, actual: VmInfo): Attestation {
  const have = actual.spec;
  const mismatches = [
    ...commonFieldMismatches(expected, actual),
    ...fieldMismatch("network", expected.network, have.network),
    ...fieldMismatch("egressSocket", egressSocketOf(expected), egressSocketOf(have)),
    ...fieldMismatch("docker", expected.docker === true, have.docker === true),
  ];
  const want = new Set(expected.mounts.map(mountText));
  const found = new Set(have.mounts.map(mountText));
  for (const mount of want) if (!found.has(mount)) mismatches.push(`mount missing: ${mount}`);
  for (const mount of found) if (!want.has(mount)) mismatches.push(`unexpected mount: ${mount}`);
  if (sortedEntries(expected.labels) !== sortedEntries(have.labels)) mismatches.push(...fieldMismatch("labels", expected.labels, have.labels));
  return mismatches.length === 0 ? { ok: true } : { ok: false, mismatches };
}
