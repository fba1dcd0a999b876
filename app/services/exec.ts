// The exec service: every agent command and every operator shell goes through here, in three steps —
// prepare (exec-prepare.ts: the session's VM spec and command, or a refusal), open the VM's way out
// (vm-egress.ts), and run (exec-runs.ts: the supervisor, the history, cancel by call id). Anything that
// stops one before it starts is counted once as a refusal. The routes only frame the stream.
import type { ExecOutcome } from "../../workers/protocol";
import { DomainError } from "../errors";
import type { Metrics } from "../metrics";
import type { Supervisor, TerminalControl } from "../supervisor/supervisor";
import type { ExecHistory } from "./exec-history";
import { createExecPreparer, MAX_EXEC_TIMEOUT_MS, type ExecBody, type ExecPrepareDeps, type PreparedExec } from "./exec-prepare";
import { createExecRuns, type AfterNotes, type ExecHooks } from "./exec-runs";
import { networkOffHint } from "./network-off-hint";
import type { ShellOptions } from "./shell";
import type { VmEgress } from "./vm-egress";

export type { ExecBody, PreparedExec } from "./exec-prepare";

type ExecServiceDeps = Omit<ExecPrepareDeps, "egressSocketFor" | "supervisor"> & {
  /** The VMs' egress proxies (vm-egress.ts). */
  egress: VmEgress;
  supervisor: Pick<Supervisor, "exec"> & Partial<Pick<Supervisor, "warm">>;
  execHistory: ExecHistory;
  metrics: Pick<Metrics, "refusals">;
};

/** A command that started in its VM; its outcome is still to come (never rejects). */
type StartedExec = { prepared: PreparedExec; outcome: Promise<{ ok: true; result: ExecOutcome } | { ok: false; error: unknown }> };

type ShellHooks = {
  /** Aborting it kills the shell in the VM (the operator went away). */
  signal: AbortSignal;
  onStarted(vmName: string): void;
  /** A promise: the operator's socket cannot take more yet, and the shell's output waits. */
  onChunk: ExecHooks["onChunk"];
  onTerminal(control: TerminalControl): void;
};

/** A command's after-notes from two sources, in order. */
function bothNotes(first: AfterNotes, second: AfterNotes): AfterNotes {
  return {
    chunk: (stream, data) => (first.chunk(stream, data), second.chunk(stream, data)),
    notes: (outcome) => [...first.notes(outcome), ...second.notes(outcome)],
  };
}

export function createExecService(deps: ExecServiceDeps) {
  const { egress, supervisor, metrics } = deps;
  const preparer = createExecPreparer({ ...deps, egressSocketFor: egress.socketPathFor });
  const runs = createExecRuns(supervisor, deps.execHistory, (prepared) => bothNotes(egress.refusalNotes(prepared), networkOffHint(prepared)));

  /** Counts a refusal (anything that stopped a command or shell before it ran) and passes the error on. */
  function refused(error: unknown): never {
    metrics.refusals.inc({ reason: error instanceof DomainError ? error.errorCode.toLowerCase() : "internal" });
    throw error;
  }

  /**
   * Runs a prepared command; resolves once it started in its VM, with its outcome to come. Rejects, as a
   * counted refusal, when anything stopped it before it started.
   */
  async function run(prepared: PreparedExec, hooks: Omit<ExecHooks, "onStarted"> & { onStarted?(): void }): Promise<StartedExec> {
    const started = Promise.withResolvers<"started">();
    const onStarted = () => {
      hooks.onStarted?.();
      started.resolve("started");
    };
    const outcome = runs
      .run(prepared, { ...hooks, onStarted })
      .then((result) => ({ ok: true as const, result }), (error: unknown) => ({ ok: false as const, error }));
    const first = await Promise.race([started.promise, outcome]);
    if (first !== "started" && !first.ok) refused(first.error); // nothing ran
    return { prepared, outcome };
  }

  /** An agent's command. */
  async function start(sessionId: string, body: ExecBody, hooks: Omit<ExecHooks, "onStarted">): Promise<StartedExec> {
    const prepared = await preparer.prepare(sessionId, body).catch(refused);
    await egress.openFor(prepared, "the command was not run").catch(refused);
    return run(prepared, hooks);
  }

  /**
   * One of the manager's own commands in the session's VM (files.ts): `argv` as given, in the session's
   * directory, shown in the history as `label`. Prepared, refused and run exactly as an agent's command.
   */
  async function startManaged(sessionId: string, request: { argv: string[]; label: string; quiet?: true; timeoutMs?: number }, hooks: Omit<ExecHooks, "onStarted">): Promise<StartedExec> {
    const base = await preparer.prepare(sessionId, { command: request.label, ...(request.timeoutMs === undefined ? {} : { timeoutMs: request.timeoutMs }) }).catch(refused);
    const prepared: PreparedExec = { ...base, command: { ...base.command, argv: request.argv }, historyLabel: request.label, ...(request.quiet ? { quiet: true as const } : {}) };
    await egress.openFor(prepared, "the command was not run").catch(refused);
    return run(prepared, hooks);
  }

  /**
   * The operator's interactive shell (app/services/shell.ts). Resolves undefined, having run nothing, when
   * the operator left while it was being prepared.
   */
  async function shell(sessionId: string, options: ShellOptions, hooks: ShellHooks): Promise<ExecOutcome | undefined> {
    const prepared = await preparer.prepareShell(sessionId, options).catch(refused);
    await egress.openFor(prepared, "the shell was not opened").catch(refused);
    if (hooks.signal.aborted) return undefined;
    const { outcome } = await run(prepared, { ...hooks, onStarted: () => hooks.onStarted(prepared.spec.name) });
    const settled = await outcome;
    if (!settled.ok) throw settled.error;
    return settled.result;
  }

  /**
   * An agent's command in the background: it starts, and this resolves, without anyone reading its output
   * (its ring keeps the latest: GET …/processes/:callID/logs). It runs until it ends, its timeout (default:
   * the longest, a day), a cancel by its call id, or its VM's end.
   */
  async function startBackground(sessionId: string, body: ExecBody): Promise<StartedExec> {
    const started = await start(sessionId, { ...body, timeoutMs: body.timeoutMs ?? MAX_EXEC_TIMEOUT_MS }, { signal: new AbortController().signal, background: true, onChunk: () => undefined });
    void started.outcome; // settles on its own; the history records it
    return started;
  }

  return { prepare: preparer.prepare, start, startBackground, startManaged, shell, cancel: runs.cancel, processes: runs.processes, output: runs.output };
}

export type ExecService = ReturnType<typeof createExecService>;
