// Turns what the session services report (app/services/lifecycle-events.ts) into events on the bus:
// sessions registered and deleted, sandboxes toggled, settings changed. The rest is for the VM side only.
import type { LifecycleEvent } from "../services/lifecycle-events";
import type { EventBus } from "./event-bus";

export function publishLifecycle(events: EventBus, event: LifecycleEvent, at: number): void {
  switch (event.type) {
    case "session-registered": {
      const { id, parentID, forkOf, directory, rootSessionID } = event.session;
      events.publish({ type: "session", phase: "registered", sessionID: id, parentID, forkOf, rootSessionID, directory, at });
      return;
    }
    case "sessions-deleted":
      for (const sessionID of event.sessionIds) events.publish({ type: "session", phase: "deleted", sessionID, at });
      return;
    case "sandbox-toggled":
      events.publish({ type: "sandbox", rootSessionID: event.rootSessionID, sandboxed: event.sandboxed, at });
      return;
    case "settings-changed":
      events.publish({ type: "settings", keys: event.keys, at });
      return;
  }
}
