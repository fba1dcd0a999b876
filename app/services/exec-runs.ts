// Runs a prepared command, or an operator's shell, through the supervisor: the one way into it. Each is
// recorded in the exec history and cancellable by its call id (per root session) while it runs. A command's
// stderr ends with what the sandbox has to say about its run (after-notes: refused connections, a lookup
// without network, the memory limit), since the guest's own messages cannot say it.
import type { OnChunk } from "../../workers/actor-handle";
import type { ExecOutcome } from "../../workers/protocol";
import { DomainError } from "../errors";
import { newId } from "../ids";
import type { Supervisor, TerminalControl } from "../supervisor/supervisor";
import type { ExecHistory } from "./exec-history";
import type { PreparedExec } from "./exec-prepare";
import { FOREGROUND_RING_BYTES, OutputRing, RING_BYTES } from "./output-ring";

/** How long a cancel waits for the command to end before answering anyway. */
const CANCEL_WAIT_MS = 10_000;

export type ExecHooks = {
  /** Aborting it cancels the command in the VM (the client went away). */
  signal: AbortSignal;
  onStarted(): void;
  /** A promise: the client cannot take more yet, and the command's output waits (backpressure). */
  onChunk: OnChunk;
  /** A shell's: its terminal (input, resize) once it started. */
  onTerminal?(control: TerminalControl): void;
  /** The command's standard input; absent: /dev/null. */
  stdin?: ReadableStream<Uint8Array>;
  /** Started with `background`: nobody reads it as it runs, its output is kept in its ring only. */
  background?: true;
};

/** The line a command killed at its VM's memory limit ends its stderr with: the limit, and how to raise it. */
export function oomMessage(prepared: Pick<PreparedExec, "rootSessionID" | "spec">): string {
  const mib = prepared.spec.memoryMib;
  return `session-sandbox: killed by the VM's memory limit (${mib} MiB); raise it with \`session-sandbox resources ${prepared.rootSessionID} --memory ${mib * 2}M\` (or PUT /api/session-sandbox/${prepared.rootSessionID} {"resources":{"memoryMib":${mib * 2}}})\n`;
}

/** What the history shows for a run: the agent's command, or that it was an interactive shell. */
const SHELL_IN_HISTORY = "(interactive shell)";

/** A command that runs now: what the processes list shows of it, and its latest output for its followers. */
type Running = {
  historyId: string;
  abort: AbortController;
  done: Promise<Ended>;
  rootSessionID: string;
  sessionId: string;
  callID: string;
  vmName: string;
  command: string;
  startedAt: number;
  background: boolean;
  ring: OutputRing;
};

/** A running command as GET …/processes shows it. */
export type ProcessView = Pick<Running, "callID" | "sessionId" | "vmName" | "command" | "startedAt" | "background"> & { outputBytes: number; droppedBytes: number };

/** How a command ended, kept a while for a follower that attached before its end (GET …/logs?follow=1). */
export type Ended = { ok: true; outcome: ExecOutcome } | { ok: false; error: string };

/** The command matters more than its record: a history that cannot be written (a full disk) does not stop it. */
function unlessFailing<T>(write: () => T): T | undefined {
  try {
    return write();
  } catch {
    return undefined;
  }
}

/** What a command hears after its own output: made as it starts, shown its output, asked as it ends. */
export type AfterNotes = {
  chunk(stream: "stdout" | "stderr", data: Uint8Array): void;
  /** The lines to add to the command's stderr. */
  notes(outcome: ExecOutcome): string[];
};

export const NO_NOTES: AfterNotes = { chunk: () => {}, notes: () => [] };

export type NotesFor = (prepared: PreparedExec) => AfterNotes;

export function createExecRuns(supervisor: Pick<Supervisor, "exec">, history: ExecHistory, notesFor: NotesFor = () => NO_NOTES, now: () => number = Date.now) {
  const running = new Map<string, Set<Running>>();

  const keyOf = (rootSessionID: string, callID: string) => `${rootSessionID}\u0000${callID}`;

  async function run(prepared: PreparedExec, hooks: ExecHooks): Promise<ExecOutcome> {
    const key = keyOf(prepared.rootSessionID, prepared.callID);
    const abort = new AbortController();
    hooks.signal.addEventListener("abort", () => abort.abort(), { once: true });
    const done = Promise.withResolvers<Ended>();
    const ring = new OutputRing(hooks.background ? RING_BYTES : FOREGROUND_RING_BYTES);
    const command = prepared.historyLabel ?? (prepared.command.terminal ? SHELL_IN_HISTORY : (prepared.command.argv[2] ?? ""));
    const entry: Running = {
      historyId: newId(),
      abort,
      done: done.promise,
      rootSessionID: prepared.rootSessionID,
      sessionId: prepared.sessionId,
      callID: prepared.callID,
      vmName: prepared.spec.name,
      command,
      startedAt: now(),
      background: hooks.background === true,
      ring,
    };
    // Callers may reuse a call id (the plugin does not, but nothing forbids it): a cancel reaches them all.
    // A forwarded port's relays (quiet) are no process of the session's: not listed, nothing kept.
    if (!prepared.quiet) running.set(key, (running.get(key) ?? new Set()).add(entry));
    let ended: Ended = { ok: false, error: "it did not start" };
    let record: ReturnType<ExecHistory["start"]> | undefined;
    const finish = (outcome: Parameters<ReturnType<ExecHistory["start"]>["finish"]>[0]) => unlessFailing(() => record?.finish(outcome));
    // A terminal's screen is no place for after-notes, and a quiet relay has no reader.
    const after = prepared.command.terminal || prepared.quiet ? NO_NOTES : notesFor(prepared);
    /** Said where the command's output is read (the CLI, the plugin's tool output, the history's tail), after its own output. */
    const tell = async (line: string) => {
      const bytes = new TextEncoder().encode(line);
      record?.chunk(bytes);
      ring.push("stderr", bytes);
      await hooks.onChunk("stderr", bytes);
    };
    try {
      const outcome = await supervisor.exec({
        rootSessionID: prepared.rootSessionID,
        spec: prepared.spec,
        command: prepared.command,
        callID: prepared.callID,
        signal: abort.signal,
        ...(prepared.quiet ? { quiet: true as const } : {}),
        onStarted: () => {
          if (prepared.quiet) return hooks.onStarted();
          record = unlessFailing(() => history.start({
            id: entry.historyId,
            rootSessionID: prepared.rootSessionID,
            sessionID: prepared.sessionId,
            callID: prepared.callID,
            vmName: prepared.spec.name,
            command,
            cwd: prepared.command.cwd,
          }));
          hooks.onStarted();
        },
        onChunk: (stream, data) => {
          after.chunk(stream, data);
          record?.chunk(data);
          if (!prepared.quiet) ring.push(stream, data);
          return hooks.onChunk(stream, data);
        },
        ...(hooks.onTerminal ? { onTerminal: hooks.onTerminal } : {}),
        ...(hooks.stdin ? { stdin: hooks.stdin } : {}),
      });
      for (const line of after.notes(outcome)) await tell(line);
      // 137 alone does not say why.
      if (outcome.oomKilled) await tell(oomMessage(prepared));
      finish({ ...outcome, error: null });
      ended = { ok: true, outcome };
      return outcome;
    } catch (error) {
      const reason = error instanceof DomainError ? `${error.errorCode}: ${error.message}` : String(error);
      finish({ exitCode: null, timedOut: false, cancelled: abort.signal.aborted, oomKilled: false, error: reason });
      ended = { ok: false, error: reason };
      throw error;
    } finally {
      const set = running.get(key);
      set?.delete(entry);
      if (set?.size === 0) running.delete(key);
      ring.close();
      done.resolve(ended);
    }
  }

  /**
   * Cancels every running command of the root with this call id and waits (at most CANCEL_WAIT_MS) for
   * them to end. Answers their history ids; none when nothing with that call id runs.
   */
  async function cancel(rootSessionID: string, callID: string): Promise<string[]> {
    const entries = [...(running.get(keyOf(rootSessionID, callID)) ?? [])];
    for (const entry of entries) entry.abort.abort();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, CANCEL_WAIT_MS)));
    await Promise.race([Promise.all(entries.map((entry) => entry.done)), waited]);
    clearTimeout(timer);
    return entries.map((entry) => entry.historyId);
  }

  /** The root's running commands (a child session: its own), oldest first. */
  function processes(rootSessionID: string, sessionId: string): ProcessView[] {
    return [...running.values()]
      .flatMap((set) => [...set])
      .filter((entry) => entry.rootSessionID === rootSessionID && (sessionId === rootSessionID || entry.sessionId === sessionId))
      .sort((a, b) => a.startedAt - b.startedAt)
      .map(({ callID, sessionId: session, vmName, command, startedAt, background, ring }) => ({ callID, sessionId: session, vmName, command, startedAt, background, outputBytes: ring.totalBytes, droppedBytes: ring.droppedBytes }));
  }

  /** The running command of the root with this call id (the latest, if several share it): its output and its end. */
  function output(rootSessionID: string, callID: string): { ring: OutputRing; ended: Promise<Ended> } | undefined {
    const entry = [...(running.get(keyOf(rootSessionID, callID)) ?? [])].at(-1);
    return entry ? { ring: entry.ring, ended: entry.done } : undefined;
  }

  return { run, cancel, processes, output };
}
