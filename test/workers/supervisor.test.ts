// The supervisor and the actor registry as plain modules: actors run on this thread (in-process
// transport) over the in-memory FAKE driver, and time is a variable, so the cap, eviction, the sweep,
// crashes and shutdown are tested exactly, with no Worker and no sleeps. Against Workers and the real
// runtime: test/actors/cap.test.ts, sweep.test.ts, actor-crash.test.ts, shutdown.test.ts.
import { describe, expect, test } from "bun:test";
import { NotSandboxedError, RuntimeFailedError, ShuttingDownError, VmCapReachedError } from "../../app/errors";
import { createEventBus } from "../../app/events/event-bus";
import type { Logger } from "../../app/log";
import { createSupervisor, type SupervisorLimits } from "../../app/supervisor/supervisor";
import type { VmSpec } from "../../runtime/driver";
import { inProcessTransport } from "../../workers/in-process-transport";
import type { ExecCommand } from "../../workers/protocol";
import { createMemoryDriver, memorySpec } from "./memory-driver";

const quietLog: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const command = (...argv: string[]): ExecCommand => ({ argv, cwd: "/", env: {}, timeoutMs: 60_000 });

function harness(limits: Partial<SupervisorLimits> = {}, wanted: (root: string) => boolean = () => true) {
  const driver = createMemoryDriver();
  let clock = 1_000_000;
  const supervisor = createSupervisor({
    // Never built: every actor runs on this thread over the memory driver.
    driver: { kind: "local", stateDir: "/nonexistent" },
    openActor: (vmName) => inProcessTransport(driver, vmName),
    limits: () => ({ maxRunningVms: 2, execTimeoutMs: 60_000, idleStopMinutes: 30, ...limits }),
    now: () => clock,
    log: quietLog,
    stillWanted: wanted,
    events: createEventBus(),
    metrics: () => undefined,
  });
  const spec = (n: number, overrides: Partial<VmSpec> = {}) => memorySpec(`ocm-session-sup${String(n).padStart(9, "0")}`, { labels: { "session-sandbox.root": `root-${n}` }, ...overrides });
  function exec(n: number, cmd = command("echo", String(n))) {
    const running = Promise.withResolvers<void>();
    const done = supervisor.exec({ rootSessionID: `root-${n}`, spec: spec(n), command: cmd, onStarted: () => running.resolve(), onChunk: () => {} });
    done.catch(() => running.resolve());
    return { running: running.promise, done };
  }
  return { driver, supervisor, spec, exec, advance: (ms: number) => void (clock += ms) };
}

describe("supervisor (plain module, in-process actors, in-memory fake driver)", () => {
  test("at the cap → the least recently used idle VM is stopped (reason cap) to make room; never more than the cap run", async () => {
    const h = harness({ maxRunningVms: 2 });
    await h.exec(1).done;
    h.advance(1_000);
    await h.exec(2).done;
    h.advance(120_000); // both idle for longer than the exec timeout
    await h.exec(3).done;
    const byName = new Map(h.supervisor.list().map((r) => [r.vmName, r]));
    expect(byName.get(h.spec(1).name)).toMatchObject({ status: "stopped", lastStopReason: "cap" });
    expect(byName.get(h.spec(2).name)?.status).toBe("running");
    expect(h.driver.maxRunning()).toBe(2);
    expect(h.supervisor.runningCount()).toBe(2);
  });

  test("an image build takes a place under the cap → an idle VM is evicted for it; while it runs a session's command evicts or is refused; released, the place is free again", async () => {
    const h = harness({ maxRunningVms: 2 });
    await h.exec(1).done;
    await h.exec(2).done;
    h.advance(120_000);
    const release = await h.supervisor.admitBuild();
    expect(h.supervisor.list().filter((r) => r.status === "running")).toHaveLength(1);
    const busy = h.exec(3, command("block"));
    await busy.running;
    // Two places: the build and session 3's running command. Session 1 cannot get in.
    await expect(h.exec(1).done).rejects.toThrow(/the limit of 2 running VMs .* and 1 image build\(s\)/);
    await expect(h.supervisor.admitBuild()).rejects.toBeInstanceOf(VmCapReachedError);
    release();
    release(); // twice is once
    h.advance(120_000);
    h.driver.release();
    await busy.done;
    await h.exec(1).done;
    expect(h.driver.maxRunning()).toBeLessThanOrEqual(2);
  });

  test("at the cap with every VM busy or recently used → 429 naming who holds the places; nothing stopped", async () => {
    const h = harness({ maxRunningVms: 1 });
    const busy = h.exec(1, command("block"));
    await busy.running;
    const refused = await h.exec(2).done.catch((e) => e);
    expect(refused).toBeInstanceOf(VmCapReachedError);
    expect((refused as Error).message).toContain(`${h.spec(1).name} (session root-1, 1 command(s) running`);
    expect(h.driver.calls.filter((c) => c.startsWith("stop"))).toEqual([]);
    h.driver.release();
    await busy.done;
  });

  test("ten sessions at once under a cap of 3 → each runs or is refused with 429; the cap holds throughout", async () => {
    const h = harness({ maxRunningVms: 3, execTimeoutMs: 0 });
    const outcomes = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => h.exec(i + 1).done));
    for (const outcome of outcomes) if (outcome.status === "rejected") expect(outcome.reason).toBeInstanceOf(VmCapReachedError);
    expect(outcomes.filter((o) => o.status === "fulfilled").length).toBeGreaterThanOrEqual(3);
    expect(h.driver.maxRunning()).toBeLessThanOrEqual(3);
  });

  test("sweep → VMs unused for idleStopMinutes go with their volumes; a recently used one stays", async () => {
    const h = harness({ idleStopMinutes: 30 });
    await h.exec(1, command("write", "k", "v")).done;
    h.advance(31 * 60_000);
    await h.exec(2).done;
    expect(await h.supervisor.sweep()).toEqual([h.spec(1).name]);
    expect(h.driver.volumes.has(h.spec(1).name)).toBe(false);
    expect(h.supervisor.list().map((r) => r.vmName)).toEqual([h.spec(2).name]);
  });

  test("a withdrawn sandbox → the command is refused before its actor boots anything", async () => {
    const h = harness({}, () => false);
    expect(await h.exec(1).done.catch((e) => e)).toBeInstanceOf(NotSandboxedError);
    expect(h.driver.calls).toEqual([]);
  });

  test("warming an actor while a command is prepared → it only discovers (no VM); refused afterwards, it retires with nothing left", async () => {
    const h = harness();
    h.supervisor.warm(h.spec(1).name);
    expect(h.supervisor.liveActors()).toBe(1);
    while (h.supervisor.liveActors() > 0) await Bun.sleep(1);
    expect(h.driver.calls).toEqual([]);
    expect(h.supervisor.list()).toEqual([]);
  });

  test("warming an actor, then its command → the warmed actor runs it: one actor, one boot; warming a live actor adds none", async () => {
    const h = harness();
    h.supervisor.warm(h.spec(1).name);
    await h.exec(1).done;
    h.supervisor.warm(h.spec(1).name);
    expect(h.supervisor.liveActors()).toBe(1);
    expect(h.driver.calls).toEqual([`create ${h.spec(1).name}`]);
    expect(h.supervisor.runningCount()).toBe(1);
  });

  test("an actor dies mid-command → the call fails at once (fail closed); a new actor rediscovers the running VM", async () => {
    const h = harness();
    const busy = h.exec(1, command("block"));
    await busy.running;
    h.supervisor.killActor(h.spec(1).name);
    const failed = await busy.done.catch((e) => e);
    expect(failed).toBeInstanceOf(RuntimeFailedError);
    expect((failed as Error).message).toContain("exited");
    // The replacement's first step is discover; the VM is still running in the runtime.
    await h.exec(1).done;
    expect(h.driver.calls.filter((c) => c.startsWith("create"))).toEqual([`create ${h.spec(1).name}`]);
    h.driver.release();
  });

  test("shutdown while a VM is being removed and another boots → both steps finish first; nothing left running", async () => {
    const h = harness();
    await h.exec(1).done;
    const removal = h.driver.holdNext("remove");
    const removed = h.supervisor.remove(h.spec(1).name, "deleted");
    await removal.entered;
    const boot = h.driver.holdNext("create");
    const booting = h.exec(2);
    await boot.entered;
    let finished = false;
    const shutdown = h.supervisor.shutdown().then((result) => ((finished = true), result));
    await Promise.resolve();
    expect(finished).toBe(false);
    removal.release();
    boot.release();
    await removed;
    const { stopped } = await shutdown;
    expect(stopped.map((r) => r.vmName)).toEqual([h.spec(2).name]);
    await booting.done; // it ran: it was handed over before the shutdown began
    expect(h.driver.running()).toEqual([]);
    expect(h.driver.calls.filter((c) => c.startsWith("remove"))).toEqual([`remove ${h.spec(1).name}`]);
  });

  test("shutdown → every running VM stopped (reason shutdown), volumes kept, later commands refused", async () => {
    const h = harness();
    await h.exec(1, command("write", "k", "v")).done;
    const busy = h.exec(2, command("block"));
    await busy.running;
    const { stopped, failed } = await h.supervisor.shutdown();
    expect(failed).toEqual([]);
    expect(stopped.map((r) => r.vmName).sort()).toEqual([h.spec(1).name, h.spec(2).name]);
    expect(await busy.done).toMatchObject({ cancelled: true });
    expect(h.driver.running()).toEqual([]);
    expect(h.driver.volumes.get(h.spec(1).name)?.get("k")).toBe("v");
    expect(await h.exec(1).done.catch((e) => e)).toBeInstanceOf(ShuttingDownError);
  });
});
