// The runsc the gvisor tier needs: Debian's 0.0~20240729 (trixie) or newer. Bookworm's 0.0~20221219 turns
// no Ctrl-C into SIGINT and cannot hold a Docker Engine (no devices cgroup, no PR_SET_CHILD_SUBREAPER for
// runc); the tier is tested only with the newer one. scripts/lib/runsc-install.sh installs it, and names
// the same minimum (test/runtime/gvisor-units.test.ts checks they agree).

export const RUNSC_MIN_VERSION = "0.0~20240729";

/** The date in a runsc version (`0.0~20240729.0` → 20240729); undefined for a version without one. */
export function runscVersionDate(version: string): number | undefined {
  const date = /~(\d{8})/.exec(version)?.[1];
  return date === undefined ? undefined : Number(date);
}

/** Why this runsc version is too old for the tier, or undefined when it will do (an undated build counts as new: built from source). */
export function runscTooOld(version: string): string | undefined {
  const date = runscVersionDate(version);
  const minimum = runscVersionDate(RUNSC_MIN_VERSION)!;
  if (date === undefined || date >= minimum) return undefined;
  return `runsc ${version} is older than ${RUNSC_MIN_VERSION}, the oldest the gvisor tier runs on (older ones turn no Ctrl-C into a signal and cannot hold Docker)`;
}
