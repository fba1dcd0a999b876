// The session actor: owns one root session's VM and runs its lifecycle one step at a time (boot,
// recreate, stop, remove, discover). Execs run concurrently inside a running VM but never overlap a step.
// Plain module: the Worker entry (session-actor.worker.ts) only wires messages to it.
import { RuntimeError, type RuntimeDriver, type TerminalHandle, type VmSpec } from "../runtime/driver";
import { createOutputWindow, type OutputWindow } from "./output-window";
import { createInputQueue, type InputQueue } from "./input-queue";
import { REVOKING_REASONS, type ActorEvent, type ActorNotice, type ActorRequest, type ActorState, type ErrorRecord, type ExecCommand, type ExecOutcome, type StopReason } from "./protocol";

class ActorError extends Error {
  constructor(readonly record: ErrorRecord) {
    super(record.message);
  }
}

/**
 * `emit` posts an event; `transfer` lists buffers that move with it instead of being copied (a Worker's
 * postMessage; the in-process transport ignores it).
 */
export function createSessionActor(driver: RuntimeDriver, vmName: string, emit: (event: ActorEvent, transfer?: ArrayBuffer[]) => void) {
  let state: ActorState = { vmName, status: "absent", spec: null, createdAt: null, runningExecs: 0, lastStopReason: null };
  const running = new Map<number, AbortController>();
  /** Open terminals by exec id (registered synchronously after exec-started, so input sent after it finds them). */
  const terminals = new Map<number, TerminalHandle>();
  /** The stdin of commands that have one, by exec id (made when the exec request arrives). */
  const inputs = new Map<number, InputQueue>();
  /** Each running exec's output window (workers/output-window.ts), by exec id. */
  const windows = new Map<number, OutputWindow>();
  let drained = Promise.withResolvers<void>();
  drained.resolve();
  let queue: Promise<unknown> = Promise.resolve();
  /** Bumped when a toggle-off, delete or disable arrives; an exec received before it must not run after it. */
  let revision = 0;

  function set(patch: Partial<ActorState>): void {
    state = { ...state, ...patch, runningExecs: running.size };
    emit({ type: "state", state });
  }

  /** Runs `work` after every earlier step has settled: the serialization point of the lifecycle. */
  function step<T>(work: () => Promise<T>): Promise<T> {
    const result = queue.then(work);
    queue = result.catch(() => undefined);
    return result;
  }

  function runtimeFailure(what: string, error: unknown): ActorError {
    const unavailable = error instanceof RuntimeError && error.code === "UNAVAILABLE";
    return new ActorError({
      code: unavailable ? "RUNTIME_UNAVAILABLE" : "RUNTIME_FAILED",
      message: `${what} VM ${vmName} failed: ${(error as Error).message}`,
    });
  }

  async function discover(): Promise<ActorState> {
    const info = await driver.inspect(vmName).catch((error) => {
      throw runtimeFailure("inspecting", error);
    });
    set(info ? { status: info.status, spec: info.spec, createdAt: info.createdAt } : { status: "absent", spec: null, createdAt: null });
    return state;
  }

  /** Whether the VM as last seen runs `spec`: the driver's own attestation, without asking the runtime. */
  function runsSpec(spec: VmSpec): boolean {
    if (state.status !== "running" || !state.spec) return false;
    return driver.attest(spec, { name: vmName, status: "running", spec: state.spec, createdAt: state.createdAt ?? 0 }).ok;
  }

  /**
   * Gets the VM running `spec` through the driver's one lifecycle call (ensure: reuse, start, create,
   * recreate keeping the volume, or replace an orphan). A recreate waits for the running execs first.
   */
  async function ensureRunning(spec: VmSpec): Promise<void> {
    if (runsSpec(spec)) return;
    if (state.status === "running") await drained.promise;
    set({ status: "booting" });
    try {
      const result = await driver.ensure(spec);
      if (result.action === "recreated" || result.action === "replaced-orphan") {
        emit({ type: "log", level: "info", message: `VM ${result.action === "recreated" ? "recreated: its spec changed" : "replaced an orphan of the same name"}`, fields: { vmName, mismatches: result.mismatches } });
      }
      set({ status: "running", spec: result.info.spec, createdAt: result.info.createdAt, ...(result.action === "recreated" ? { lastStopReason: "spec-change" as const } : {}) });
    } catch (error) {
      await discover().catch(() => set({ status: "absent", spec: null, createdAt: null }));
      throw runtimeFailure("booting", error);
    }
  }

  async function cancelAllAndDrain(): Promise<void> {
    for (const controller of running.values()) controller.abort();
    await drained.promise;
  }

  async function stop(reason: StopReason, onlyIfIdle: boolean): Promise<ActorState> {
    if (onlyIfIdle && running.size > 0) throw new ActorError({ code: "BUSY", message: `VM ${vmName} is running ${running.size} command(s)` });
    if (state.status === "absent" || state.status === "stopped") return state;
    await cancelAllAndDrain();
    set({ status: "stopping" });
    try {
      await driver.stop(vmName);
    } catch (error) {
      await discover().catch(() => undefined);
      throw runtimeFailure("stopping", error);
    }
    set({ status: "stopped", lastStopReason: reason });
    return state;
  }

  async function remove(reason: StopReason): Promise<ActorState> {
    await cancelAllAndDrain();
    set({ status: "removing" });
    try {
      await driver.remove(vmName);
      // The manager names each VM's volume after the VM: this also takes a volume a crash orphaned.
      await driver.removeVolume?.(vmName);
    } catch (error) {
      await discover().catch(() => undefined);
      throw runtimeFailure("removing", error);
    }
    set({ status: "absent", spec: null, createdAt: null, lastStopReason: reason });
    return state;
  }

  /** Boots as needed and registers the exec, inside a step, so a later stop or remove step sees it. */
  function admit(id: number, spec: VmSpec, controller: AbortController, receivedAt: number): Promise<void> {
    return step(async () => {
      if (receivedAt !== revision) {
        throw new ActorError({ code: "REVOKED", message: `the sandbox of VM ${vmName} was withdrawn (toggled off or deleted) while this command waited; it did not run` });
      }
      await ensureRunning(spec);
      if (running.size === 0) drained = Promise.withResolvers<void>();
      running.set(id, controller);
      announceExecCount();
    });
  }

  function release(id: number): void {
    running.delete(id);
    if (running.size === 0) drained.resolve();
    announceExecCount();
  }

  /**
   * The count of running commands goes out with the next lifecycle change, and at once only when the VM is
   * not running: all the main thread reads it for is whether an actor without a VM is idle (actor-handle.ts).
   * Two state messages per command less, on every command's path (docs/performance.md, "exec `true`").
   */
  function announceExecCount(): void {
    if (state.status === "running") state = { ...state, runningExecs: running.size };
    else set({});
  }

  async function exec(id: number, spec: VmSpec, command: ExecCommand) {
    const controller = new AbortController();
    const window = createOutputWindow();
    windows.set(id, window);
    // Made before the command starts: its input may come while it waits for its VM.
    const input = command.stdin && !command.terminal ? createInputQueue() : undefined;
    if (input) inputs.set(id, input);
    // A cancelled command is killed: what it still prints must not wait for a consumer that is gone.
    controller.signal.addEventListener("abort", () => window.open(), { once: true });
    try {
      const result = await execPaced(id, spec, command, controller, window, input?.stream);
      return { exitCode: result.exitCode, timedOut: result.timedOut, cancelled: result.cancelled, oomKilled: result.oomKilled === true } satisfies ExecOutcome;
    } finally {
      window.open();
      windows.delete(id);
      input?.close();
      inputs.delete(id);
    }
  }

  async function execPaced(id: number, spec: VmSpec, command: ExecCommand, controller: AbortController, window: OutputWindow, stdin?: ReadableStream<Uint8Array>) {
    const receivedAt = revision;
    await admit(id, spec, controller, receivedAt);
    emit({ type: "exec-started", id });
    try {
      return await runIn(id, command, controller, window, stdin);
    } catch (error) {
      // The VM vanished behind our back (removed outside the manager): the command never started, so
      // boot a fresh VM and run it there once.
      if (!(error instanceof RuntimeError && error.code === "NOT_FOUND")) throw runtimeFailure("running a command in", error);
      release(id);
      await step(discover);
      await admit(id, spec, controller, receivedAt);
      try {
        return await runIn(id, command, controller, window, stdin);
      } catch (retryError) {
        throw runtimeFailure("running a command in", retryError);
      }
    } finally {
      release(id);
    }
  }

  /**
   * Posts a chunk of exec `id`'s output, counted against its window. A chunk is often a view into a larger
   * buffer (a socket read holding several frames), and a posted view is cloned with its whole buffer: the
   * chunk is copied into one of its own size, which then moves to the main thread without another copy.
   */
  function post(id: number, window: OutputWindow, stream: "stdout" | "stderr", data: Uint8Array): void {
    window.sent(data.byteLength);
    const own = new Uint8Array(data); // a copy (Buffer#slice would be a view)
    emit({ type: "chunk", id, stream, data: own }, [own.buffer]);
  }

  async function runTerminal(id: number, command: ExecCommand, controller: AbortController, window: OutputWindow, size: { rows: number; cols: number }) {
    if (!driver.openTerminal) throw new RuntimeError("UNAVAILABLE", `the ${driver.name} runtime has no interactive terminal; run commands with exec`);
    const request = { cwd: command.cwd, env: command.env, timeoutMs: command.timeoutMs, signal: controller.signal, ...size };
    const terminal = driver.openTerminal(vmName, request, (data) => post(id, window, "stdout", data), window.room);
    terminals.set(id, terminal);
    try {
      return await terminal.result;
    } finally {
      terminals.delete(id);
    }
  }

  function runIn(id: number, command: ExecCommand, controller: AbortController, window: OutputWindow, stdin?: ReadableStream<Uint8Array>) {
    if (command.terminal) return runTerminal(id, command, controller, window, command.terminal);
    return driver.exec(
      vmName,
      { argv: command.argv, cwd: command.cwd, env: command.env, timeoutMs: command.timeoutMs, signal: controller.signal, ...(stdin ? { stdin } : {}) },
      { stdout: (data) => post(id, window, "stdout", data), stderr: (data) => post(id, window, "stderr", data), room: window.room },
    );
  }

  /** A notice needs no answer: the main thread's consumer took some of an exec's output. */
  function notice(message: ActorNotice): void {
    windows.get(message.execId)?.taken(message.bytes);
  }

  async function handle(request: ActorRequest): Promise<unknown> {
    switch (request.type) {
      case "exec":
        return exec(request.id, request.spec, request.command);
      case "cancel":
        running.get(request.execId)?.abort();
        return null;
      case "stop":
        return step(() => stop(request.reason, request.onlyIfIdle));
      case "remove":
        if (REVOKING_REASONS.has(request.reason)) revision += 1;
        return step(() => remove(request.reason));
      case "discover":
        return step(discover);
      case "input": {
        const terminal = terminals.get(request.execId);
        if (!terminal) return inputs.get(request.execId)?.push(request.data) ?? null;
        if (request.data) terminal.write(request.data);
        else terminal.closeInput();
        return null;
      }
      case "terminal-resize":
        await terminals.get(request.execId)?.resize(request.rows, request.cols);
        return null;
    }
  }

  /** Handles one request and always answers it: a reply with the value or the error record. */
  async function receive(request: ActorRequest): Promise<void> {
    try {
      emit({ type: "reply", id: request.id, ok: true, value: await handle(request) });
    } catch (error) {
      const record: ErrorRecord = error instanceof ActorError ? error.record : { code: "RUNTIME_FAILED", message: String((error as Error)?.message ?? error) };
      emit({ type: "reply", id: request.id, ok: false, error: record });
    }
  }

  // A new actor knows nothing: its VM may exist already (stopped by eviction, or adopted after a crash
  // or retirement). Learn the truth before the first request is served.
  void step(discover).catch(() => undefined);

  return { receive, notice, state: () => state };
}

export type SessionActor = ReturnType<typeof createSessionActor>;
