// Attestation on the embedded runtimes (crun, runsc): the driver stores the spec it booted verbatim, so
// every field must be equal, pinned identities included (a repository re-registered at the same path is
// another directory). Each mismatch names the field with both values, for the log of a recreate.
import type { Attestation, BindMount, VmInfo, VmSpec } from "../driver";

function mountText(mount: BindMount): string {
  const pin = mount.pin ? ` pinned ${mount.pin.dev}:${mount.pin.ino}` : "";
  return `${mount.hostPath} (${mount.kind ?? "directory"}, ${mount.readOnly ? "ro" : "rw"}${pin})`;
}

function sortedEntries(record: Record<string, string>): string {
  return JSON.stringify(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)));
}

export function attestStoredSpec(expected: VmSpec, actual: VmInfo): Attestation {
  const mismatches: string[] = [];
  const have = actual.spec;
  const field = (what: string, want: unknown, found: unknown) => {
    const [w, f] = [JSON.stringify(want), JSON.stringify(found)];
    if (w !== f) mismatches.push(`${what}: expected ${w ?? "none"}, found ${f ?? "none"}`);
  };
  field("name", expected.name, actual.name);
  field("image", expected.image, have.image);
  field("cpus", expected.cpus, have.cpus);
  field("memoryMib", expected.memoryMib, have.memoryMib);
  field("tmpSizeMib", expected.tmpSizeMib, have.tmpSizeMib);
  field("diskMib", expected.diskMib, have.diskMib);
  field("volume", expected.volume.name, have.volume.name);
  field("network", expected.network, have.network);
  field("egressSocket", expected.egressSocket, have.egressSocket);
  field("trustDir", expected.trustDir, have.trustDir);
  const want = new Set(expected.mounts.map(mountText));
  const found = new Set(have.mounts.map(mountText));
  for (const mount of want) if (!found.has(mount)) mismatches.push(`mount missing: ${mount}`);
  for (const mount of found) if (!want.has(mount)) mismatches.push(`unexpected mount: ${mount}`);
  if (sortedEntries(expected.labels) !== sortedEntries(have.labels)) field("labels", expected.labels, have.labels);
  return mismatches.length === 0 ? { ok: true } : { ok: false, mismatches };
}
