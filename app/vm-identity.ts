// How the manager names and marks its VMs: the name the design fixes for each root session, and the
// labels that say a VM is this manager's and whose it is (read back by recovery and the supervisor
// after a restart, when the name alone cannot be turned back into a session).
import { createHash } from "node:crypto";

const VM_NAME_PREFIX = "ocm-session-";
/** Every VM of this manager carries it (value "1"); recovery lists the runtime's VMs by it. */
const MANAGED_LABEL = "session-sandbox";
/** The root session a VM belongs to. */
export const ROOT_LABEL = "session-sandbox.root";

/** `ocm-session-` + the first 12 hex chars of sha256(rootSessionID). */
export function vmNameFor(rootSessionID: string): string {
  return `${VM_NAME_PREFIX}${createHash("sha256").update(rootSessionID).digest("hex").slice(0, 12)}`;
}

/** Whether a name is shaped like one of the manager's VMs (a CLI target may be a VM or a session). */
export const isVmName = (name: string): boolean => name.startsWith(VM_NAME_PREFIX);

/** The labels that select every VM of this manager. */
export const MANAGED_LABELS: Readonly<Record<string, string>> = { [MANAGED_LABEL]: "1" };

/** The labels of a root session's VM. */
export function vmLabelsFor(rootSessionID: string): Record<string, string> {
  return { ...MANAGED_LABELS, [ROOT_LABEL]: rootSessionID };
}
