// Keeps each root's last stop or removal in the database, so "why did my sandbox stop" has an answer.
import type { Services } from "../services/index";
import type { EventBus } from "./event-bus";

export function recordStops(events: EventBus, services: Pick<Services, "sessions" | "vmStops">): void {
  const stop = new AbortController();
  void (async () => {
    for await (const event of events.subscribe(stop.signal)) {
      if (event.type !== "vm" || !event.rootSessionID) continue;
      if (event.status !== "stopped" && event.status !== "evicted" && event.status !== "removed") continue;
      // A deleted session has no row to annotate; its history goes with it.
      if (event.reason === "deleted") continue;
      try {
        services.sessions.require(event.rootSessionID);
        services.vmStops.record(event.rootSessionID, { vmName: event.vmName, status: event.status, reason: event.reason, at: event.at });
      } catch {
        // the session is gone
      }
    }
  })();
}
