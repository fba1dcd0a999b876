// Per-VM inotify limits, and the host limits they need. The kernel counts inotify instances and watches
// per user at *every* user-namespace level: a guest's count is charged in the VM's own user namespace and
// again, in the host's, to that namespace's creator — host root for every VM, since crun runs as root. So
// all VMs (and host root's own processes) share one host quota (fs.inotify.max_user_instances, 128 by
// default): one VM holding 125 instances left 3 to all the others. A limit in each VM's namespace caps
// what one VM can take; the host quota is raised to cover every VM's cap at once.
import { readFileSync, writeFileSync } from "node:fs";

/** Each VM's inotify limits; exported so the tests expect them inside a VM. */
export const VM_INOTIFY_INSTANCES = 128;
export const VM_INOTIFY_WATCHES = 65_536;
/**
 * The ceiling of the maxRunningVms setting (app/services/settings.ts): the host is sized for that many.
 * Exported so a test checks the host need against it.
 */
export const PLANNED_VMS = 256;
/** Kept for host root's own processes (systemd, the manager, an editor run as root). */
const HOST_RESERVE = { instances: 128, watches: 65_536 };
const HOST_FILES = { instances: "/proc/sys/fs/inotify/max_user_instances", watches: "/proc/sys/fs/inotify/max_user_watches" } as const;
const SYSCTL_NAMES = { instances: "fs.inotify.max_user_instances", watches: "fs.inotify.max_user_watches" } as const;

type InotifyLimits = { instances: number; watches: number };
export type OciHook = { path: string; args: string[]; env?: string[]; timeout?: number };

/**
 * What the host quota of root must be so that `vms` VMs can each use their whole per-VM limit.
 * Exported so a test checks it directly.
 */
export function hostInotifyNeed(vms = PLANNED_VMS): InotifyLimits {
  return { instances: vms * VM_INOTIFY_INSTANCES + HOST_RESERVE.instances, watches: vms * VM_INOTIFY_WATCHES + HOST_RESERVE.watches };
}

function readHostInotifyLimits(): InotifyLimits | undefined {
  try {
    return { instances: Number(readFileSync(HOST_FILES.instances, "utf8")), watches: Number(readFileSync(HOST_FILES.watches, "utf8")) };
  } catch {
    return undefined;
  }
}

/**
 * Raises (never lowers) the host's limits to `hostInotifyNeed()`; needs root. Best effort: returns what it
 * could not raise (e.g. a read-only /proc/sys), which the doctor then reports with the fix.
 */
export function raiseHostInotifyLimits(): string[] {
  const need = hostInotifyNeed();
  const have = readHostInotifyLimits();
  const failures: string[] = [];
  for (const key of ["instances", "watches"] as const) {
    if (have && have[key] >= need[key]) continue;
    try {
      writeFileSync(HOST_FILES[key], String(need[key]));
    } catch (error) {
      failures.push(`${SYSCTL_NAMES[key]}: ${(error as Error).message}`);
    }
  }
  return failures;
}

/** The doctor's check: are the host limits big enough for PLANNED_VMS VMs at their per-VM limits? */
export function inotifyHostCheck(have = readHostInotifyLimits()): { ok: boolean; detail: string; fix: string | null } {
  const need = hostInotifyNeed();
  if (!have) return { ok: false, detail: `cannot read ${HOST_FILES.instances}`, fix: "check that /proc is mounted" };
  const short = (["instances", "watches"] as const).filter((key) => have[key] < need[key]);
  const detail = `${SYSCTL_NAMES.instances}=${have.instances}, ${SYSCTL_NAMES.watches}=${have.watches}`;
  if (short.length === 0) return { ok: true, detail: `${detail} (each VM: ${VM_INOTIFY_INSTANCES} instances, ${VM_INOTIFY_WATCHES} watches)`, fix: null };
  const settings = short.map((key) => `${SYSCTL_NAMES[key]}=${need[key]}`);
  return {
    ok: false,
    detail: `${detail}: all VMs share host root's quota, so one VM can starve the others; ${PLANNED_VMS} VMs × the per-VM limit + host needs = ${settings.join(", ")}`,
    fix: `sysctl -w ${settings.join(" ")} (and put the same lines in /etc/sysctl.d/60-session-sandbox.conf); a manager started as root raises them itself`,
  };
}

/**
 * Sets the per-VM limits at VM start. crun 1.8.1 refuses `user.*` keys in `linux.sysctl` ("not namespaced").
 * A createContainer hook runs in the VM's namespaces while its init still waits, as the VM's root with the
 * capabilities it is about to drop, so it may write its own namespace's /proc/sys/user table; one `sh`, no
 * nsenter, so it costs a boot less than an nsenter would (it needs the bundle directory to be traversable by the
 * VM's uid: lifecycle.ts makes it 0711, with config.json 0600). The guest cannot raise them later: it has no
 * CAP_SYS_RESOURCE, and /proc/sys is read-only.
 */
export function vmInotifyHook(): OciHook {
  // crun writes the container's state to a hook's stdin and fails the boot on EPIPE ("writing to pipe:
  // Broken pipe") if the hook exits first: `read` takes it (one JSON line; read stops at EOF) before the writes.
  const write = `read -r _state; echo ${VM_INOTIFY_INSTANCES} > /proc/sys/user/max_inotify_instances && echo ${VM_INOTIFY_WATCHES} > /proc/sys/user/max_inotify_watches`;
  return { path: "/bin/sh", args: ["sh", "-c", write], env: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"], timeout: 10 };
}
