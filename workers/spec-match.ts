// Whether a VM's actual spec matches the one a command needs: any difference means recreate.
import type { VmSpec } from "../runtime/driver";

/** `withPins`: compare the pinned identities too (a re-registered repository at the same path is another directory). */
function canonical(spec: VmSpec, withPins: boolean): string {
  const mounts = [...spec.mounts]
    .map((m) => ({ hostPath: m.hostPath, readOnly: m.readOnly ?? false, kind: m.kind ?? "directory", pin: withPins ? (m.pin ?? null) : null }))
    .sort((a, b) => a.hostPath.localeCompare(b.hostPath));
  const labels = Object.fromEntries(Object.entries(spec.labels).sort(([a], [b]) => a.localeCompare(b)));
  return JSON.stringify({ ...spec, mounts, labels });
}

export function specsMatch(actual: VmSpec | null, expected: VmSpec): boolean {
  if (actual === null) return false;
  // A runtime that does not report pins back (msb's inspect) is compared without them.
  const withPins = actual.mounts.some((m) => m.pin !== undefined);
  return canonical(actual, withPins) === canonical(expected, withPins);
}
