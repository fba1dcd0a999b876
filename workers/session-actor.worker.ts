// Worker entry of a session actor: wires messages to the plain actor module, nothing else.
// The first message is an ActorInit (its VM name and driver config); requests that arrive while the driver
// is being built wait for it, in order. Everything this file imports is paid by every live actor: keep it
// to what an actor needs (docs/performance.md, "Manager memory per live actor").
import { createDriver } from "./create-driver";
import type { ActorEvent, ActorInit, ActorNotice, ActorRequest } from "./protocol";
import { createSessionActor, type SessionActor } from "./session-actor";

declare const self: Worker;

// A Worker dies on any uncaught exception; an actor must keep answering (style.md, sharp edges).
process.on("uncaughtException", (error) => console.error("session actor: uncaught", error));
process.on("unhandledRejection", (error) => console.error("session actor: unhandled rejection", error));

let bootedSinceCollect = false;

/**
 * Posts an actor event. A boot leaves garbage in this Worker (what the create path read and
 * built), and an actor that then only runs commands allocates too little for JSC to collect it soon: one
 * full collection after the command that booted the VM has answered, off that command's path.
 */
function post(event: ActorEvent, transfer?: ArrayBuffer[]): void {
  self.postMessage(event, transfer ?? []);
  if (event.type === "state" && event.state.status === "booting") bootedSinceCollect = true;
  else if (event.type === "reply" && bootedSinceCollect) {
    bootedSinceCollect = false;
    setImmediate(() => Bun.gc(true));
  }
}

let actor: Promise<SessionActor> | undefined;

async function start({ vmName, driver }: ActorInit): Promise<SessionActor> {
  const started = createSessionActor(await createDriver(driver), vmName, post);
  post({ type: "ready" });
  return started;
}

self.onmessage = (event: MessageEvent<ActorInit | ActorRequest | ActorNotice>) => {
  const message = event.data;
  if (!actor) {
    // Fail closed: an actor without a driver must die (its handle then rejects every call), not hang.
    const fail = (error: unknown): never => {
      console.error("session actor: cannot start", error);
      process.exit(1);
    };
    actor = message.type === "init" ? start(message).catch(fail) : fail(`got ${message.type} before init`);
    return;
  }
  if (message.type === "init") return;
  if (message.type === "output-taken") return void actor.then((ready) => ready.notice(message));
  void actor.then((ready) => ready.receive(message));
};
