// Worker entry of a session actor: wires messages to the plain actor module, nothing else.
// workerData: { vmName, driver: DriverConfig }.
import { workerData } from "node:worker_threads";
import { createDriver } from "./create-driver";
import type { ActorEvent, ActorRequest, DriverConfig } from "./protocol";
import { createSessionActor } from "./session-actor";

declare const self: Worker;

// A Worker dies on any uncaught exception; an actor must keep answering (style.md, sharp edges).
process.on("uncaughtException", (error) => console.error("session actor: uncaught", error));
process.on("unhandledRejection", (error) => console.error("session actor: unhandled rejection", error));

const { vmName, driver: driverConfig } = workerData as { vmName: string; driver: DriverConfig };
const post = (event: ActorEvent) => self.postMessage(event);
const actor = createSessionActor(await createDriver(driverConfig), vmName, post);

self.onmessage = (event: MessageEvent<ActorRequest>) => void actor.receive(event.data);
post({ type: "ready" });
