// Runs a session actor on the calling thread behind the same ActorTransport a Worker gives, so the
// actor, the registry and the supervisor can be driven as plain modules (tests with an in-memory driver).
// Events are delivered on a microtask, as a Worker's messages arrive on a later turn. `terminate` stops
// delivery and reports the death like a Worker's close; unlike a Worker, work the actor already started
// in its driver runs on (nothing can stop a promise), but nothing it says is heard any more.
import type { RuntimeDriver } from "../runtime/driver";
import type { ActorTransport } from "./actor-handle";
import type { ActorEvent } from "./protocol";
import { createSessionActor } from "./session-actor";

export function inProcessTransport(driver: RuntimeDriver, vmName: string): ActorTransport {
  let alive = true;
  let onEvent: (event: ActorEvent) => void = () => {};
  let onDeath: (message: string) => void = () => {};
  const actor = createSessionActor(driver, vmName, (event) => queueMicrotask(() => alive && onEvent(event)));
  return {
    post: (message) => {
      if (!alive) return;
      if (message.type === "output-taken") actor.notice(message);
      else void actor.receive(message);
    },
    listen(eventListener, deathListener) {
      onEvent = eventListener;
      onDeath = deathListener;
    },
    terminate() {
      if (!alive) return;
      alive = false;
      queueMicrotask(() => onDeath(`session actor for ${vmName} exited`));
    },
  };
}
