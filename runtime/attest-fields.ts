// What every driver's attestation compares the same way: the spec fields a runtime keeps as given, each
// mismatch naming the field with both values (for the log line of a recreate).
import type { VmInfo, VmSpec } from "./driver";

/** One mismatch line when `want` and `found` differ (compared as JSON, so objects compare by value). */
export function fieldMismatch(what: string, want: unknown, found: unknown): string[] {
  const [w, f] = [JSON.stringify(want), JSON.stringify(found)];
  return w === f ? [] : [`${what}: expected ${w}, found ${f}`];
}

/** Name, image, resources, tmpfs, disk quota, volume and trust directory. */
export function commonFieldMismatches(expected: VmSpec, actual: VmInfo): string[] {
  const have = actual.spec;
  return [
    ...fieldMismatch("name", expected.name, actual.name),
    ...fieldMismatch("image", expected.image, have.image),
    ...fieldMismatch("cpus", expected.cpus, have.cpus),
    ...fieldMismatch("memoryMib", expected.memoryMib, have.memoryMib),
    ...fieldMismatch("tmpSizeMib", expected.tmpSizeMib, have.tmpSizeMib),
    ...fieldMismatch("diskMib", expected.diskMib, have.diskMib),
    ...fieldMismatch("volume", expected.volume.name, have.volume.name),
    ...fieldMismatch("trustDir", expected.trustDir, have.trustDir),
  ];
}
