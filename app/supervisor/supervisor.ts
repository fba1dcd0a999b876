// The supervisor (main thread): the global cap of running VMs with least-recently-used eviction, the
// idle sweep, removals, and the route from an exec request to the session's actor.
import type { VmInfo, VmSpec } from "../../runtime/driver";
import { ActorCallError, type OnChunk } from "../../workers/actor-handle";
import { createActorRegistry, type OpenActor } from "../../workers/actor-registry";
import { sendStdin } from "./stdin-sender";
import type { ActorState, DriverConfig, ExecCommand, ExecOutcome, StopReason, VmStatus } from "../../workers/protocol";
import { NotSandboxedError, RuntimeFailedError, ShuttingDownError, VmCapReachedError, VmNotFoundError } from "../errors";
import type { EventBus } from "../events/event-bus";
import type { Logger } from "../log";
import type { Metrics } from "../metrics";
import { createTransitionReporter } from "./transitions";
import { ROOT_LABEL } from "../vm-identity";
import { holdsSlot, newRecord, type VmRecord } from "./vm-records";
import type { RootHold } from "../services/session-activity";

const SWEEP_INTERVAL_MS = 60_000;

/** Exported so the tests can override some of them. */
export type SupervisorLimits = {
  maxRunningVms: number;
  execTimeoutMs: number;
  idleStopMinutes: number;
  /** 0 = off. */
  idleSuspendMinutes?: number;
  /** Default true: a root with a working session keeps its VM (see RootHold). */
  holdWhileBusy?: boolean;
};

/** A root nobody reports activity for: no hold, and its idle time counts from its last command only. */
const NO_HOLD: RootHold = { held: false, busySessions: [], lastActiveAt: null, reportedQuiescent: false };

type SupervisorDeps = {
  /** Undefined when no runtime is usable: the supervisor then has nothing to drive. */
  driver: DriverConfig | undefined;
  limits: () => SupervisorLimits;
  now?: () => number;
  log: Logger;
  /**
   * Whether the root session still wants a sandbox (exists, sandboxed, enabled). Asked right before a
   * command is handed to its actor: a delete or toggle-off during an admission must not boot a VM.
   */
  stillWanted: (rootSessionID: string) => boolean;
  events: EventBus;
  /** Set once the manager has built its metrics (they read the supervisor back). */
  metrics: () => Metrics | undefined;
  /** Told as a removal starts, before the actor is asked: the VM's proxy cuts its connections then. */
  onRemoving?: (vmName: string, reason: StopReason) => void;
  /** Where actors run: a Worker each (the default); tests pass workers/in-process-transport.ts. */
  openActor?: OpenActor;
  /** Whether a root's sessions are working, as their plugin reports (app/services/session-activity.ts). */
  holdOf?: (rootSessionID: string | null) => RootHold;
};

type ExecInput = {
  rootSessionID: string;
  callID?: string;
  spec: VmSpec;
  command: ExecCommand;
  signal?: AbortSignal;
  onStarted(): void;
  /** Output as it arrives; a promise holds the command's output back until it settles (actor-handle.ts). */
  onChunk: OnChunk;
  /** For a terminal command (command.terminal): how its keystrokes and window size reach it, once handed to its actor. */
  onTerminal?(terminal: TerminalControl): void;
  /** The command's standard input (read as fast as the command takes it); absent: /dev/null. */
  stdin?: ReadableStream<Uint8Array>;
  /** No exec events or metrics: a forwarded port's connection (app/services/ports.ts). */
  quiet?: true;
};

export type TerminalControl = { input(data: Uint8Array | null): void; resize(rows: number, cols: number): void };

export function createSupervisor({ driver, limits, now = Date.now, log, stillWanted, events, metrics, onRemoving, openActor, holdOf = () => NO_HOLD }: SupervisorDeps) {
  const records = new Map<string, VmRecord>();
  const bootTime = now();
  const registry = createActorRegistry(driver, {
    state: onActorState,
    log: (level, message, fields) => log[level](message, fields),
    crashed: (vmName) => {
      log.warn("session actor crashed; a new one rediscovers its VM", { vmName });
      report.crashed(vmName, records.get(vmName)?.rootSessionID ?? null);
    },
  }, openActor);
  const report = createTransitionReporter(events, metrics, now);
  let sweepTimer: ReturnType<typeof setInterval> | undefined;
  /** Set by shutdown(): no command is handed to an actor any more, so none can boot a VM being stopped. */
  let shuttingDown = false;
  /** Told of every status change of every VM (ports.ts closes a VM's forwards once it stops running). */
  const statusWatchers: ((vmName: string, status: VmStatus) => void)[] = [];
  function onActorState(state: ActorState): void {
    let record = records.get(state.vmName);
    if (!record) {
      if (state.status === "absent") return;
      record = newRecord(state.vmName, state.spec?.labels[ROOT_LABEL] ?? null, now());
      records.set(state.vmName, record);
    }
    report.transition(record, record.status, state);
    const changed = record.status !== state.status;
    record.status = state.status;
    if (changed) for (const watcher of statusWatchers) watcher(state.vmName, state.status);
    record.spec = state.spec;
    record.createdAt = state.createdAt;
    record.lastStopReason = state.lastStopReason;
    if (state.spec) record.rootSessionID = state.spec.labels[ROOT_LABEL] ?? record.rootSessionID;
    // A removed VM with nothing waiting for it is forgotten: memory tracks live VMs only.
    forgetIfGone(record);
  }

  const holders = () => [...records.values()].filter(holdsSlot);
  /** Image builds running now (app/images/dockerfile-builder.ts): each one's VM takes a place under the cap too. */
  let buildsRunning = 0;
  /** What runs now, builds included: what the cap counts. */
  const placesTaken = () => holders().length + buildsRunning;

  /** The root's hold, unless holdWhileBusy is off (then nothing holds and only commands count as use). */
  function holdFor(record: VmRecord): RootHold {
    return limits().holdWhileBusy === false ? NO_HOLD : holdOf(record.rootSessionID);
  }

  /** The last use of a VM: its last command, or the last activity of its root's sessions, whichever is later. */
  function lastUsed(record: VmRecord, hold: RootHold): number {
    return Math.max(record.lastUsedAt, hold.lastActiveAt ?? 0);
  }

  /**
   * The least recently used VM that may go: no command, not held by a working session, and either reported
   * quiescent by its plugin (idle, or waiting on the user) or unused for the exec timeout (a VM nobody
   * reports for: its agent may be between two commands).
   */
  function pickVictim(requester: VmRecord | undefined): VmRecord | undefined {
    const { execTimeoutMs } = limits();
    return holders()
      .filter((r) => r !== requester && !r.evicting && r.activeExecs === 0 && r.status === "running")
      .map((r) => ({ record: r, hold: holdFor(r) }))
      .filter(({ record, hold }) => !hold.held && (hold.reportedQuiescent || now() - lastUsed(record, hold) >= execTimeoutMs))
      .sort((a, b) => lastUsed(a.record, a.hold) - lastUsed(b.record, b.hold))[0]?.record;
  }

  function capMessage(cap: number): string {
    const held = holders()
      .map((r) => {
        const hold = holdFor(r);
        const working = hold.held ? `, its session(s) ${hold.busySessions.join(", ")} working` : "";
        return `${r.vmName} (session ${r.rootSessionID ?? "?"}, ${r.activeExecs} command(s) running${working}, idle ${Math.round((now() - lastUsed(r, hold)) / 1000)} s)`;
      })
      .join(", ");
    return (
      `the limit of ${cap} running VMs (maxRunningVms) is reached, held by: ${held}${buildsRunning > 0 ? ` and ${buildsRunning} image build(s)` : ""}. None is quiescent (its sessions idle or waiting on the user) ` +
      `or idle for the exec timeout (${limits().execTimeoutMs} ms), so none can be evicted. Retry when one finishes, or raise maxRunningVms with PATCH /api/settings/sandbox`
    );
  }

  /**
   * Evicts the least recently used idle VM while `full()`, then calls `take()` in the same synchronous step
   * as the last check, so no other admission can interleave between them. Throws when none can go.
   */
  async function evictUntilRoom(full: () => boolean, requester: VmRecord | undefined, forWhat: string, take: () => void): Promise<void> {
    while (full()) {
      const victim = pickVictim(requester);
      if (!victim) throw new VmCapReachedError(capMessage(limits().maxRunningVms));
      victim.evicting = true;
      try {
        await registry.get(victim.vmName).stop("cap", true);
        log.info("evicted VM to make room", { vmName: victim.vmName, for: forWhat });
      } catch (error) {
        log.warn("eviction failed; trying another VM", { vmName: victim.vmName, error: String(error) });
        victim.lastUsedAt = now(); // busy after all: not a candidate again right away
      } finally {
        victim.evicting = false;
      }
    }
    take();
  }

  /** Takes a place under the cap for `record`, evicting the least recently used idle VM if needed. */
  async function admit(record: VmRecord): Promise<void> {
    record.lastUsedAt = now();
    await evictUntilRoom(() => !holdsSlot(record) && placesTaken() >= limits().maxRunningVms, record, record.vmName, () => {
      record.activeExecs += 1;
    });
  }

  /**
   * A place under the cap for an image build's VM, evicting like a command does; the returned function gives
   * it back. Taken before the build VM boots, so builds and sessions together never pass maxRunningVms.
   */
  async function admitBuild(): Promise<() => void> {
    await evictUntilRoom(() => placesTaken() >= limits().maxRunningVms, undefined, "an image build", () => {
      buildsRunning += 1;
    });
    let released = false;
    return () => {
      if (!released) buildsRunning -= 1;
      released = true;
    };
  }

  function toDomainError(error: unknown, rootSessionID = "?"): Error {
    if (error instanceof ActorCallError && error.record.code === "REVOKED") return new NotSandboxedError(rootSessionID, error.message);
    if (error instanceof ActorCallError) return new RuntimeFailedError(error.message);
    return error as Error;
  }

  async function exec(input: ExecInput): Promise<ExecOutcome> {
    const vmName = input.spec.name;
    const record = records.get(vmName) ?? newRecord(vmName, input.rootSessionID, now());
    records.set(vmName, record);
    record.adopted = false;
    record.waitingExecs += 1;
    try {
      await admit(record);
    } catch (error) {
      record.waitingExecs -= 1;
      forgetIfGone(record);
      throw error;
    }
    record.waitingExecs -= 1; // admitted: activeExecs now keeps the record
    try {
      // Synchronous from here to the hand-off: a delete or toggle-off either came before (refused here)
      // or comes after (its removal message follows this exec and cancels it).
      if (!stillWanted(input.rootSessionID)) throw new NotSandboxedError(input.rootSessionID, "its sandbox was withdrawn while the command waited for a place");
      if (shuttingDown) throw new ShuttingDownError();
      const handle = registry.get(vmName);
      const execEvent = { type: "exec" as const, vmName, rootSessionID: input.rootSessionID, callID: input.callID ?? null };
      let startedAt = 0;
      const onStarted = () => {
        startedAt = performance.now();
        if (!input.quiet) events.publish({ ...execEvent, phase: "started", exitCode: null, timedOut: false, cancelled: false, oomKilled: false, at: now() });
        input.onStarted();
        // Aborted while it waited for its VM: the actor knows the command only from now on, so cancel it now.
        if (input.signal?.aborted) cancel();
      };
      const command = input.stdin ? { ...input.command, stdin: true as const } : input.command;
      const { execId, done } = handle.exec(input.spec, command, { onStarted, onChunk: input.onChunk });
      // Input that broke off part-way cancels the command: it must not go on as if its input were whole.
      if (input.stdin) void sendStdin(input.stdin, (data) => handle.input(execId, data), done).then((sent) => sent === "broken" && cancel());
      input.onTerminal?.({
        input: (data) => void handle.input(execId, data).catch(() => undefined),
        resize: (rows, cols) => void handle.terminalResize(execId, rows, cols).catch(() => undefined),
      });
      void done.then(
        (outcome) => {
          if (input.quiet) return;
          const kind = outcome.timedOut ? "timeout" : outcome.cancelled ? "cancelled" : outcome.exitCode === 0 ? "ok" : "nonzero";
          metrics()?.execs.inc({ outcome: kind });
          if (outcome.oomKilled) metrics()?.oomKills.inc();
          metrics()?.execDuration.observe((performance.now() - startedAt) / 1000);
          events.publish({ ...execEvent, phase: "finished", ...outcome, at: now() });
        },
        () => {
          if (input.quiet) return;
          metrics()?.execs.inc({ outcome: "failed" });
          events.publish({ ...execEvent, phase: "finished", exitCode: null, timedOut: false, cancelled: false, oomKilled: false, at: now() });
        },
      );
      const cancel = () => void handle.cancel(execId).catch(() => undefined);
      input.signal?.addEventListener("abort", cancel, { once: true });
      try {
        return await done;
      } finally {
        input.signal?.removeEventListener("abort", cancel);
      }
    } catch (error) {
      throw toDomainError(error, input.rootSessionID);
    } finally {
      record.activeExecs -= 1;
      record.lastUsedAt = now();
      forgetIfGone(record);
    }
  }

  /**
   * A record with no VM and nothing admitted or waiting is dropped, so the list holds only live VMs. A
   * record with a waiting admission must stay: dropping it would let that command boot a VM the cap
   * cannot see.
   */
  function forgetIfGone(record: VmRecord): void {
    const idle = record.activeExecs === 0 && record.waitingExecs === 0;
    if (record.status === "absent" && idle && records.get(record.vmName) === record) records.delete(record.vmName);
  }

  /** Removes a VM and its volume (the actor cancels its running commands first). */
  async function remove(vmName: string, reason: StopReason): Promise<void> {
    onRemoving?.(vmName, reason);
    try {
      await registry.get(vmName).remove(reason);
      log.info("removed VM", { vmName, reason });
    } catch (error) {
      throw toDomainError(error);
    }
  }

  /** Starts removals without waiting: toggle-off and delete answer at once. Failures are logged. */
  function removeInBackground(vmNames: string[], reason: StopReason): void {
    for (const vmName of vmNames) void remove(vmName, reason).catch((error) => log.error("background removal failed", { vmName, reason, error: String(error) }));
  }

  /**
   * Removes every VM unused for max(idleStopMinutes, execTimeoutMs), or for `idleForMs` when given (an
   * operator's prune, reason "manual"); with idleSuspendMinutes, stops the running ones unused that long
   * first (volume kept). "Unused": no command, and no activity of the root's sessions; a root with a
   * working session is skipped (holdWhileBusy). With `dryRun` it only names the VMs it would remove.
   * Returns the names removed.
   */
  async function sweep(idleForMs?: number, { dryRun = false } = {}): Promise<string[]> {
    const { idleStopMinutes, execTimeoutMs, idleSuspendMinutes = 0 } = limits();
    const removeAfter = idleForMs ?? Math.max(idleStopMinutes * 60_000, execTimeoutMs);
    const suspendAfter = idleForMs === undefined && idleSuspendMinutes > 0 ? Math.max(idleSuspendMinutes * 60_000, execTimeoutMs) : undefined;
    const due: VmRecord[] = [];
    const toSuspend: VmRecord[] = [];
    for (const record of records.values()) {
      if (record.activeExecs > 0 || record.waitingExecs > 0) continue;
      // An operator's prune is explicit: it takes what it names, held or not.
      const hold = idleForMs === undefined ? holdFor(record) : NO_HOLD;
      if (hold.held) continue;
      const unused = now() - lastUsed(record, hold);
      if (unused >= removeAfter) due.push(record);
      else if (suspendAfter !== undefined && unused >= suspendAfter && record.status === "running") toSuspend.push(record);
    }
    if (dryRun) return due.map((r) => r.vmName);
    for (const record of toSuspend) {
      await registry
        .get(record.vmName)
        .stop("suspend", true)
        .then(() => log.info("suspended an idle VM (volume kept)", { vmName: record.vmName }))
        .catch((error) => log.warn("could not suspend an idle VM", { vmName: record.vmName, error: String(error) }));
    }
    const removed: string[] = [];
    for (const record of due) {
      try {
        await remove(record.vmName, idleForMs !== undefined ? "manual" : record.adopted ? "sweep" : "idle");
        removed.push(record.vmName);
      } catch (error) {
        log.error("sweep could not remove a VM", { vmName: record.vmName, error: String(error) });
      }
    }
    return removed;
  }

  /** Brings the running count down to the cap (after the cap was lowered, or at startup): idle VMs first. */
  async function enforceCap(): Promise<void> {
    const excess = placesTaken() - limits().maxRunningVms;
    const idle = holders().filter((r) => r.activeExecs === 0 && r.status === "running").sort((a, b) => a.lastUsedAt - b.lastUsedAt);
    for (const record of idle.slice(0, Math.max(0, excess))) {
      await registry.get(record.vmName).stop("cap", true).catch((error) => log.warn("could not stop a VM over the cap", { vmName: record.vmName, error: String(error) }));
    }
  }

  /**
   * Startup recovery: adopt the VMs the runtime lists whose root session is still sandboxed, remove the
   * rest. Adopted VMs count as last used at manager boot, so the sweep measures leftovers from then.
   */
  async function recover(found: VmInfo[], keep: (rootSessionID: string | null) => StopReason | "keep"): Promise<void> {
    for (const info of found) {
      const rootSessionID = info.spec.labels[ROOT_LABEL] ?? null;
      const verdict = keep(rootSessionID);
      if (verdict === "keep") {
        const record = { ...newRecord(info.name, rootSessionID, bootTime), status: info.status, spec: info.spec, createdAt: info.createdAt, adopted: true };
        records.set(info.name, record);
        continue;
      }
      await remove(info.name, verdict).catch((error) => log.error("recovery could not remove a VM", { vmName: info.name, error: String(error) }));
    }
    await enforceCap();
  }

  /** A data volume whose VM a crash took: tracked like a stopped VM, so the sweep removes it when idle. */
  function adoptOrphanVolume(vmName: string, rootSessionID: string): void {
    if (!records.has(vmName)) records.set(vmName, { ...newRecord(vmName, rootSessionID, bootTime), status: "stopped", adopted: true });
  }

  /**
   * A graceful stop: refuses new commands, then asks the actor of every VM that runs (or boots, or has a
   * command) to stop it with the reason "shutdown". Each actor's stop is a step behind any lifecycle step
   * in flight, cancels the VM's commands and keeps its volume; the next start adopts the stopped VMs.
   * Returns the VMs stopped, and those whose stop failed (left to the next start's recovery).
   */
  async function shutdown(): Promise<{ stopped: VmRecord[]; failed: string[] }> {
    shuttingDown = true;
    if (sweepTimer) clearInterval(sweepTimer);
    sweepTimer = undefined;
    const owned = [...records.values()].filter((r) => r.status === "running" || r.status === "booting" || r.activeExecs > 0 || r.waitingExecs > 0);
    // A removal or stop already under way finishes first: a discover is a step queued behind it.
    const settling = [...records.values()].filter((r) => (r.status === "removing" || r.status === "stopping") && !owned.includes(r));
    await Promise.allSettled(settling.map((r) => registry.get(r.vmName).discover()));
    const results = await Promise.allSettled(owned.map((r) => registry.get(r.vmName).stop("shutdown", false)));
    const failed = owned.filter((_, i) => results[i]!.status === "rejected").map((r) => r.vmName);
    for (const [i, result] of results.entries()) {
      if (result.status === "rejected") log.warn("could not stop a VM at shutdown; the next start recovers it", { vmName: owned[i]!.vmName, error: String(result.reason) });
    }
    registry.closeAll();
    return { stopped: owned.filter((r) => !failed.includes(r.vmName)).map((r) => ({ ...r })), failed };
  }

  return {
    exec,
    /** A command for `vmName` is being prepared: start its actor meanwhile (never boots a VM, see the registry). */
    warm(vmName: string): void {
      if (!shuttingDown) registry.warm(vmName);
    },
    adoptOrphanVolume,
    admitBuild,
    remove,
    removeInBackground,
    sweep,
    enforceCap,
    recover,
    /** Removes a VM by name on request; unknown names are a 404. */
    async removeByName(vmName: string): Promise<void> {
      if (!records.has(vmName)) throw new VmNotFoundError(vmName);
      await remove(vmName, "manual");
    },
    list: (): VmRecord[] => [...records.values()].map((r) => ({ ...r })),
    /** The VM's status as its actor last reported it; undefined for a VM the supervisor does not know. */
    statusOf: (vmName: string): VmStatus | undefined => records.get(vmName)?.status,
    watchStatus(watcher: (vmName: string, status: VmStatus) => void): void {
      statusWatchers.push(watcher);
    },
    runningCount: () => [...records.values()].filter((r) => r.status === "running").length,
    namesForRoots: (rootSessionIDs: Set<string>) => [...records.values()].filter((r) => r.rootSessionID && rootSessionIDs.has(r.rootSessionID)).map((r) => r.vmName),
    allNames: () => [...records.keys()],
    liveActors: () => registry.liveActors(),
    killActor: (vmName: string) => registry.kill(vmName),
    startSweeping(intervalMs = SWEEP_INTERVAL_MS): void {
      sweepTimer ??= setInterval(() => void sweep().catch((error) => log.error("idle sweep failed", { error: String(error) })), intervalMs);
    },
    /** Ends the Workers and leaves every VM as it is (tests; a later manager adopts the VMs). */
    close(): void {
      if (sweepTimer) clearInterval(sweepTimer);
      registry.closeAll();
    },
    shutdown,
  };
}

export type Supervisor = ReturnType<typeof createSupervisor>;
