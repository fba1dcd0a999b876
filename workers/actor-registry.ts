// One actor per VM name, on demand. A crashed actor is replaced at once by a new one that rediscovers
// its VM from the runtime; an actor with no VM and no work is retired, so live Workers track active
// sessions, not every session ever seen.
import { ActorHandle, closeSpareWorker, keepSpareWorker, type ActorTransport, workerTransport } from "./actor-handle";
import type { ActorState, DriverConfig } from "./protocol";

type RegistryEvents = {
  state(state: ActorState): void;
  log(level: "info" | "warn", message: string, fields: Record<string, unknown>): void;
  crashed(vmName: string): void;
};

/** How an actor is started: in a Worker (the default), or on the calling thread in tests. */
export type OpenActor = (vmName: string, driver: DriverConfig) => ActorTransport;

export function createActorRegistry(driver: DriverConfig | undefined, events: RegistryEvents, openActor: OpenActor = workerTransport) {
  const actors = new Map<string, ActorHandle>();
  // Actors in Workers: one spare Worker waits, loaded, for the next new session (actor-handle.ts).
  const spares = driver !== undefined && openActor === workerTransport;
  if (spares) keepSpareWorker();

  function spawn(vmName: string): ActorHandle {
    if (!driver) throw new Error(`no sandbox runtime is usable; cannot manage VM ${vmName}`);
    const handle = new ActorHandle(vmName, openActor(vmName, driver), {
      onState: events.state,
      onLog: events.log,
      onIdle: (idle) => {
        if (actors.get(vmName) === idle) idle.retire();
      },
      onExit: (exited, crashed) => {
        if (actors.get(vmName) === exited) actors.delete(vmName);
        if (!crashed) return;
        events.crashed(vmName);
        // The VM may still run: a fresh actor finds out and reports, so the supervisor's view heals.
        void get(vmName).discover().catch(() => undefined);
      },
    });
    actors.set(vmName, handle);
    return handle;
  }

  function get(vmName: string): ActorHandle {
    return actors.get(vmName) ?? spawn(vmName);
  }

  return {
    get,
    /**
     * Starts the actor's Worker now, while its first command is still being prepared (its module load and
     * driver build overlap the preparation). It only discovers its VM, never boots one: a command
     * that is then refused leaves an actor with no VM and no call, which retires at that discover's reply.
     */
    warm(vmName: string): void {
      if (driver && !actors.has(vmName)) void spawn(vmName).discover().catch(() => undefined);
    },
    liveActors: () => actors.size,
    /** Kills an actor's Worker as a crash would (operators unsticking an actor; crash tests). */
    kill: (vmName: string) => actors.get(vmName)?.kill(),
    /** Ends every Worker (shutdown). VMs keep running; the next start adopts them. */
    closeAll(): void {
      if (spares) closeSpareWorker();
      for (const handle of [...actors.values()]) handle.retire();
    },
  };
}
