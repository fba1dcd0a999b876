// Runs one command in a running VM: streamed output, exit code, and cancellation of its whole tree.
//
// Each exec gets its own sub-cgroup of the VM, into which the VM's exec agent's command is moved before it
// starts (exec-agent-client.ts), or `crun exec --cgroup` places it. Everything the command starts —
// including daemons that setsid() or re-parent to the VM's init — stays in it, so a timeout or abort
// kills exactly that tree, while background processes of earlier execs (in their own sub-cgroups) live on.
import type { FileSink } from "bun";
import { randomHex } from "../bun-crypto";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { egressSocketOf, RuntimeError, type ExecRequest, type ExecResult, type ExecSink, type OutputRoom } from "../driver";
import { createSubCgroup, EXEC_CGROUP_PREFIX, killCgroup, processesIn, removeCgroup, subCgroupExists, sweepSubCgroups } from "./cgroup-tree";
import { readLog } from "./crun";
import type { DriverContext } from "./context";
import { handEgressSocketToVm } from "./egress-socket";
import { AGENT_UNAVAILABLE, placeHandler, type PlacedHandler } from "./exec-agent-client";
import { superviseExec } from "./exec-supervision";
import { StdinFeed } from "../stdin-feed";
import { holdStartupOutput } from "./startup-hold";
import { defaultEnv, guestProcess } from "./oci-config";
import type { VmRecord } from "./vm-store";
import { readOomKills } from "./vm-stats";

/** After the command exits, how long output still held open by its background children is read. */
const DRAIN_AFTER_EXIT_MS = 100;
/** 128 + SIGKILL: how a command the kernel (or a cancel) killed ends. */
const KILLED_BY_SIGKILL = 137;
/**
 * How long the output's consumer has kept a command's pumps waiting for room: time the pumps could not read
 * does not count against the drain after exit, or a slow client would cost the output's tail.
 */
class PauseClock {
  private waiting = 0;
  private since = 0;
  private total = 0;

  async wait(room: Promise<void>): Promise<void> {
    if (this.waiting++ === 0) this.since = performance.now();
    try {
      await room;
    } finally {
      if (--this.waiting === 0) this.total += performance.now() - this.since;
    }
  }

  pausedMs(): number {
    return this.total + (this.waiting > 0 ? performance.now() - this.since : 0);
  }
}

/** Copies a stream to the sink, reading no more while the sink has no room; `stop` ends it early (closing our end of the pipe). */
function pump(stream: ReadableStream<Uint8Array>, write: (chunk: Uint8Array) => void, room: OutputRoom | undefined, clock: PauseClock): { done: Promise<void>; stop: () => void } {
  const reader = stream.getReader();
  const done = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      write(value);
      const wait = room?.();
      if (wait) await clock.wait(wait);
    }
  })().catch(() => {});
  return { done, stop: () => void reader.cancel().catch(() => {}) };
}

/**
 * Copies the runtime process's stdout and stderr to the sink until it exits, and its exit code. A background
 * child still holding the output must not keep the exec open: past DRAIN_AFTER_EXIT_MS its output is dropped.
 * Those are milliseconds in which the consumer had room: a paused command's tail is read once it is wanted.
 */
export async function streamUntilExit(proc: { stdout: ReadableStream<Uint8Array>; stderr: ReadableStream<Uint8Array> }, exitCode: Promise<number>, sink: ExecSink): Promise<number> {
  const clock = new PauseClock();
  const pumps = [pump(proc.stdout, (c) => sink.stdout(c), sink.room, clock), pump(proc.stderr, (c) => sink.stderr(c), sink.room, clock)];
  const code = await exitCode;
  const exitedAt = performance.now();
  const pausedAtExit = clock.pausedMs();
  const drained = Promise.all(pumps.map((p) => p.done)).then(() => true);
  for (;;) {
    const left = DRAIN_AFTER_EXIT_MS - (performance.now() - exitedAt - (clock.pausedMs() - pausedAtExit));
    if (left <= 0 || (await Promise.race([drained, Bun.sleep(left).then(() => false)]))) break;
  }
  for (const p of pumps) p.stop();
  return code;
}

/** The VM's record, once the VM runs, the request is well-formed and the VM's egress socket is its own. */
export function readyToExec(ctx: DriverContext, name: string, request: ExecRequest): VmRecord {
  const record = ctx.store.read(name);
  if (!record) throw new RuntimeError("NOT_FOUND", `VM ${name} does not exist`);
  if (!ctx.store.livePid(name)) throw new RuntimeError("FAILED", `VM ${name} is not running; start it first`);
  if (request.argv.length === 0) throw new RuntimeError("FAILED", "exec needs a non-empty argv");
  if (!request.cwd.startsWith("/")) throw new RuntimeError("FAILED", `exec cwd must be absolute, got ${request.cwd}`);
  const egressSocket = egressSocketOf(record.spec);
  if (egressSocket) handEgressSocketToVm(egressSocket, record.hostUidBase);
  return record;
}

export function envList(extra: Record<string, string> | undefined): string[] {
  const env = new Map(defaultEnv().map((kv) => [kv.slice(0, kv.indexOf("=")), kv] as const));
  for (const [key, value] of Object.entries(extra ?? {})) env.set(key, `${key}=${value}`);
  return [...env.values()];
}

/**
 * Sub-cgroups of the execs this thread is running. All execs of one VM go through one driver instance
 * (the session actor's), so this is enough to keep the sweep off a concurrent exec's fresh sub-cgroup.
 */
const inFlight = new Set<string>();

/**
 * crun exec sometimes fails to join a VM's namespaces with `setns(pid=…, CLONE_*): Operation not
 * permitted; fail startup`, under load and mostly right after the VM started (seen on this kernel with
 * crun 1.8.1, with and without the guest hardening). "fail startup" is reported by crun's child before it runs the
 * command, so nothing of the command ran: trying again cannot run it twice.
 */
/** crun's log lines come joined in either order: "setns(…): Operation not permitted; fail startup" or reversed. */
const joinFailed = (crunError: string) => /setns\([^)]*\)[^;]*: Operation not permitted/.test(crunError) && crunError.includes("fail startup");
const JOIN_ATTEMPTS = 5;

class JoinFailedError extends RuntimeError {}

/**
 * For a terminal (terminal.ts): stdin becomes a pipe, handed over with crun's host pid each time a
 * process is started (again after a retried join).
 */
export type ExecStarted = {
  /** The runtime process's host pid (crun exec; runsc exec). */
  pid: number;
  stdin: FileSink;
  /** The command's pid inside the guest, once the runtime has written it (runsc, whose guests are not host processes). */
  guestPid?: () => number | undefined;
};
export type ExecAttach = (started: ExecStarted) => void;

/**
 * Runs the command in a sub-cgroup of its own: through the VM's exec agent when it has one (a fork/exec in
 * the guest, exec-agent-client.ts), else — or when the agent cannot take it before anything ran — with
 * `crun exec`. A terminal (`attach`) always uses `crun exec`.
 */
export async function execInVm(ctx: DriverContext, name: string, request: ExecRequest, sink: ExecSink, attach?: ExecAttach): Promise<ExecResult> {
  if (request.user) throw new RuntimeError("FAILED", "a command as another guest user runs only on the gVisor tier (a Dockerfile build's USER)");
  const record = readyToExec(ctx, name, request);
  const spare = takeSpare(ctx, record);
  // The kernel counts an OOM kill in the victim's cgroup (v1: only there; v2: up the tree too): the
  // command's own sub-cgroup, or the VM's for what runs outside one.
  const counted = [record.cgroupPath, `${record.cgroupPath}/${spare.sub}`];
  const oomKillsBefore = oomKillsIn(ctx.layout, counted);
  return markOomKill(await execInSubCgroup(ctx, name, record, request, sink, spare, attach), ctx.layout, counted, oomKillsBefore);
}

/** The OOM kills counted in these cgroups together; undefined when the kernel does not count them. */
export function oomKillsIn(layout: DriverContext["layout"], cgroupPaths: string[]): number | undefined {
  const counts = cgroupPaths.map((path) => readOomKills(layout, path));
  return counts[0] === undefined ? undefined : counts.reduce<number>((sum, count) => sum + (count ?? 0), 0);
}

/**
 * Whether the memory limit killed the command: it ended by SIGKILL (its own, or its shell's report of its
 * child's: 137) while the OOM kill count of its cgroups rose. Read while its sub-cgroup still exists (it is
 * tidied after the result).
 */
export function markOomKill(result: ExecResult, layout: DriverContext["layout"], cgroupPaths: string[], before: number | undefined): ExecResult {
  if (result.exitCode !== KILLED_BY_SIGKILL || result.cancelled || result.timedOut || before === undefined) return result;
  const after = oomKillsIn(layout, cgroupPaths);
  return after !== undefined && after > before ? { ...result, oomKilled: true } : result;
}

async function execInSubCgroup(ctx: DriverContext, name: string, record: VmRecord, request: ExecRequest, sink: ExecSink, spare: Spare, attach?: ExecAttach): Promise<ExecResult> {
  // The agent's protocol carries no input: a command with stdin goes to `crun exec`, which pipes it.
  const stdin = request.stdin ? new StdinFeed(request.stdin) : undefined;
  try {
    if (!attach && !stdin && record.execAgent && ctx.execAgent) {
      const result = await execThroughAgent(ctx, name, record, request, sink, spare);
      if (result !== AGENT_UNAVAILABLE) return result;
    }
    for (let attempt = 1; ; attempt++) {
      try {
        return await crunExecOnce(ctx, name, request, sink, spare.sub, attach, stdin);
      } catch (error) {
        if (!(error instanceof JoinFailedError) || attempt >= JOIN_ATTEMPTS || request.signal?.aborted) throw error;
        if (stdin && !stdin.replayable()) throw new RuntimeError("FAILED", `${error.message}; not retried, because more of its input was read than can be given again`);
        await Bun.sleep(25 * attempt);
      }
    }
  } finally {
    stdin?.close();
    // The handler is done, or unused (the command went to crun exec): either way it exits.
    void Promise.resolve(spare.handler).then((handler) => {
      handler?.close();
      setImmediate(() => tidyAfterExec(ctx, name, record, spare.sub, handler?.hostPid));
    });
  }
}

/** On the handler placed ahead of time if it is still there, else on one placed now. */
async function execThroughAgent(ctx: DriverContext, name: string, record: VmRecord, request: ExecRequest, sink: ExecSink, spare: Spare): Promise<ExecResult | typeof AGENT_UNAVAILABLE> {
  const subPath = `${record.cgroupPath}/${spare.sub}`;
  let handler = await spare.handler;
  if (!handler?.usable()) {
    handler?.close();
    handler = await placeHandler(ctx, name, record, subPath);
    spare.handler = Promise.resolve(handler);
  }
  return handler ? handler.run(request, envList(request.env), sink) : AGENT_UNAVAILABLE;
}

/**
 * Per VM cgroup, the next command's sub-cgroup made ahead of time — creating one is a mkdir in each
 * hierarchy, several on a v1 host — and, with the exec agent, a handler of the agent already placed
 * in it (a connection, a fork in the guest and a write per hierarchy less on the command's path). It counts
 * as in flight, so no sweep removes it; stopping the VM removes it with the others, and its handler with it.
 */
type Spare = { sub: string; handler?: Promise<PlacedHandler | undefined> };
const spares = new Map<string, Spare>();

function takeSpare(ctx: DriverContext, record: VmRecord): Spare {
  const spare = spares.get(record.cgroupPath);
  spares.delete(record.cgroupPath);
  // Gone if the VM was stopped and started again since it was made.
  if (spare && subCgroupExists(ctx.layout, `${record.cgroupPath}/${spare.sub}`)) return spare;
  if (spare) {
    inFlight.delete(spare.sub);
    void spare.handler?.then((handler) => handler?.close());
  }
  return { sub: newSubCgroup(ctx, record) };
}

/** A new exec sub-cgroup of the VM, in flight from the start (no sweep removes it); nothing left if it fails. */
function newSubCgroup(ctx: DriverContext, record: VmRecord): string {
  const sub = `${EXEC_CGROUP_PREFIX}${randomHex(6)}`;
  inFlight.add(sub);
  try {
    createSubCgroup(ctx.layout, record.cgroupPath, sub);
  } catch (error) {
    inFlight.delete(sub);
    removeCgroup(ctx.layout, `${record.cgroupPath}/${sub}`);
    throw error;
  }
  return sub;
}

/**
 * After the result went out: the command's sub-cgroup, if it is empty, becomes the next command's; else it
 * stays while its background processes live, empty ones of earlier commands go, and the next command's is
 * made. Synchronous up to the handler's placement,
 * and only while the VM runs: stopping it marks it not running before its first await, so no sub-cgroup
 * appears while it is removed.
 */
function tidyAfterExec(ctx: DriverContext, name: string, record: VmRecord, sub: string, handlerPid?: number): void {
  try {
    const subPath = `${record.cgroupPath}/${sub}`;
    // The agent's handler may still be on its way out: it sent the exit code, then exits.
    // (Exec sub-cgroups have none below them: the processes in one are all of its processes.)
    const empty = subCgroupExists(ctx.layout, subPath) && processesIn(ctx.layout, subPath).every((pid) => pid === handlerPid);
    const wanted = !spares.has(record.cgroupPath) && ctx.store.livePid(name) !== undefined;
    // A command that left nothing behind leaves its sub-cgroup empty: it is the next one's, as it is.
    if (!(empty && wanted)) inFlight.delete(sub);
    if (empty && !wanted) removeCgroup(ctx.layout, subPath);
    sweepSubCgroups(ctx.layout, record.cgroupPath, inFlight);
    if (wanted) makeSpare(ctx, name, record, empty ? sub : newSubCgroup(ctx, record));
  } catch {
    // The VM went away meanwhile (stopping it removed its sub-cgroups), or no new one could be made.
  }
}

/** `sub` (existing, empty, in flight) becomes the VM's spare, with an agent handler placed in it. */
function makeSpare(ctx: DriverContext, name: string, record: VmRecord, sub: string): void {
  const handler = record.execAgent && ctx.execAgent ? placeHandler(ctx, name, record, `${record.cgroupPath}/${sub}`).catch(() => undefined) : undefined;
  spares.set(record.cgroupPath, { sub, handler });
}

/** One `crun exec` into the sub-cgroup `sub` (created by execInVm). */
async function crunExecOnce(ctx: DriverContext, name: string, request: ExecRequest, sink: ExecSink, sub: string, attach?: ExecAttach, stdin?: StdinFeed): Promise<ExecResult> {
  const record = readyToExec(ctx, name, request);
  const subPath = `${record.cgroupPath}/${sub}`;
  const id = randomHex(6);
  const processFile = join(ctx.paths.execDir(name), `${id}.json`);
  const logFile = join(ctx.paths.execDir(name), `${id}.log`);
  writeFileSync(processFile, JSON.stringify(guestProcess(request.argv, request.cwd, envList(request.env))), { mode: 0o600 });

  const proc = Bun.spawn(
    ctx.runtime.argv(["--log", `file:${logFile}`, "--log-format", "json", "exec", "--process", processFile, "--cgroup", sub, ctx.paths.containerId(name)]),
    { stdin: attach || stdin ? "pipe" : "ignore", stdout: "pipe", stderr: "pipe" },
  );
  if (attach) attach({ pid: proc.pid, stdin: proc.stdin as FileSink });
  else if (stdin) void stdin.into(proc.stdin as FileSink);
  const { exitCode, cancelReason, cancelled, disarm } = superviseExec(proc, request, async (running, deadline) => {
    // Until crun has returned and the sub-cgroup is empty: a kill can land before crun has moved the command
    // into the cgroup, and crun returns as soon as its command dies, before the last of a fork bomb's processes.
    while (performance.now() < deadline) {
      const empty = await killCgroup(ctx.layout, subPath, 1000);
      if (empty && !running()) return;
      await Bun.sleep(20);
    }
  });

  const hold = holdStartupOutput(sink);
  try {
    const code = await streamUntilExit(proc, exitCode, hold.sink);
    // A cancelled command's result waits for its whole tree to be gone, as through the agent: the next
    // command must not start while the rest (a fork bomb's, holding the pids limit) is still being killed.
    await cancelled();
    const crunError = readLog(logFile);
    if (crunError && !cancelReason() && joinFailed(crunError)) {
      hold.discard(); // crun's own complaint, printed before the command ran; the attempt is retried
      throw new JoinFailedError("FAILED", `exec in VM ${name} failed: ${crunError}`);
    }
    hold.release();
    if (crunError && !cancelReason()) {
      if (/executable file .* not found/.test(crunError)) return { exitCode: 127, timedOut: false, cancelled: false };
      throw new RuntimeError("FAILED", `exec in VM ${name} failed: ${crunError}`);
    }
    return { exitCode: code, timedOut: cancelReason() === "timeout", cancelled: cancelReason() === "abort" };
  } finally {
    hold.release();
    disarm();
    rmSync(processFile, { force: true });
    rmSync(logFile, { force: true });
  }
}
