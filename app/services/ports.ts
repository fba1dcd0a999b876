// Forwarded ports (POST/GET/DELETE /api/sessions/:id/ports): a listener on the host (loopback unless
// SANDBOX_FORWARD_HOST says otherwise) per forward, each connection relayed to the port inside the
// session's VM by a relay command run there (port-relay.ts), whatever the VM's egress policy: it is
// inbound only. A forward belongs to the root's VM: it closes when that VM stops running, is removed, or its
// session is toggled off or deleted, and never outlives the manager.
import type { TCPSocketListener } from "bun";
import { PortNotForwardedError, PortUnavailableError, VmNotRunningError } from "../errors";
import type { EventBus } from "../events/event-bus";
import type { Supervisor } from "../supervisor/supervisor";
import type { ExecService } from "./exec";
import { CONNECT_SCRIPT, relayHandlers, type RelayState } from "./port-relay";
import type { SessionSandboxService } from "./session-sandbox";

export type Forward = { port: number; hostPort: number; url: string; openedAt: number; connections: number };

type Open = Forward & { listener: TCPSocketListener<RelayState>; vmName: string; rootSessionID: string };

export type PortsDeps = {
  exec: Pick<ExecService, "startManaged">;
  sessionSandbox: Pick<SessionSandboxService, "get">;
  supervisor: Pick<Supervisor, "statusOf" | "watchStatus">;
  events: Pick<EventBus, "publish">;
  /** The host address forwards listen on (SANDBOX_FORWARD_HOST); loopback by default. */
  bindHost: string;
  now?: () => number;
};

export type ClosedReason = "closed" | "vm-stopped";

export function createPortsService({ exec, sessionSandbox, supervisor, events, bindHost, now = Date.now }: PortsDeps) {
  /** Open forwards by root session, then by guest port. */
  const open = new Map<string, Map<number, Open>>();
  const urlHost = bindHost.includes(":") ? `[${bindHost}]` : bindHost === "0.0.0.0" ? "127.0.0.1" : bindHost;

  const publish = (forward: Open, phase: "opened" | "closed", reason: ClosedReason | null) =>
    events.publish({ type: "port", phase, reason, rootSessionID: forward.rootSessionID, vmName: forward.vmName, port: forward.port, hostPort: forward.hostPort, url: forward.url, at: now() });

  function close(forward: Open, reason: ClosedReason): void {
    const ofRoot = open.get(forward.rootSessionID);
    if (ofRoot?.get(forward.port) !== forward) return;
    ofRoot.delete(forward.port);
    if (ofRoot.size === 0) open.delete(forward.rootSessionID);
    // true: its connections are cut too; their relays end with their sockets.
    forward.listener.stop(true);
    publish(forward, "closed", reason);
  }

  // A VM that stops running takes its forwards with it (stopped, evicted, removed, toggled off, deleted).
  supervisor.watchStatus((vmName, status) => {
    if (status === "running") return;
    for (const ofRoot of open.values()) for (const forward of [...ofRoot.values()]) if (forward.vmName === vmName) close(forward, "vm-stopped");
  });

  const view = ({ port, hostPort, url, openedAt, connections }: Open): Forward => ({ port, hostPort, url, openedAt, connections });

  return {
    /** Forwards `port` of the session's VM to `hostPort` (default: a free one) on the host. */
    open(sessionId: string, request: { port: number; hostPort?: number }): Forward {
      const { rootSessionID, vmName, sandboxed } = sessionSandbox.get(sessionId);
      if (!sandboxed) throw new VmNotRunningError(rootSessionID, "nothing runs there to forward to (its sandbox is off)");
      if (supervisor.statusOf(vmName) !== "running") throw new VmNotRunningError(rootSessionID, `port ${request.port} cannot be forwarded`);
      const existing = open.get(rootSessionID)?.get(request.port);
      if (existing) throw new PortUnavailableError(`port ${request.port} of session ${rootSessionID}'s VM is already forwarded, to ${existing.url}; close it first (DELETE …/ports/${request.port})`);
      let forward: Open;
      const handlers = relayHandlers(
        async ({ stdin, signal, onOutput, onStderr }) => {
          forward.connections += 1;
          const started = await exec.startManaged(rootSessionID, { argv: ["sh", "-c", CONNECT_SCRIPT, "sh", String(request.port)], label: `(port ${request.port} connection)`, quiet: true }, {
            signal,
            stdin,
            onChunk: (stream, data) => (stream === "stdout" ? onOutput(data) : (onStderr(data), undefined)),
          });
          return started.outcome.then((settled) => (settled.ok ? settled.result.exitCode : null));
        },
        () => {
          forward.connections = Math.max(0, forward.connections - 1);
        },
      );
      let listener: TCPSocketListener<RelayState>;
      try {
        listener = Bun.listen<RelayState>({ hostname: bindHost, port: request.hostPort ?? 0, socket: handlers });
      } catch (error) {
        throw new PortUnavailableError(`host port ${request.hostPort ?? "(any)"} on ${bindHost} cannot be listened on (${(error as Error).message}); leave hostPort out for a free one, or pick another`);
      }
      forward = { port: request.port, hostPort: listener.port, url: `http://${urlHost}:${listener.port}/`, openedAt: now(), connections: 0, listener, vmName, rootSessionID };
      open.set(rootSessionID, (open.get(rootSessionID) ?? new Map()).set(request.port, forward));
      publish(forward, "opened", null);
      return view(forward);
    },
    list(sessionId: string): Forward[] {
      const { rootSessionID } = sessionSandbox.get(sessionId);
      return [...(open.get(rootSessionID)?.values() ?? [])].sort((a, b) => a.port - b.port).map(view);
    },
    close(sessionId: string, port: number): Forward {
      const { rootSessionID } = sessionSandbox.get(sessionId);
      const forward = open.get(rootSessionID)?.get(port);
      if (!forward) throw new PortNotForwardedError(rootSessionID, port);
      close(forward, "closed");
      return view(forward);
    },
    /** Every forward closes (shutdown). */
    closeAll(): void {
      for (const ofRoot of [...open.values()]) for (const forward of [...ofRoot.values()]) close(forward, "vm-stopped");
    },
  };
}

export type PortsService = ReturnType<typeof createPortsService>;
