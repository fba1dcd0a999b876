// The host side of the exec agent (exec-agent.c; protocol there): one connection per command to the
// agent's socket in the VM, instead of a `crun exec` process. Every guarantee of the crun path holds:
// the command's bytes, env and cwd go as given; it runs only once the host has moved it into its own
// sub-cgroup (so cancellation kills exactly its tree, by the same cgroup kill); limits, seccomp,
// no_new_privs and the empty capability set are the VM's init's, which the agent and its commands inherit.
//
// The guest has no path to the socket (the host binds it in the VM's directory of the state dir, and crun
// hands the VM only the listener), but the agent is guest code all the same: the guest's root can kill it,
// or take it over. So the socket is opened without following links and must be a socket; the pid a handler
// reports must be a process of this VM's own cgroup (not its init); frames are bounded; a handler that does
// not report in time gets nothing; and anything wrong before the command was sent — when nothing of it has
// run — sends the command down the `crun exec` path. A taken-over agent can then only lie about its own
// VM's command, which the guest could do anyway.
import { closeSync, constants, fstatSync, openSync, readFileSync } from "node:fs";
import type { Socket } from "bun";
import { RuntimeError, type ExecRequest, type ExecResult, type ExecSink } from "../driver";
import { killCgroupBy, moveIntoCgroup, processesIn } from "./cgroup-tree";
import type { DriverContext } from "./context";
import { CANCEL_GRACE_MS, superviseExec } from "./exec-supervision";
import type { VmRecord } from "./vm-store";
import { procStatFields } from "../proc-stat";

/** Nothing of the command ran: the caller runs it with `crun exec` instead. */
export const AGENT_UNAVAILABLE = Symbol("exec agent unavailable");

/** The agent sends at most 64 KiB of output per frame and a few hundred bytes of anything else. */
const MAX_FRAME = 1 << 20;
/** How long an agent's early hang-up may take to show as its VM going down (tini notices its child's exit within 1 s). */
const VM_GOING_DOWN_MS = 1500;
/** How long a new handler may take to report itself before the host gives up on the agent for that command. */
const PLACE_TIMEOUT_MS = 2000;
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
    fd = openSync(ctx.paths.agentSocket(name), O_PATH | constants.O_NOFOLLOW);
  } catch {
    return undefined; // none: the VM booted without a listener (see startVm)
  }
  try {
    if (fstatSync(fd).isSocket()) return fd;
  } catch {
    // fall through
  }
  closeSync(fd);
  return undefined; // a link, a FIFO, a file: nothing the host may connect to (no VM can put one there)
}

/**
 * The handler hung up before the exit code. When it was killed — with the command's sub-cgroup, or with the
 * whole VM going down (its main process was killed, say: its init then exits and the kernel kills every
 * process of the VM) — the command's result is that SIGKILL, as `crun exec` reports it. A handler killed
 * while its VM runs on was killed by a process of the VM, unless the host cancelled the command (run() tells
 * the two apart). Otherwise the agent failed under the command, and that is the error.
 */
async function closedEarly(initPid: number, hostPid: number | undefined): Promise<Outcome> {
  const deadline = performance.now() + VM_GOING_DOWN_MS;
  for (;;) {
    if (!alive(initPid)) return { kind: "exit", code: 137 };
    if (hostPid !== undefined && !alive(hostPid)) return { kind: "exit", code: 137, handlerKilled: true };
    if (performance.now() >= deadline) break;
    await Bun.sleep(10);
  }
  return { kind: "failed", reason: "its exec agent closed the connection before the command's exit code (was the agent killed?)" };
}

/** The state letter of a process (`R`, `S`, `T`, `Z`…), or X when it is gone. */
function processState(pid: number): string {
  return procStatFields(pid)?.[0]?.[0] ?? "X";
}

/** A process that exists and has not exited (a zombie has). */
function alive(pid: number): boolean {
  return !"ZX".includes(processState(pid));
}

/**
 * Per VM name, the init pid of the boot whose agent did not answer a new connection in time (stopped by
 * the guest, say): for the rest of that boot its commands go straight to `crun exec` instead of each waiting
 * PLACE_TIMEOUT_MS first. The next boot has another init pid, and its agent is asked again.
 */
const unresponsive = new Map<string, number>();

type Outcome =
  | { kind: "unavailable" }
  /** `handlerKilled`: the VM runs on, but its handler died without a word (see closedEarly). */
  | { kind: "exit"; code: number; handlerKilled?: true }
  | { kind: "failed"; reason: string };

/** What the command's stderr gets when its handler was killed mid-command. */
const HANDLER_KILLED = new TextEncoder().encode(
  "session-sandbox: the exec agent's process running this command in the VM was killed before the command ended (by a process in the VM, or at the VM's memory limit); the rest of the command was stopped (exit 137)\n",
);

/**
 * One handler of the VM's agent, connected, and moved into a command's sub-cgroup: it runs the one command
 * sent to it. Placed just before its command, or ahead of time for the VM's next one (exec.ts).
 */
export type PlacedHandler = {
  /** The handler's host pid: it exits right after its command's exit code, and is no process of the command's. */
  hostPid: number;
  /** False once its connection closed (the agent or its VM went away): nothing can run on it. */
  usable(): boolean;
  /** Runs the command; AGENT_UNAVAILABLE when the handler was gone before anything of it ran. */
  run(request: ExecRequest, env: string[], sink: ExecSink): Promise<ExecResult | typeof AGENT_UNAVAILABLE>;
  /** Lets it go unused: the handler exits, nothing ran. */
  close(): void;
};

type Phase = "placing" | "ready" | "running";

/**
 * Connects to the VM's agent and places the handler it forks in `subPath` (which must exist). Undefined when
 * the agent cannot be used (none, a link or FIFO in its place, a pid that is not the VM's, any protocol
 * error): nothing ran, and the command goes to `crun exec`.
 */
export async function placeHandler(ctx: DriverContext, name: string, record: VmRecord, subPath: string): Promise<PlacedHandler | undefined> {
  const initPid = ctx.store.livePid(name);
  if (!initPid || unresponsive.get(name) === initPid) return undefined;
  const fd = openAgentSocket(ctx, name);
  if (fd === undefined) return undefined;

  let phase: Phase = "placing";
  let handlerPid: number | undefined;
  const placed = Promise.withResolvers<boolean>();
  let settle: (outcome: Outcome) => void = () => {};
  let socket: Socket<undefined> | undefined;
  let open = true;
  let buffered: Buffer = Buffer.alloc(0);
  let unsent: Uint8Array = new Uint8Array(0);
  const sendRest = () => {
    if (socket && unsent.length > 0) unsent = unsent.subarray(Math.max(0, socket.write(unsent)));
  };
  const end = () => {
    open = false;
    socket?.terminate();
  };
  /** Anything wrong before the command was sent ends the connection with nothing run. */
  const refuse = () => {
    end();
    placed.resolve(false);
    settle({ kind: "unavailable" });
  };

  /** Handles one frame; a promise when it was output the consumer has no room after: the frames after it wait. */
  const onFrame = (type: string, payload: Buffer): Promise<void> | undefined | void => {
    if (phase === "placing") {
      if (type !== "P" || payload.length !== 4) return refuse();
      handlerPid = hostPidOf(ctx, record, initPid, payload.readUInt32LE(0));
      if (handlerPid === undefined) return refuse();
      try {
        moveIntoCgroup(ctx.layout, subPath, handlerPid);
      } catch {
        return refuse(); // it exited meanwhile, or the VM is stopping: nothing ran
      }
      socket?.write("G");
      phase = "ready";
      return placed.resolve(true);
    }
    if (phase === "ready") return refuse(); // a handler speaks only once given its command
    if (type === "O" || type === "E") {
      if (type === "O") sink?.stdout(payload);
      else sink?.stderr(payload);
      return sink?.room?.();
    }
    if (type === "X" && payload.length === 4) return settle({ kind: "exit", code: payload.readUInt32LE(0) });
    if (type === "N") return settle({ kind: "exit", code: 127 });
    if (type === "F") return settle({ kind: "failed", reason: payload.toString("utf8") });
    settle({ kind: "failed", reason: `its exec agent sent a frame this host does not know (type ${JSON.stringify(type)})` });
  };
  let sink: ExecSink | undefined;

  /**
   * Backpressure: while the consumer has no room, the socket is paused, so the agent's writes block, the
   * command's pipe fills and the command's own writes block. Frames already read wait here, in order; the
   * hang-up waits behind them, so an exit code sent before it is never lost to a pause.
   */
  let waitingForRoom = false;
  let hungUp = false;
  const readFrames = () => {
    while (open && !waitingForRoom && buffered.length >= 5) {
      const size = buffered.readUInt32LE(1);
      if (size > MAX_FRAME) {
        if (phase !== "running") return refuse();
        return settle({ kind: "failed", reason: `its exec agent sent a frame of ${size} bytes (at most ${MAX_FRAME})` });
      }
      if (buffered.length < 5 + size) break;
      const type = String.fromCharCode(buffered[0]!);
      const payload = buffered.subarray(5, 5 + size);
      buffered = buffered.subarray(5 + size);
      const wait = onFrame(type, payload);
      if (wait) {
        waitingForRoom = true;
        socket?.pause();
        void wait.then(() => {
          waitingForRoom = false;
          socket?.resume();
          readFrames();
        });
      }
    }
    if (hungUp && !waitingForRoom) onHangUp();
  };
  const onData = (chunk: Buffer) => {
    buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
    readFrames();
  };
  const onHangUp = () => {
    if (!open) return;
    open = false;
    if (phase !== "running") return refuse();
    void closedEarly(initPid, handlerPid).then((outcome) => settle(outcome));
  };
  const onClose = () => {
    hungUp = true;
    if (!waitingForRoom) onHangUp();
  };

  try {
    socket = await Bun.connect({
      unix: `/proc/self/fd/${fd}`,
      socket: {
        data: (_socket, chunk) => onData(Buffer.from(chunk)),
        drain: () => sendRest(),
        close: onClose,
        error: onClose,
      },
    });
  } catch {
    return undefined; // refused: nobody listens (the agent was killed)
  } finally {
    closeSync(fd);
  }
  // An agent answers within milliseconds; one that does not (a fake, a frozen VM) gets no command: after
  // PLACE_TIMEOUT_MS the command goes to crun exec, having run nothing, and so does the rest of this boot's.
  // No command is cut by this.
  const timer = setTimeout(() => {
    unresponsive.set(name, initPid);
    refuse();
  }, PLACE_TIMEOUT_MS);
  const ok = await placed.promise;
  clearTimeout(timer);
  if (!ok) return undefined;

  return {
    hostPid: handlerPid!,
    usable: () => open && phase === "ready",
    close: end,
    async run(request, env, commandSink) {
      const encoded = encodeRequest(request, env);
      // A handler killed or stopped since it was placed (from inside the VM) takes no command: crun exec
      // does, nothing ran. (A stopped one would hold the command until its timeout.)
      if (!open || phase !== "ready" || !encoded || request.signal?.aborted || "ZXTt".includes(processState(handlerPid!))) {
        end();
        return AGENT_UNAVAILABLE;
      }
      const outcome = new Promise<Outcome>((resolve) => (settle = resolve));
      sink = commandSink;
      phase = "running";
      unsent = encoded;
      sendRest();
      const finish = (result: Outcome) => {
        settle(result);
        end();
      };
      // Cancellation kills the sub-cgroup, the handler with its command, exactly as for `crun exec`.
      const exited = outcome.then((o) => (o.kind === "exit" ? o.code : 0));
      const { cancelReason, cancelled, disarm } = superviseExec({ exited, kill: () => finish({ kind: "failed", reason: "cancelled" }) }, request, async (running, deadline) => {
        // Until the sub-cgroup is empty, whatever the agent says: the handler dies in the same kill, and its
        // hang-up settles the command before the last of a fork bomb's processes are gone.
        await killCgroupBy(ctx.layout, subPath, deadline);
        const reportBy = Math.min(deadline, performance.now() + AGENT_REPORT_AFTER_KILL_MS);
        while (running() && performance.now() < reportBy) await Bun.sleep(10);
      });
      try {
        const result = await outcome;
        end();
        // The handler dies in the kill and its hang-up settles the outcome first: the next command must not
        // start while the rest of the tree (a fork bomb's, holding the pids limit) is still being killed.
        await cancelled();
        const reason = cancelReason();
        if (reason) return { exitCode: result.kind === "exit" ? result.code : 137, timedOut: reason === "timeout", cancelled: reason === "abort" };
        if (result.kind === "unavailable") return AGENT_UNAVAILABLE;
        if (result.kind === "exit" && result.handlerKilled) {
          // Nothing of the command runs on after its result: its sub-cgroup goes the way a timeout's does.
          await killCgroupBy(ctx.layout, subPath, performance.now() + CANCEL_GRACE_MS);
          commandSink.stderr(HANDLER_KILLED);
          return { exitCode: 137, timedOut: false, cancelled: false };
        }
        if (result.kind === "failed") throw new RuntimeError("FAILED", `exec in VM ${name} failed: ${result.reason}`);
        return { exitCode: result.code, timedOut: false, cancelled: false };
      } finally {
        disarm();
      }
    },
  };
}
