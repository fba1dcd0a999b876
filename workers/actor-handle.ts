// The main thread's handle on one session actor Worker: typed calls over postMessage, and fail-closed
// behaviour: when the Worker dies, every pending call is rejected at once with ACTOR_CRASHED.
import type { VmSpec } from "../runtime/driver";
import { createTakenReporter } from "./output-window";
import type { ActorEvent, ActorInit, ActorNotice, ActorRequest, ActorState, DriverConfig, ErrorRecord, ExecCommand, ExecOutcome, StopReason } from "./protocol";

export class ActorCallError extends Error {
  constructor(readonly record: ErrorRecord) {
    super(record.message);
    this.name = "ActorCallError";
  }
}

type Pending = {
  resolve(value: unknown): void;
  reject(error: ActorCallError): void;
  onStarted?: () => void;
  onChunk?: OnChunk;
  /** An exec's: reports to the actor what its consumer took of the output. */
  taken?: { took(bytes: number): void };
};

/**
 * An exec's output, as it arrives. A promise means the consumer could not take the chunk yet (its client
 * reads slowly): it settles when it has, and only then is the chunk counted as taken, so the actor's window
 * (workers/output-window.ts) holds the guest back. Undefined: taken at once.
 */
export type OnChunk = (stream: "stdout" | "stderr", data: Uint8Array) => Promise<void> | undefined | void;

type ActorHooks = {
  onState(state: ActorState): void;
  /** A line the actor wants in the manager's log. */
  onLog(level: "info" | "warn", message: string, fields: Record<string, unknown>): void;
  /** No VM runs and no call is pending: the actor may be retired. */
  onIdle(handle: ActorHandle): void;
  onExit(handle: ActorHandle, crashed: boolean): void;
};

type ExecCallbacks = { onStarted(): void; onChunk: OnChunk };

type DistributiveOmit<T, K extends keyof any> = T extends unknown ? Omit<T, K> : never;

const WORKER_URL = new URL("./session-actor.worker.ts", import.meta.url);

/**
 * Where an actor runs and how messages reach it. The manager runs each actor in a Worker of its own
 * (workerTransport); tests of the actor, registry and supervisor as plain modules run it on the calling
 * thread (workers/in-process-transport.ts). `terminate` ends it as a crash would: `onDeath` follows.
 */
export type ActorTransport = {
  post(message: ActorRequest | ActorNotice): void;
  listen(onEvent: (event: ActorEvent) => void, onDeath: (message: string) => void): void;
  terminate(): void;
};

/**
 * At most one actor Worker per process started ahead of need: its module load (most of a Worker's start)
 * is done before a new session's first command arrives, which then only sends it its init. It has no
 * VM and no config until claimed, does not keep the process alive (unref), and is refilled a moment after
 * a claim, once that claim's boot is mostly done, so the two do not compete for the CPU.
 */
const SPARE_REFILL_DELAY_MS = 100;
let spare: Worker | undefined;
let refill: ReturnType<typeof setTimeout> | undefined;

function startSpare(): void {
  refill = undefined;
  if (spare) return;
  const worker = new Worker(WORKER_URL);
  worker.unref();
  // A spare that died before its claim (its modules failed to load) is never handed out: its death would
  // come before the claimant listens, and that actor's calls would wait forever instead of failing closed.
  worker.addEventListener("close", () => {
    if (spare === worker) spare = undefined;
  });
  spare = worker;
}

/** Keeps one spare actor Worker ready from now on (the manager's registry, whose actors run in Workers). */
export function keepSpareWorker(): void {
  if (!spare && !refill) startSpare();
}

/**
 * How many spare Workers wait (0 or 1): they cost memory like an idle actor, with no VM.
 * Exported so a test watches the spare being used and refilled.
 */
export function spareWorkers(): number {
  return spare ? 1 : 0;
}

/** Ends the spare Worker, if any (shutdown). A later claim starts Workers afresh. */
export function closeSpareWorker(): void {
  clearTimeout(refill);
  refill = undefined;
  spare?.terminate();
  spare = undefined;
}

function claimWorker(): Worker {
  const worker = spare ?? new Worker(WORKER_URL);
  const wasSpare = worker === spare;
  spare = undefined;
  if (wasSpare) {
    worker.ref();
    refill ??= setTimeout(startSpare, SPARE_REFILL_DELAY_MS);
    refill.unref?.();
  }
  return worker;
}

export function workerTransport(vmName: string, driver: DriverConfig): ActorTransport {
  const worker = claimWorker();
  worker.postMessage({ type: "init", vmName, driver } satisfies ActorInit);
  return {
    post: (message) => worker.postMessage(message),
    listen(onEvent, onDeath) {
      worker.onmessage = (event: MessageEvent<ActorEvent>) => onEvent(event.data);
      worker.onerror = (event) => onDeath(`session actor for ${vmName} failed: ${event.message}`);
      worker.addEventListener("close", () => onDeath(`session actor for ${vmName} exited`));
    },
    terminate: () => worker.terminate(),
  };
}

export class ActorHandle {
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private dead = false;

  private lastState: ActorState | undefined;

  constructor(
    readonly vmName: string,
    private readonly transport: ActorTransport,
    private readonly hooks: ActorHooks,
  ) {
    transport.listen(
      (event) => this.receive(event),
      (message) => this.die(message),
    );
  }

  exec(spec: VmSpec, command: ExecCommand, callbacks: ExecCallbacks): { execId: number; done: Promise<ExecOutcome> } {
    const { id, promise } = this.send({ type: "exec", spec, command }, callbacks);
    const pending = this.pending.get(id);
    if (pending) pending.taken = createTakenReporter((bytes) => !this.dead && this.transport.post({ type: "output-taken", execId: id, bytes }));
    return { execId: id, done: promise as Promise<ExecOutcome> };
  }

  /** A terminal's keystrokes, or the next chunk of a command's stdin: settles once the actor took it. */
  input(execId: number, data: Uint8Array | null): Promise<unknown> {
    return this.call({ type: "input", execId, data });
  }

  terminalResize(execId: number, rows: number, cols: number): Promise<unknown> {
    return this.call({ type: "terminal-resize", execId, rows, cols });
  }

  cancel(execId: number): Promise<unknown> {
    return this.call({ type: "cancel", execId });
  }

  stop(reason: StopReason, onlyIfIdle: boolean): Promise<ActorState> {
    return this.call({ type: "stop", reason, onlyIfIdle }) as Promise<ActorState>;
  }

  remove(reason: StopReason): Promise<ActorState> {
    return this.call({ type: "remove", reason }) as Promise<ActorState>;
  }

  discover(): Promise<ActorState> {
    return this.call({ type: "discover" }) as Promise<ActorState>;
  }

  /** Ends the Worker abruptly, exactly as a crash would: pending calls fail closed, a fresh actor takes over. */
  kill(): void {
    this.transport.terminate();
  }

  /** Ends the Worker on purpose (retirement); not a crash. */
  retire(): void {
    this.dead = true;
    this.transport.terminate();
    this.hooks.onExit(this, false);
  }

  private call(request: DistributiveOmit<ActorRequest, "id">): Promise<unknown> {
    return this.send(request).promise;
  }

  private send(request: DistributiveOmit<ActorRequest, "id">, callbacks?: Partial<ExecCallbacks>): { id: number; promise: Promise<unknown> } {
    const id = this.nextId++;
    if (this.dead) {
      return { id, promise: Promise.reject(new ActorCallError({ code: "ACTOR_CRASHED", message: `session actor for ${this.vmName} is gone; retry` })) };
    }
    const { promise, resolve, reject } = Promise.withResolvers<unknown>();
    this.pending.set(id, { resolve, reject, onStarted: callbacks?.onStarted, onChunk: callbacks?.onChunk });
    this.transport.post({ ...request, id } as ActorRequest);
    return { id, promise };
  }

  private receive(event: ActorEvent): void {
    switch (event.type) {
      case "ready":
        return;
      case "state":
        this.lastState = event.state;
        return this.hooks.onState(event.state);
      case "log":
        return this.hooks.onLog(event.level, event.message, event.fields);
      case "exec-started":
        return this.pending.get(event.id)?.onStarted?.();
      case "chunk": {
        const pending = this.pending.get(event.id);
        if (!pending?.onChunk) return;
        const bytes = event.data.byteLength;
        const taking = pending.onChunk(event.stream, event.data);
        if (taking instanceof Promise) void taking.then(() => pending.taken?.took(bytes));
        else pending.taken?.took(bytes);
        return;
      }
      case "reply": {
        const pending = this.pending.get(event.id);
        this.pending.delete(event.id);
        if (!pending) return;
        if (event.ok) pending.resolve(event.value);
        else pending.reject(new ActorCallError(event.error));
        const status = this.lastState?.status;
        if (this.pending.size === 0 && (status === "absent" || status === "stopped") && this.lastState?.runningExecs === 0) this.hooks.onIdle(this);
      }
    }
  }

  /** Fail closed: nothing waits on a dead actor. */
  private die(message: string): void {
    if (this.dead) return;
    this.dead = true;
    const error = new ActorCallError({ code: "ACTOR_CRASHED", message });
    for (const pending of this.pending.values()) pending.reject(error);
    this.pending.clear();
    this.transport.terminate();
    this.hooks.onExit(this, true);
  }
}
