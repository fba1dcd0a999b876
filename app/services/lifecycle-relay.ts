// What the session services report (lifecycle-events.ts), handed to whoever reacts to it. The services
// are built first and report through `notify`; the parts that react (the supervisor's removals, egress
// revocation, the event bus) are built after them from the services, and subscribe in the order they
// must hear each event.
import type { LifecycleEvent, Notify } from "./lifecycle-events";

export function createLifecycleRelay() {
  const handlers: Notify[] = [];
  return {
    notify: ((event: LifecycleEvent) => {
      for (const handler of handlers) handler(event);
    }) satisfies Notify,
    on(handler: Notify): void {
      handlers.push(handler);
    },
  };
}
