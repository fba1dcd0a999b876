// GET /api/sessions/:id/shell (WebSocket): an interactive shell on a PTY inside the session's VM.
// Client → server: binary frames are keystrokes; text frames are JSON control messages
//   {"type":"resize","rows":R,"cols":C} · {"type":"eof"}.
// Server → client: binary frames are terminal output; text frames are JSON
//   {"type":"started","vmName"} · {"type":"exit","exitCode","timedOut","cancelled"} · {"type":"error","code","status","message"},
// and the server closes the socket after exit or error. Only 401 (token) and 422 (query) refuse the
// upgrade itself; exec's other refusals (not sandboxed, cap, runtime down, …) come as an error message,
// since a WebSocket client cannot read the body of a refused handshake. Closing the socket kills the shell.
// This route only frames the socket; app/services/exec.ts runs the shell.
import { Elysia, t } from "elysia";
import { DomainError } from "../errors";
import { SessionParams } from "../http/schemas";
import type { ExecService } from "../services/exec";
import type { TerminalControl } from "../supervisor/supervisor";
import { createWakeSignal } from "../../workers/output-window";

type ShellServerMessage =
  | { type: "started"; vmName: string }
  | { type: "exit"; exitCode: number; timedOut: boolean; cancelled: boolean; oomKilled: boolean }
  /** `status` is the HTTP status the same refusal has on exec. */
  | { type: "error"; code: string; status: number; message: string };

type ShellClientMessage = { type: "resize"; rows: number; cols: number } | { type: "eof" };

const Dimension = t.Numeric({ minimum: 1, maximum: 1000, multipleOf: 1 });
const ShellQuery = t.Object(
  {
    rows: t.Optional(Dimension),
    cols: t.Optional(Dimension),
    term: t.Optional(t.String({ pattern: "^[A-Za-z0-9._+-]{1,64}$", description: "TERM in the VM; default xterm-256color" })),
    ticket: t.Optional(t.String({ maxLength: 128, description: "A single-use ticket (POST …/shell/tickets) instead of the Authorization header, which a browser cannot send on a WebSocket" })),
  },
  { additionalProperties: false },
);

/** WebSocket close codes: 1000 after the shell exited, 1011 when it could not run or the runtime failed. */
const SHELL_CLOSE = { exited: 1000, failed: 1011 } as const;

const validSize = (n: unknown): n is number => Number.isInteger(n) && (n as number) >= 1 && (n as number) <= 1000;

function parseControl(message: unknown): ShellClientMessage | undefined {
  if (typeof message !== "object" || message === null) return undefined;
  const m = message as Record<string, unknown>;
  if (m.type === "eof") return { type: "eof" };
  if (m.type === "resize" && validSize(m.rows) && validSize(m.cols)) return { type: "resize", rows: m.rows, cols: m.cols };
  return undefined;
}

type Connection = {
  abort: AbortController;
  control?: TerminalControl;
  started: boolean;
  early: (Uint8Array | null)[];
  size?: { rows: number; cols: number };
  /** Woken when the socket drained (or closed): the shell's output waits on it while the operator's socket is full. */
  drained: ReturnType<typeof createWakeSignal>;
};
type Socket = { send(data: string | Uint8Array): unknown; close(code?: number, reason?: string): unknown; readyState: number; getBufferedAmount(): number };

/**
 * Output queued on the operator's socket before the shell's output waits for it to drain (backpressure: the
 * shell in the VM is paused, as behind a slow terminal). Far below Bun's backpressureLimit, past which
 * `send` would drop the frame.
 */
const SHELL_HIGH_WATER_BYTES = 1024 * 1024;

/** Sends terminal output; a promise when the socket is above its mark, settled by its drain or close. */
function sendOutput(socket: Socket, connection: Connection, data: Uint8Array): Promise<void> | undefined {
  if (socket.readyState !== 1) return undefined;
  socket.send(data);
  return socket.getBufferedAmount() < SHELL_HIGH_WATER_BYTES ? undefined : connection.drained.wait();
}

export function shellRoutes(execService: ExecService) {
  const connections = new WeakMap<object, Connection>();

  /** Reports why the shell could not run or ended (the exec service counted a refusal). */
  function fail(socket: Socket, error: unknown): void {
    const record = error instanceof DomainError ? { code: error.errorCode, status: error.status, message: error.message } : { code: "INTERNAL", status: 500, message: String(error) };
    if (socket.readyState === 1) socket.send(JSON.stringify({ type: "error", ...record } satisfies ShellServerMessage));
    socket.close(SHELL_CLOSE.failed, record.code);
  }

  /** Every refusal of exec applies; they come as an error message after the upgrade, which every WebSocket client can read. */
  function start(socket: Socket, sessionId: string, options: { rows: number; cols: number; term?: string }, connection: Connection): void {
    const send = (message: ShellServerMessage) => socket.readyState === 1 && socket.send(JSON.stringify(message));
    void execService
      .shell(sessionId, options, {
        signal: connection.abort.signal,
        onStarted: (vmName) => {
          connection.started = true;
          send({ type: "started", vmName });
          for (const data of connection.early.splice(0)) connection.control?.input(data);
          if (connection.size) connection.control?.resize(connection.size.rows, connection.size.cols);
        },
        onChunk: (_stream, data) => sendOutput(socket, connection, data),
        onTerminal: (control) => void (connection.control = control),
      })
      .then(
        (outcome) => {
          if (!outcome) return; // closed while it was being prepared: nothing ran
          send({ type: "exit", ...outcome });
          socket.close(SHELL_CLOSE.exited, "exited");
        },
        (error: unknown) => fail(socket, error),
      );
  }

  return new Elysia({ tags: ["exec"] }).ws("/api/sessions/:id/shell", {
    params: SessionParams,
    query: ShellQuery,
    open(ws) {
      const connection: Connection = { abort: new AbortController(), started: false, early: [], drained: createWakeSignal() };
      connections.set(ws.raw, connection);
      const { params, query } = ws.data;
      start(ws.raw as unknown as Socket, params.id, { rows: query.rows ?? 24, cols: query.cols ?? 80, term: query.term }, connection);
    },
    message(ws, message) {
      const connection = connections.get(ws.raw);
      if (!connection) return;
      const forward = (data: Uint8Array | null) => (connection.started ? connection.control?.input(data) : connection.early.push(data));
      if (message instanceof Uint8Array) return void forward(message);
      const control = parseControl(message);
      if (control?.type === "eof") forward(null);
      else if (control?.type === "resize") {
        connection.size = { rows: control.rows, cols: control.cols };
        if (connection.started) connection.control?.resize(control.rows, control.cols);
      }
    },
    drain(ws) {
      connections.get(ws.raw)?.drained.wake();
    },
    close(ws) {
      const connection = connections.get(ws.raw);
      connection?.abort.abort(); // the operator went away: kill the shell in the VM
      connection?.drained.wake();
    },
    detail: { operationId: "openShell", summary: "Interactive shell on a PTY in the session's VM (WebSocket; binary frames carry keystrokes and output, JSON text frames resize and report exit)" },
  });
}
