// Runs one guest command through `msb exec --stream`: forwards output as it arrives, enforces the
// timeout and the abort signal by killing the command's whole process tree inside the VM, and maps
// the end of the msb process to an ExecResult or a RuntimeError.
import type { FileSink } from "bun";
import type { ExecRequest, ExecResult, ExecSink, OutputRoom } from "../driver";
import { StdinFeed } from "../stdin-feed";
import { buildExecArgs, buildKillTreeArgs } from "./exec-args";
import { buildStopArgs } from "./lifecycle-args";
import { classifyExecExit } from "./exec-outcome";
import { type MsbCli, signalOf } from "./msb-cli";
import { StderrHoldback } from "./stderr-tail";

export type ExecTimings = {
  /** How long the kill-tree sweep may take before it is abandoned. */
  killTreeTimeoutMs: number;
  /** After the sweep, how long msb gets to notice the guest command ended before it is killed. */
  killGraceMs: number;
};

export const DEFAULT_EXEC_TIMINGS: ExecTimings = { killTreeTimeoutMs: 40_000, killGraceMs: 5_000 };

/** 128 + SIGKILL: how a command ended by a timeout or cancel is reported. */
const KILLED_EXIT_CODE = 137;
const STDERR_TAIL_BYTES = 4096;

/** Copies a stream to `onChunk`, reading no more while the consumer has no room (msb's pipe then fills, and the guest's writes block). */
async function pump(stream: ReadableStream<Uint8Array>, onChunk: (chunk: Uint8Array) => void, room: OutputRoom | undefined): Promise<void> {
  for await (const chunk of stream) {
    onChunk(chunk);
    const wait = room?.();
    if (wait) await wait;
  }
}

function keepTail(tail: string, chunk: Uint8Array): string {
  const joined = tail + new TextDecoder().decode(chunk);
  return joined.length > STDERR_TAIL_BYTES ? joined.slice(-STDERR_TAIL_BYTES) : joined;
}

export async function runExec(
  cli: MsbCli,
  name: string,
  request: ExecRequest,
  sink: ExecSink,
  timings: ExecTimings = DEFAULT_EXEC_TIMINGS,
): Promise<ExecResult> {
  const execId = crypto.randomUUID().replaceAll("-", "");
  const args = buildExecArgs(name, request, execId);
  if (request.signal?.aborted) return { exitCode: KILLED_EXIT_CODE, timedOut: false, cancelled: true };

  const startedAt = Date.now();
  const child = cli.spawn(args, request.stdin !== undefined);
  const stdin = request.stdin ? new StdinFeed(request.stdin) : undefined;
  if (stdin) void stdin.into(child.stdin as FileSink);
  let stopReason: "timeout" | "abort" | undefined;
  let sweep: Promise<void> | undefined;
  const killTree = (reason: "timeout" | "abort"): Promise<void> => {
    stopReason ??= reason;
    sweep ??= (async () => {
      const swept = await cli.run(buildKillTreeArgs(name, execId), { timeoutMs: timings.killTreeTimeoutMs }).catch(() => undefined);
      // A guest whose process limit the command exhausted (a fork bomb) cannot fork the sweep: only
      // powering the VM off ends the tree. The volume stays; the next exec or start boots it again.
      if (swept?.exitCode !== 0) await cli.run(buildStopArgs(name, { force: true }), { timeoutMs: timings.killTreeTimeoutMs }).catch(() => undefined);
      // The sweep ended the guest command, so msb should exit on its own; if the VM is gone it may not.
      const timer = setTimeout(() => child.kill("SIGKILL"), timings.killGraceMs);
      await child.exited;
      clearTimeout(timer);
    })();
    return sweep;
  };
  const timer = request.timeoutMs === undefined ? undefined : setTimeout(() => void killTree("timeout"), request.timeoutMs);
  const onAbort = () => void killTree("abort");
  request.signal?.addEventListener("abort", onAbort, { once: true });

  const stderr = new StderrHoldback((chunk) => sink.stderr(chunk));
  let stderrTail = "";
  try {
    await Promise.all([
      pump(child.stdout, (chunk) => sink.stdout(chunk), sink.room),
      pump(child.stderr, (chunk) => {
        stderrTail = keepTail(stderrTail, chunk);
        stderr.push(chunk);
      }, sink.room),
      child.exited,
    ]);
  } finally {
    stdin?.close();
    clearTimeout(timer);
    request.signal?.removeEventListener("abort", onAbort);
  }
  cli.traced(args, child, startedAt);

  const outcome = classifyExecExit({ exitCode: child.exitCode, signalCode: signalOf(child), heldStderr: stderr.heldText(), stderrTail, name });
  if (outcome.kind === "exited" && outcome.forwardHeld) stderr.release();
  else stderr.discard();
  // On msb's own timeout its --timeout killed the process group; the sweep also gets descendants
  // that left the group.
  if (outcome.kind === "timed-out") await killTree("timeout");
  else if (sweep) await sweep;
  if (stopReason) return { exitCode: KILLED_EXIT_CODE, timedOut: stopReason === "timeout", cancelled: stopReason === "abort" };
  if (outcome.kind === "runtime-error") throw outcome.error;
  return { exitCode: outcome.kind === "exited" ? outcome.exitCode : KILLED_EXIT_CODE, timedOut: false, cancelled: false };
}
