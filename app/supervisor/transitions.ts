// Turns actors' status changes into events and metrics: booting, running, stopped or evicted (with the
// reason), removed (with the reason), and actor crashes. Boot duration is timed from booting to running.
import type { ActorState, StopReason, VmStatus } from "../../workers/protocol";
import type { EventBus, VmEventStatus } from "../events/event-bus";
import type { Metrics } from "../metrics";
import type { VmRecord } from "./vm-records";

export function createTransitionReporter(events: EventBus, metrics: () => Metrics | undefined, now: () => number) {
  const bootStartedAt = new Map<string, number>();

  function publish(vmName: string, rootSessionID: string | null, status: VmEventStatus, reason: StopReason | null): void {
    events.publish({ type: "vm", vmName, rootSessionID, status, reason, at: now() });
  }

  function transition(record: VmRecord, previous: VmStatus, state: ActorState): void {
    if (state.status === previous) return;
    const m = metrics();
    if (state.status === "booting") {
      bootStartedAt.set(record.vmName, performance.now());
      publish(record.vmName, record.rootSessionID, "booting", state.lastStopReason === "spec-change" ? "spec-change" : null);
    } else if (state.status === "running") {
      const started = bootStartedAt.get(record.vmName);
      bootStartedAt.delete(record.vmName);
      if (started !== undefined) {
        m?.boots.inc();
        m?.bootDuration.observe((performance.now() - started) / 1000);
      }
      publish(record.vmName, record.rootSessionID, "running", null);
    } else if (state.status === "stopped" && previous === "stopping") {
      const evicted = state.lastStopReason === "cap";
      if (evicted) m?.evictions.inc();
      publish(record.vmName, record.rootSessionID, evicted ? "evicted" : "stopped", state.lastStopReason);
    } else if (state.status === "absent" && previous === "removing") {
      m?.removals.inc({ reason: state.lastStopReason ?? "unknown" });
      publish(record.vmName, record.rootSessionID, "removed", state.lastStopReason);
    }
  }

  return {
    transition,
    crashed: (vmName: string, rootSessionID: string | null) => publish(vmName, rootSessionID, "actor-crashed", "crash"),
  };
}
