// Builds the argument vectors of msb's lifecycle and query commands. Pure functions.
// None passes --quiet: on start/rm/ping msb's -q also hides the error text the driver classifies.
import { checkLabel, checkName } from "./spec-checks";

/** Seconds msb waits for a graceful guest shutdown before it kills the VM. */
export const STOP_GRACE_SECONDS = 10;

/** `msb start NAME`. */
export function buildStartArgs(name: string): string[] {
  return ["start", checkName(name, "VM name")];
}

/** `msb stop NAME --timeout=SECONDS` (msb's -t takes an integer number of seconds). */
export function buildStopArgs(name: string, options: { force?: boolean } = {}): string[] {
  const args = ["stop", checkName(name, "VM name")];
  args.push(options.force ? "--force" : `--timeout=${STOP_GRACE_SECONDS}`);
  return args;
}

/** `msb remove NAME --force`: stops a running sandbox first. Named volumes are not touched. */
export function buildRemoveArgs(name: string): string[] {
  return ["remove", checkName(name, "VM name"), "--force"];
}

/** `msb volume remove VOLUME`. */
export function buildVolumeRemoveArgs(volume: string): string[] {
  return ["volume", "remove", checkName(volume, "volume name")];
}

/** `msb list --format=json [--label=K=V]…` (labels are AND-matched by msb). */
export function buildListArgs(labels: Record<string, string> = {}): string[] {
  const labelArgs = Object.keys(labels)
    .sort()
    .map((key) => {
      const value = labels[key] ?? "";
      checkLabel(key, value);
      return `--label=${key}=${value}`;
    });
  return ["list", "--format=json", ...labelArgs];
}

/** `msb inspect NAME --format=json`. */
export function buildInspectArgs(name: string): string[] {
  return ["inspect", checkName(name, "VM name"), "--format=json"];
}

/** `msb list --quiet`: touches msb's state database, so it proves more than `--version`. */
export function buildPingArgs(): string[] {
  return ["list", "--quiet"];
}

/** `msb --version`, printing `msb X.Y.Z`. */
export function buildVersionArgs(): string[] {
  return ["--version"];
}

/** `msb doctor`: msb's own check of KVM and CPU virtualisation. */
export function buildDoctorArgs(): string[] {
  return ["doctor"];
}
