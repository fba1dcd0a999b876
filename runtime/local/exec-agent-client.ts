// The host side of the exec agent (exec-agent.c; protocol there): one connection per command to the
// agent's socket in the VM, instead of a `crun exec` process. Every guarantee of the crun path holds:
// the command's bytes, env and cwd go as given; it runs only once the host has moved it into its own
// sub-cgroup (so cancellation kills exactly its tree, by the same cgroup kill); limits, seccomp,
// no_new_privs and the empty capability set are the VM's init's, which the agent and its commands inherit.
//
// The agent is guest code: the guest's root can kill it, replace its socket with a link, a FIFO or a fake
// agent. So the socket is opened without following links and must be a socket; the pid it reports must
// be a process of this VM's own cgroup (not its init); frames are bounded; and anything wrong before the
// host said "go" — when nothing of the command has run — sends the command down the `crun exec` path.
// A fake agent can then only lie about its own VM's command, which the guest could do anyway.
import { closeSync, constants, fstatSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Socket } from "bun";
import { RuntimeError, type ExecRequest, type ExecResult, type ExecSink } from "../driver";
import { killCgroup, moveIntoCgroup, processesIn } from "./cgroup-tree";
import type { DriverContext } from "./context";
import { superviseExec } from "./exec";
import type { VmRecord } from "./vm-store";

/** Where the agent program and its socket directory are in every guest (on the VM's /run tmpfs, like its init). */
export const GUEST_EXEC_AGENT = "/run/vm-exec-agent";
export const GUEST_AGENT_DIR = "/run/sandbox-agent";
export const AGENT_SOCKET = "agent.sock";

/** Nothing of the command ran: the caller runs it with `crun exec` instead. */
export const AGENT_UNAVAILABLE = Symbol("exec agent unavailable");

/** The agent sends at most 64 KiB of output per frame and a few hundred bytes of anything else. */
const MAX_FRAME = 1 << 20;
/** How long an agent's early hang-up may take to show as its VM going down (tini notices its child's exit within 1 s). */
const VM_GOING_DOWN_MS = 1500;
/** After a cancelled command's tree is gone, how long its agent may take to send the exit (it drains output for 100 ms). */
const AGENT_REPORT_AFTER_KILL_MS = 1000;
/** Linux has no O_PATH in node:fs constants: opens the inode itself (a link stays a link with O_NOFOLLOW). */
const O_PATH = 0o10000000;

/** argc, envc, then cwd, argv and env as NUL-terminated strings, behind a u32 length. */
function encodeRequest(request: ExecRequest, env: string[]): Uint8Array | undefined {
  const strings = [request.cwd, ...request.argv, ...env];
  // A NUL cannot be part of an argument; `crun exec` gives the reason for such a request.
  if (strings.some((s) => s.includes("\0"))) return undefined;
  const body = Buffer.from(strings.map((s) => `${s}\0`).join(""), "utf8");
  const out = Buffer.alloc(12 + body.length);
  out.writeUInt32LE(8 + body.length, 0);
  out.writeUInt32LE(request.argv.length, 4);
  out.writeUInt32LE(env.length, 8);
  body.copy(out, 12);
  return out;
}

/** The host pid of the VM's process whose pid in the guest is `guestPid`, among those directly in its cgroup. */
function hostPidOf(ctx: DriverContext, record: VmRecord, initPid: number, guestPid: number): number | undefined {
  for (const pid of processesIn(ctx.layout, record.cgroupPath)) {
    if (pid === initPid) continue;
    let status: string;
    try {
      status = readFileSync(`/proc/${pid}/status`, "utf8");
    } catch {
      continue; // exited meanwhile
    }
    const nspid = /^NSpid:\s*(.*)$/m.exec(status)?.[1]?.trim().split(/\s+/);
    // The last field is the pid in the innermost namespace: the VM's.
    if (nspid && nspid.length > 1 && Number(nspid[nspid.length - 1]) === guestPid) return pid;
  }
  return undefined;
}

/** The agent's socket, opened without following a link, or undefined when it is not a socket we may use. */
function openAgentSocket(ctx: DriverContext, name: string): number | undefined {
  let fd: number;
  try {
    fd = openSync(join(ctx.paths.agentDir(name), AGENT_SOCKET), O_PATH | constants.O_NOFOLLOW);
  } catch {
    return undefined; // gone (the agent died before binding, or the guest removed it)
  }
  try {
    if (fstatSync(fd).isSocket()) return fd;
  } catch {
    // fall through
  }
  closeSync(fd);
  return undefined; // a link, a FIFO, a file: the guest put it there
}

/**
 * The agent hung up before the exit code. When the VM itself is going down (its main process was killed,
 * say: its init then exits and the kernel kills every process of the VM), the command's result is that
 * SIGKILL, as `crun exec` reports it. Otherwise the agent died under the command, and that is the error.
 */
async function closedEarly(initPid: number, hostPid: number | undefined): Promise<Outcome> {
  const deadline = performance.now() + VM_GOING_DOWN_MS;
  for (;;) {
    if (!alive(initPid) || (hostPid !== undefined && !alive(hostPid))) return { kind: "exit", code: 137 };
    if (performance.now() >= deadline) break;
    await Bun.sleep(10);
  }
  return { kind: "failed", reason: "its exec agent closed the connection before the command's exit code (was the agent killed?)" };
}

/** A process that exists and has not exited (a zombie has). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !"ZX".includes(stat[stat.lastIndexOf(")") + 2] ?? "X");
  } catch {
    return false;
  }
}

type Outcome =
  | { kind: "unavailable" }
  | { kind: "exit"; code: number }
  | { kind: "failed"; reason: string };

/**
 * Runs the command through the VM's agent, in the sub-cgroup `subPath` (created by the caller), or returns
 * AGENT_UNAVAILABLE when nothing of it ran and `crun exec` should run it instead.
 */
export async function execThroughAgent(
  ctx: DriverContext,
  name: string,
  record: VmRecord,
  request: ExecRequest,
  env: string[],
  sink: ExecSink,
  subPath: string,
): Promise<ExecResult | typeof AGENT_UNAVAILABLE> {
  const initPid = ctx.store.livePid(name);
  const encoded = encodeRequest(request, env);
  if (!initPid || !encoded || request.signal?.aborted) return AGENT_UNAVAILABLE;
  const fd = openAgentSocket(ctx, name);
  if (fd === undefined) return AGENT_UNAVAILABLE;

  let started = false;
  let commandPid: number | undefined;
  let settle!: (outcome: Outcome) => void;
  const outcome = new Promise<Outcome>((resolve) => (settle = resolve));
  let socket: Socket<undefined> | undefined;
  const finish = (result: Outcome) => {
    settle(result);
    socket?.terminate();
  };
  let buffered: Buffer = Buffer.alloc(0);
  // A large request (a long argv or environment) may not fit the socket's buffer at once: the rest goes on `drain`.
  let unsent: Uint8Array = encoded;
  const sendRest = () => {
    if (!socket || unsent.length === 0) return;
    unsent = unsent.subarray(Math.max(0, socket.write(unsent)));
  };

  const onFrame = (type: string, payload: Buffer) => {
    if (!started) {
      if (type !== "P" || payload.length !== 4) return finish({ kind: "unavailable" });
      const hostPid = hostPidOf(ctx, record, initPid, payload.readUInt32LE(0));
      if (hostPid === undefined) return finish({ kind: "unavailable" });
      try {
        moveIntoCgroup(ctx.layout, subPath, hostPid);
      } catch {
        return finish({ kind: "unavailable" }); // it exited meanwhile, or the VM is stopping: nothing ran
      }
      started = true;
      commandPid = hostPid;
      socket?.write("G");
      return;
    }
    if (type === "O") return sink.stdout(payload);
    if (type === "E") return sink.stderr(payload);
    if (type === "X" && payload.length === 4) return finish({ kind: "exit", code: payload.readUInt32LE(0) });
    if (type === "N") return finish({ kind: "exit", code: 127 });
    if (type === "F") return finish({ kind: "failed", reason: payload.toString("utf8") });
    finish({ kind: "failed", reason: `its exec agent sent a frame this host does not know (type ${JSON.stringify(type)})` });
  };

  const onData = (chunk: Buffer) => {
    buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
    while (buffered.length >= 5) {
      const size = buffered.readUInt32LE(1);
      if (size > MAX_FRAME) return finish(started ? { kind: "failed", reason: `its exec agent sent a frame of ${size} bytes (at most ${MAX_FRAME})` } : { kind: "unavailable" });
      if (buffered.length < 5 + size) return;
      const type = String.fromCharCode(buffered[0]!);
      const payload = buffered.subarray(5, 5 + size);
      buffered = buffered.subarray(5 + size);
      onFrame(type, payload);
    }
  };

  try {
    socket = await Bun.connect({
      unix: `/proc/self/fd/${fd}`,
      socket: {
        data: (_socket, chunk) => onData(Buffer.from(chunk)),
        drain: () => sendRest(),
        close: () => (started ? void closedEarly(initPid, commandPid).then(finish) : finish({ kind: "unavailable" })),
        error: () => finish(started ? { kind: "failed", reason: "the connection to its exec agent failed" } : { kind: "unavailable" }),
      },
    });
  } catch {
    return AGENT_UNAVAILABLE; // refused: nobody listens (the agent was killed)
  } finally {
    closeSync(fd);
  }
  sendRest();

  // Cancellation kills the sub-cgroup, exactly as for `crun exec`; the agent then reports the exit (137).
  const exited = outcome.then((o) => (o.kind === "exit" ? o.code : 0));
  const { cancelReason, disarm } = superviseExec({ exited, kill: () => finish({ kind: "failed", reason: "cancelled" }) }, request, async (running, deadline) => {
    if (!started) return finish({ kind: "unavailable" }); // not started: nothing to kill
    // Once the sub-cgroup is empty nothing of the command lives; its agent then has a moment to report.
    while (running() && performance.now() < deadline && !(await killCgroup(ctx.layout, subPath, 1000))) await Bun.sleep(20);
    const reportBy = Math.min(deadline, performance.now() + AGENT_REPORT_AFTER_KILL_MS);
    while (running() && performance.now() < reportBy) await Bun.sleep(10);
  });
  try {
    const result = await outcome;
    const reason = cancelReason();
    if (result.kind === "unavailable") return reason ? { exitCode: 137, timedOut: reason === "timeout", cancelled: reason === "abort" } : AGENT_UNAVAILABLE;
    if (reason) return { exitCode: result.kind === "exit" ? result.code : 137, timedOut: reason === "timeout", cancelled: reason === "abort" };
    if (result.kind === "failed") throw new RuntimeError("FAILED", `exec in VM ${name} failed: ${result.reason}`);
    return { exitCode: result.code, timedOut: false, cancelled: false };
  } finally {
    disarm();
  }
}
