// Whether a VM's actual spec matches the one a command needs: any difference means recreate.
import type { VmSpec } from "../runtime/driver";

function canonical(spec: VmSpec): string {
  const mounts = [...spec.mounts].map((m) => ({ hostPath: m.hostPath, readOnly: m.readOnly ?? false })).sort((a, b) => a.hostPath.localeCompare(b.hostPath));
  const labels = Object.fromEntries(Object.entries(spec.labels).sort(([a], [b]) => a.localeCompare(b)));
  return JSON.stringify({ ...spec, mounts, labels });
}

export function specsMatch(actual: VmSpec | null, expected: VmSpec): boolean {
  return actual !== null && canonical(actual) === canonical(expected);
}
