// The session actor as a plain module, over the in-memory FAKE driver (test/workers/memory-driver.ts):
// its lifecycle steps, their order against commands, and what it replies, with no Worker and no sleeps.
// The same actor against the real runtime: test/actors/*.test.ts.
import { describe, expect, test } from "bun:test";
import { RuntimeError } from "../../runtime/driver";
import type { ActorEvent, ActorRequest, ErrorRecord, ExecCommand, ExecOutcome } from "../../workers/protocol";
import { createSessionActor } from "../../workers/session-actor";
import { createMemoryDriver, memorySpec, type MemoryDriver } from "./memory-driver";

const NAME = "ocm-session-actor0000001";
const command = (...argv: string[]): ExecCommand => ({ argv, cwd: "/", env: {}, timeoutMs: 60_000 });

/** An actor with a recorder of everything it emits, and calls that resolve with its reply. */
function harness(driver: MemoryDriver = createMemoryDriver()) {
  const events: ActorEvent[] = [];
  const waiters = new Map<number, (event: Extract<ActorEvent, { type: "reply" }>) => void>();
  const started = new Map<number, () => void>();
  const actor = createSessionActor(driver, NAME, (event) => {
    events.push(event);
    if (event.type === "reply") waiters.get(event.id)?.(event);
    if (event.type === "exec-started") started.get(event.id)?.();
  });
  let nextId = 1;
  async function call(request: Omit<ActorRequest, "id"> & Record<string, unknown>): Promise<unknown> {
    const id = (request.id as number | undefined) ?? nextId++;
    const reply = new Promise<Extract<ActorEvent, { type: "reply" }>>((resolve) => waiters.set(id, resolve));
    void actor.receive({ ...request, id } as ActorRequest);
    const answer = await reply;
    if (answer.ok) return answer.value;
    throw answer.error;
  }
  /** Sends an exec; `running` resolves once the command was handed to the driver. */
  function exec(spec = memorySpec(NAME), cmd = command("echo", "hi")) {
    const id = nextId++;
    const running = new Promise<void>((resolve) => started.set(id, resolve));
    const done = call({ type: "exec", id, spec, command: cmd }) as Promise<ExecOutcome>;
    return { id, running, done };
  }
  const output = (id: number) =>
    events
      .filter((e): e is Extract<ActorEvent, { type: "chunk" }> => e.type === "chunk" && e.id === id)
      .map((e) => new TextDecoder().decode(e.data))
      .join("");
  return { driver, events, actor, call, exec, output };
}

describe("session actor (plain module, in-memory fake driver)", () => {
  test("first command → VM created; the next with the same spec → run at once, no lifecycle call", async () => {
    const h = harness();
    const first = h.exec();
    expect(await first.done).toEqual({ exitCode: 0, timedOut: false, cancelled: false, oomKilled: false });
    expect(h.output(first.id)).toBe("echo hi");
    const second = h.exec(memorySpec(NAME), command("echo", "again"));
    await second.done;
    expect(h.driver.calls).toEqual([`create ${NAME}`]);
    expect(h.actor.state().status).toBe("running");
  });

  test("a changed spec while a command runs → the recreate waits for it, keeps the volume, logs each mismatch", async () => {
    const h = harness();
    await h.exec(memorySpec(NAME), command("write", "k", "kept")).done;
    const busy = h.exec(memorySpec(NAME), command("block"));
    await busy.running;
    const changed = h.exec(memorySpec(NAME, { memoryMib: 512 }), command("read", "k"));
    // Nothing replaced the VM under the running command.
    await Promise.resolve();
    expect(h.driver.calls).toEqual([`create ${NAME}`]);
    h.driver.release();
    expect((await busy.done).exitCode).toBe(0);
    await changed.done;
    expect(h.output(changed.id)).toBe("kept");
    expect(h.driver.calls).toEqual([`create ${NAME}`, `create ${NAME} replace`]);
    const log = h.events.find((e) => e.type === "log");
    expect(log).toMatchObject({ type: "log", message: "VM recreated: its spec changed", fields: { vmName: NAME, mismatches: ["memoryMib: expected 512, found 256"] } });
    expect(h.actor.state().lastStopReason).toBe("spec-change");
  });

  test("stopped VM with the same spec → started, not recreated; stop only-if-idle while busy → BUSY", async () => {
    const h = harness();
    await h.exec().done;
    await h.call({ type: "stop", reason: "idle", onlyIfIdle: true });
    expect(h.actor.state()).toMatchObject({ status: "stopped", lastStopReason: "idle" });
    await h.exec().done;
    expect(h.driver.calls).toEqual([`create ${NAME}`, `stop ${NAME}`, `start ${NAME}`]);
    const busy = h.exec(memorySpec(NAME), command("block"));
    await busy.running;
    const refused = (await h.call({ type: "stop", reason: "cap", onlyIfIdle: true }).catch((e) => e)) as ErrorRecord;
    expect(refused.code).toBe("BUSY");
    h.driver.release();
    await busy.done;
  });

  test("remove → cancels the running command first, then the VM and its volume go", async () => {
    const h = harness();
    await h.exec(memorySpec(NAME), command("write", "k", "v")).done;
    const busy = h.exec(memorySpec(NAME), command("block"));
    await busy.running;
    const removed = h.call({ type: "remove", reason: "deleted" });
    expect(await busy.done).toEqual({ exitCode: 130, timedOut: false, cancelled: true, oomKilled: false });
    await removed;
    expect(h.actor.state()).toMatchObject({ status: "absent", lastStopReason: "deleted" });
    expect(h.driver.volumes.size).toBe(0);
  });

  test("a command sent before a toggle-off but admitted after it → REVOKED, never run", async () => {
    const h = harness();
    const busy = h.exec(memorySpec(NAME), command("block"));
    await busy.running;
    // Queued behind a stop step that cannot finish before the block ends.
    const stop = h.call({ type: "stop", reason: "manual", onlyIfIdle: false });
    const waiting = h.exec(memorySpec(NAME), command("echo", "late"));
    const removal = h.call({ type: "remove", reason: "toggle-off" });
    await stop;
    const refused = (await waiting.done.catch((e) => e)) as ErrorRecord;
    expect(refused.code).toBe("REVOKED");
    await removal;
    expect(h.output(waiting.id)).toBe("");
  });

  test("cancel → the command ends as cancelled", async () => {
    const h = harness();
    const busy = h.exec(memorySpec(NAME), command("block"));
    await busy.running;
    await h.call({ type: "cancel", execId: busy.id });
    expect(await busy.done).toMatchObject({ cancelled: true });
  });

  test("VM deleted behind the actor's back → a fresh VM is booted and the command runs once", async () => {
    const h = harness();
    await h.exec().done;
    h.driver.vanish(NAME);
    const again = h.exec(memorySpec(NAME), command("echo", "once"));
    await again.done;
    expect(h.output(again.id)).toBe("echo once");
    expect(h.driver.calls).toEqual([`create ${NAME}`, `create ${NAME}`]);
  });

  test("boot fails → RUNTIME_FAILED naming the VM and the runtime's reason; nothing left booting", async () => {
    const h = harness();
    h.driver.failNext("create", new RuntimeError("FAILED", "no space left on device"));
    const refused = (await h.exec().done.catch((e) => e)) as ErrorRecord;
    expect(refused).toEqual({ code: "RUNTIME_FAILED", message: `booting VM ${NAME} failed: no space left on device` });
    expect(h.actor.state().status).toBe("absent");
    h.driver.failNext("create", new RuntimeError("UNAVAILABLE", "crun is missing"));
    expect(((await h.exec().done.catch((e) => e)) as ErrorRecord).code).toBe("RUNTIME_UNAVAILABLE");
    await h.exec().done; // and the next boot works
    expect(h.actor.state().status).toBe("running");
  });

  test("a name taken by an orphan inspect cannot see → replaced, volume kept, logged", async () => {
    const driver = createMemoryDriver();
    // The runtime holds a half-created VM under this name that inspect does not report.
    await driver.create(memorySpec(NAME));
    await driver.exec(NAME, { argv: ["write", "k", "v"], cwd: "/" }, { stdout: () => {}, stderr: () => {} });
    driver.calls.length = 0;
    const inspect = driver.inspect;
    driver.inspect = async () => undefined;
    const h = harness(driver);
    await h.exec().done;
    driver.inspect = inspect;
    expect(driver.volumes.get(NAME)?.get("k")).toBe("v");
    expect(driver.calls).toEqual([`create ${NAME}`, `create ${NAME} replace`]);
    expect(h.events.find((e) => e.type === "log")).toMatchObject({ message: "VM replaced an orphan of the same name" });
  });
});
