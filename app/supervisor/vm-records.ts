// The supervisor's view of every VM it knows: status from its actor, use times from the main thread.
import type { VmSpec } from "../../runtime/driver";
import type { StopReason, VmStatus } from "../../workers/protocol";

export type VmRecord = {
  vmName: string;
  rootSessionID: string | null;
  status: VmStatus;
  spec: VmSpec | null;
  createdAt: number | null;
  lastUsedAt: number;
  /** Commands admitted and not yet finished (queued behind a boot, or running). */
  activeExecs: number;
  /** Commands waiting for admission (an eviction in progress): the record must outlive them. */
  waitingExecs: number;
  lastStopReason: StopReason | null;
  /** Found at startup and not used since: the sweep removes it with reason "sweep". */
  adopted: boolean;
  evicting: boolean;
};

// "removing" holds too: the VM still runs until its removal completes.
const HOLDING: ReadonlySet<VmStatus> = new Set(["booting", "running", "stopping", "removing"]);

/** Whether a VM takes one of the cap's places: it runs (or is on its way up or down), or a command waits for it. */
export function holdsSlot(record: VmRecord): boolean {
  return record.activeExecs > 0 || HOLDING.has(record.status);
}

export function newRecord(vmName: string, rootSessionID: string | null, now: number): VmRecord {
  return {
    vmName,
    rootSessionID,
    status: "absent",
    spec: null,
    createdAt: null,
    lastUsedAt: now,
    activeExecs: 0,
    waitingExecs: 0,
    lastStopReason: null,
    adopted: false,
    evicting: false,
  };
}
