// The session actor's Worker entry with a real Worker and the real local driver config: its init message
// (the config no longer comes as workerData) and its fail-closed start. No VM is booted here; booting
// actors in Workers: test/actors/*.test.ts.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ActorCallError, ActorHandle, closeSpareWorker, keepSpareWorker, spareWorkers, workerTransport } from "../../workers/actor-handle";
import type { ActorState, DriverConfig } from "../../workers/protocol";

const stateRoot = mkdtempSync(join(tmpdir(), "ss-actor-worker-"));
afterAll(() => {
  closeSpareWorker();
  rmSync(stateRoot, { recursive: true, force: true });
});

/** An actor Worker for `driver`, with what its handle reports. */
function open(vmName: string, driver: DriverConfig) {
  const states: ActorState[] = [];
  const exits: boolean[] = [];
  const exited = Promise.withResolvers<void>();
  const handle = new ActorHandle(vmName, workerTransport(vmName, driver), {
    onState: (state) => states.push(state),
    onLog() {},
    onIdle() {},
    onExit: (_handle, crashed) => {
      exits.push(crashed);
      exited.resolve();
    },
  });
  return { handle, states, exits, exited: exited.promise };
}

describe("session actor Worker", () => {
  test("requests posted right after the Worker starts → answered once its driver is built, in order", async () => {
    const { handle, states } = open("ocm-session-worker000001", { kind: "local", stateDir: join(stateRoot, "ok") });
    const answers = await Promise.all([handle.discover(), handle.stop("manual", true), handle.discover()]);
    expect(answers.map((state) => state.status)).toEqual(["absent", "absent", "absent"]);
    expect(states.every((state) => state.vmName === "ocm-session-worker000001")).toBe(true);
    handle.retire();
  });

  test("its driver cannot be built → the Worker exits and every call fails at once with ACTOR_CRASHED (fail closed)", async () => {
    // A state dir under /proc cannot be created: createLocalDriver throws inside the Worker.
    const { handle, exits, exited } = open("ocm-session-worker000002", { kind: "local", stateDir: "/proc/no-such-dir/state" });
    const error = await handle.discover().catch((e: unknown) => e);
    await exited;
    expect(error).toBeInstanceOf(ActorCallError);
    expect((error as ActorCallError).record.code).toBe("ACTOR_CRASHED");
    expect(exits).toEqual([true]);
    const later = await handle.discover().catch((e: unknown) => e);
    expect((later as ActorCallError).record.code).toBe("ACTOR_CRASHED");
  });

  test("a spare Worker kept ready (the manager's registry) → the next actor claims it and answers as any actor; a new spare follows; closing ends it", async () => {
    keepSpareWorker();
    expect(spareWorkers()).toBe(1);
    const { handle, states } = open("ocm-session-worker000003", { kind: "local", stateDir: join(stateRoot, "spare") });
    expect(spareWorkers()).toBe(0);
    expect((await handle.discover()).status).toBe("absent");
    expect(states.every((state) => state.vmName === "ocm-session-worker000003")).toBe(true);
    while (spareWorkers() === 0) await Bun.sleep(10); // refilled a moment after the claim
    handle.retire();
    closeSpareWorker();
    expect(spareWorkers()).toBe(0);
  });

  test("a claimed spare whose driver cannot be built → it exits and every call fails at once with ACTOR_CRASHED (fail closed)", async () => {
    keepSpareWorker();
    const { handle, exits, exited } = open("ocm-session-worker000004", { kind: "local", stateDir: "/proc/no-such-dir/state" });
    const error = await handle.discover().catch((e: unknown) => e);
    await exited;
    expect((error as ActorCallError).record.code).toBe("ACTOR_CRASHED");
    expect(exits).toEqual([true]);
    closeSpareWorker();
  });
});
