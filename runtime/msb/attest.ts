// Attestation before reuse: an existing sandbox is reused only if what msb holds matches the VmSpec
// the caller expects (image, resources, mounts, tmpfs, volume, trust directory, labels, network); otherwise recreate.
import { commonFieldMismatches, fieldMismatch } from "../attest-fields";
import { microvmSecretsOf, type Attestation, type VmInfo, type VmSpec } from "../driver";
import { canonicalPolicy } from "./network-rules";
import { secretKeys } from "./secret-args";

function mountKey(mount: { hostPath: string; readOnly?: boolean }): string {
  return `${mount.hostPath} (${mount.readOnly ? "ro" : "rw"})`;
}

function policyText(policy: VmSpec["network"]): string {
  try {
    return canonicalPolicy(policy);
  } catch (error) {
    return `invalid policy: ${(error as Error).message}`;
  }
}

function compareMounts(expected: VmSpec, actual: VmSpec, mismatches: string[]): void {
  const want = new Set(expected.mounts.map(mountKey));
  const have = new Set(actual.mounts.map(mountKey));
  for (const key of want) if (!have.has(key)) mismatches.push(`mount missing: ${key}`);
  for (const key of have) if (!want.has(key)) mismatches.push(`unexpected mount: ${key}`);
}

/**
 * Labels: every expected label must be present with its value. Extra labels are allowed because msb
 * merges an OCI image's own labels into the sandbox's (image labels are the base).
 */
function compareLabels(expected: VmSpec, actual: VmSpec, mismatches: string[]): void {
  for (const [key, value] of Object.entries(expected.labels)) {
    if (actual.labels[key] !== value) mismatches.push(`label ${key}: expected ${JSON.stringify(value)}, found ${JSON.stringify(actual.labels[key] ?? null)}`);
  }
}

/** Compares the expected spec with what the runtime reports. `anomalies` (unreadable output) always fail. */
export function attest(expected: VmSpec, actual: VmInfo & { anomalies?: string[] }): Attestation {
  const have = actual.spec;
  const mismatches = commonFieldMismatches(expected, actual);
  compareMounts(expected, have, mismatches);
  compareLabels(expected, have, mismatches);
  mismatches.push(...fieldMismatch("network", policyText(expected.network), policyText(have.network)));
  // Names and hosts only: msb stores a reference to the host env variable, never the value.
  mismatches.push(...fieldMismatch("secrets", secretKeys(microvmSecretsOf(expected)).join(" "), secretKeys(microvmSecretsOf(have)).join(" ")));
  for (const anomaly of actual.anomalies ?? []) mismatches.push(`unreadable: ${anomaly}`);
  return mismatches.length === 0 ? { ok: true } : { ok: false, mismatches };
}
