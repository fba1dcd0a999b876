// Runs one command in a running gVisor VM (`runsc exec --process`): streamed output, exit code, and on
// timeout or abort the kill of the exec's whole tree (process-tree.ts), which runsc kill delivers by pid.
//
// Resource exhaustion differs from the local tier: the Sentry is one host process set inside the VM's
// cgroup, so a guest that runs it out of memory or pids gets the whole VM killed by the host kernel (the
// host stays within the limits either way). The command then ends with 137 and a line on stderr saying
// why; the VM is stopped, with its volume, and the next command boots it again.
import type { FileSink } from "bun";
import { randomHex } from "../bun-crypto";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { guestUserProblem, RuntimeError, type ExecRequest, type ExecResult, type ExecSink } from "../driver";
import type { DriverContext } from "../local/context";
import { readLog } from "../local/crun";
import { envList, markOomKill, oomKillsIn, readyToExec, streamUntilExit, type ExecAttach } from "../local/exec";
import { superviseExec } from "../local/exec-supervision";
import { guestProcess } from "../local/oci-config";
import { StdinFeed } from "../stdin-feed";
import { holdStartupOutput } from "../local/startup-hold";
import { guestProcessOf, runscExecFlagsOf } from "./gvisor-config";
import { EXEC_MARKER_ENV, execTree, parseProcessTable, PROCESS_TABLE_SCRIPT, type GuestProcess } from "./process-tree";
import { runscId } from "./runsc";

const SANDBOX_DEATH_WAIT_MS = 3000;
const KILLED = 137;
const NOT_FOUND = 127;

async function waitUntil(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check() && performance.now() < deadline) await Bun.sleep(20);
}

/**
 * The guest's process table, read by a short exec of its own (a session of its own, no marker: never in a
 * tree), each process marked when its environment holds `marker` (NAME=VALUE).
 */
export async function guestProcesses(ctx: DriverContext, id: string, marker = `${EXEC_MARKER_ENV}=none`): Promise<GuestProcess[]> {
  const proc = Bun.spawn(ctx.runtime.argv(["exec", id, "/bin/sh", "-c", PROCESS_TABLE_SCRIPT, "sh", marker]), { stdin: "ignore", stdout: "pipe", stderr: "ignore" });
  const [text] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  return parseProcessTable(text);
}

/**
 * How long the kill of a timed-out or aborted command may take. Longer than the container tier's: each round
 * is a runsc exec that lists the guest's processes and a runsc kill per process, and on a loaded 2-core
 * machine two rounds of a fast-forking command took over 5 s (a CI run). Only a command that will not die
 * waits it out.
 */
const KILL_GRACE_MS = 15_000;

/**
 * SIGKILLs the exec's processes until none is left (a process with SIGKILL pending cannot fork): its tree
 * from `rootPid` while runsc exec still waits on that pid, then every process that still carries the exec's
 * marker, with its own tree — an orphan forked between a listing and its kill outlives the root.
 */
async function killExecTree(ctx: DriverContext, id: string, execId: string, rootPid: number, runscRunning: () => boolean, deadline: number): Promise<void> {
  while (performance.now() < deadline) {
    // Once runsc exec has returned, the root's pid may be another process's: only the marker counts then
    // (-1 matches no pid, parent, group or session; 0 would match every process runsc exec started).
    const root = runscRunning() ? rootPid : -1;
    const members = execTree(await guestProcesses(ctx, id, `${EXEC_MARKER_ENV}=${execId}`), root);
    if (members.length === 0) {
      if (!runscRunning()) return;
      await Bun.sleep(10);
      continue;
    }
    // Members first and the root last, so nothing is orphaned out of the tree between two kills.
    const ordered = [...members.filter((pid) => pid !== root), ...members.filter((pid) => pid === root)];
    await Promise.all(ordered.map((pid) => Bun.spawn(ctx.runtime.argv(["kill", "--pid", String(pid), id, "KILL"]), { stdout: "ignore", stderr: "ignore" }).exited));
  }
}

function readGuestPid(pidFile: string): number | undefined {
  try {
    const pid = Number(readFileSync(pidFile, "utf8").trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** `attach`: for a terminal (runtime/local/terminal.ts), stdin becomes a pipe, handed over with the command's guest pid. */
export async function execInSandbox(ctx: DriverContext, name: string, request: ExecRequest, sink: ExecSink, attach?: ExecAttach): Promise<ExecResult> {
  const record = readyToExec(ctx, name, request);
  const oomKillsBefore = oomKillsIn(ctx.layout, [record.cgroupPath]);

  const id = runscId(ctx.paths.containerId(name));
  const execId = randomHex(6);
  const processFile = join(ctx.paths.execDir(name), `${execId}.json`);
  const pidFile = join(ctx.paths.execDir(name), `${execId}.pid`);
  const logFile = join(ctx.paths.execDir(name), `${execId}.log`);
  if (request.env && EXEC_MARKER_ENV in request.env) throw new RuntimeError("FAILED", `environment variable ${EXEC_MARKER_ENV} is reserved by the driver`);
  const userProblem = request.user && guestUserProblem(request.user);
  if (userProblem) throw new RuntimeError("FAILED", userProblem);
  const env = [...envList(request.env), `${EXEC_MARKER_ENV}=${execId}`];
  const guest = guestProcessOf(record.spec, { ...guestProcess(request.argv, request.cwd, env), ...(request.user ? { user: request.user } : {}) });
  writeFileSync(processFile, JSON.stringify(guest), { mode: 0o600 });
  const proc = Bun.spawn(
    ctx.runtime.argv([...runscExecFlagsOf(record.spec), "--log", logFile, "--log-format", "json", "exec", "--process", processFile, "--internal-pid-file", pidFile, id]),
    { stdin: attach || request.stdin ? "pipe" : "ignore", stdout: "pipe", stderr: "pipe" },
  );
  // runsc exec has no retried start: one feed, closed with the command.
  const stdin = request.stdin && !attach ? new StdinFeed(request.stdin) : undefined;
  if (attach) attach({ pid: proc.pid, stdin: proc.stdin as FileSink, guestPid: () => readGuestPid(pidFile) });
  else if (stdin) void stdin.into(proc.stdin as FileSink);
  const { exitCode, cancelReason, cancelled, disarm } = superviseExec(
    proc,
    request,
    async (running, deadline) => {
      // The command's guest pid is known once runsc has started it.
      while (running() && readGuestPid(pidFile) === undefined && performance.now() < deadline) await Bun.sleep(10);
      const rootPid = readGuestPid(pidFile);
      if (rootPid) await killExecTree(ctx, id, execId, rootPid, running, deadline);
      while (running() && performance.now() < deadline) await Bun.sleep(10);
    },
    KILL_GRACE_MS,
  );

  // runsc prints its own failures (e.g. a program not found) on the command's stderr: held until the command surely ran.
  const hold = holdStartupOutput(sink);
  try {
    const code = await streamUntilExit(proc, exitCode, hold.sink);
    // A cancelled command's result waits until nothing of it is left (orphans included), as on the local tier.
    await cancelled();
    const runscError = readLog(logFile);
    const started = existsSync(pidFile);
    if (!started && !cancelReason() && /error finding executable|no such file or directory/i.test(runscError)) {
      hold.discard();
      return { exitCode: NOT_FOUND, timedOut: false, cancelled: false };
    }
    // runsc exec fails (128) when the sandbox dies under it; the host kernel may take a moment to finish it.
    if (code === 128 && runscError && !cancelReason()) await waitUntil(() => !ctx.store.livePid(name), SANDBOX_DEATH_WAIT_MS);
    if (!ctx.store.livePid(name)) {
      // The whole VM died under the command: the host killed the Sentry at the VM's memory or pids limit.
      // Its cgroup is still there (the VM is powered off later): its OOM count tells which.
      hold.release();
      const died = markOomKill({ exitCode: KILLED, timedOut: cancelReason() === "timeout", cancelled: cancelReason() === "abort" }, ctx.layout, [record.cgroupPath], oomKillsBefore);
      const limit = died.oomKilled ? "memory limit" : "memory or process limit";
      sink.stderr(new TextEncoder().encode(`session-sandbox: VM ${name} was stopped: it reached its ${limit} (a gVisor VM stops as a whole); its volume is kept and the next command starts it again\n`));
      return died;
    }
    if (!started && !cancelReason() && code !== 0) {
      hold.discard();
      throw new RuntimeError("FAILED", `exec in VM ${name} failed: ${runscError || `runsc exit ${code}`}`);
    }
    hold.release();
    return markOomKill({ exitCode: code, timedOut: cancelReason() === "timeout", cancelled: cancelReason() === "abort" }, ctx.layout, [record.cgroupPath], oomKillsBefore);
  } finally {
    stdin?.close();
    hold.release();
    disarm();
    for (const file of [processFile, pidFile, logFile]) rmSync(file, { force: true });
  }
}
