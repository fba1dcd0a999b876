// openShell: the client side of GET /api/sessions/:id/shell, an interactive shell on a PTY in a session's
// VM over a WebSocket. Bytes in and out; resize, end of input, and the remote exit code as a promise.
// The token goes in the Authorization header (Bun's WebSocket accepts headers; browsers cannot send them).
import { ManagerUnreachableError, SandboxError, toSdkError, UnexpectedResponseError, ValidationFailedError } from "./errors";

export type ShellOptions = {
  /** The terminal's size to start with; default 24 × 80. */
  rows?: number;
  cols?: number;
  /** TERM in the VM; default xterm-256color. */
  term?: string;
  /** Terminal output, as the guest's PTY wrote it (stdout and stderr merged). */
  onOutput(chunk: Uint8Array): void;
  /** The shell is running in this VM. */
  onStarted?(vmName: string): void;
};

export type ShellExit = { exitCode: number; timedOut: boolean; cancelled: boolean; oomKilled: boolean };

export type ShellConnection = {
  /** Keystrokes (Ctrl-C is "\x03": the guest's terminal turns it into SIGINT for its foreground program). */
  write(data: Uint8Array | string): void;
  resize(rows: number, cols: number): void;
  /** End of input: the shell reads end-of-file. */
  end(): void;
  /** Disconnects, which kills the shell and everything it runs in the VM. */
  close(): void;
  /** The shell's exit; rejects with a SandboxError when it could not run or the runtime failed. */
  exited: Promise<ShellExit>;
};

type ServerMessage = { type: "started"; vmName: string } | ({ type: "exit" } & ShellExit) | { type: "error"; code: string; status: number; message: string };

function shellUrl(baseUrl: string, sessionId: string, options: Pick<ShellOptions, "rows" | "cols" | "term">): string {
  const url = new URL(`/api/sessions/${encodeURIComponent(sessionId)}/shell`, baseUrl);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  url.searchParams.set("rows", String(options.rows ?? 24));
  url.searchParams.set("cols", String(options.cols ?? 80));
  if (options.term) url.searchParams.set("term", options.term);
  return url.href;
}

/**
 * A refused handshake (401 token, 422 query) shows a WebSocket client no body: ask the same URL over plain
 * HTTP, where the same checks answer with their JSON reason.
 */
async function handshakeFailure(wsUrl: string, token: string): Promise<SandboxError> {
  const url = wsUrl.replace(/^ws/, "http");
  try {
    const response = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // Not JSON: reported as it is.
    }
    // A WebSocket-only route has no plain GET: past the token check, the handshake was refused for its
    // path (a malformed session id) or its query.
    if (response.status === 404) return new UnexpectedResponseError(0, "UNEXPECTED_RESPONSE", `the manager refused the shell's WebSocket handshake at ${url}: check the session id`);
    return toSdkError(response.status, body);
  } catch (error) {
    return new ManagerUnreachableError(0, "MANAGER_UNREACHABLE", `cannot reach the manager at ${new URL(url).origin}: ${(error as Error).message}`);
  }
}

const validSize = (n: number | undefined) => n === undefined || (Number.isInteger(n) && n >= 1 && n <= 1000);

export function openShell(connection: { url: string; token: string }, sessionId: string, options: ShellOptions): ShellConnection {
  // Checked here as the manager checks them: a refused handshake would not say which value was wrong.
  if (!validSize(options.rows) || !validSize(options.cols)) {
    throw new ValidationFailedError(422, "VALIDATION_FAILED", `terminal size ${options.rows ?? 24}x${options.cols ?? 80} is out of range: rows and cols are integers from 1 to 1000`);
  }
  if (options.term !== undefined && !/^[A-Za-z0-9._+-]{1,64}$/.test(options.term)) {
    throw new ValidationFailedError(422, "VALIDATION_FAILED", `TERM ${JSON.stringify(options.term)} is not a terminal name (letters, digits, . _ + -)`);
  }
  const url = shellUrl(connection.url, sessionId, options);
  // Bun's WebSocket takes headers (not in the DOM type).
  const socket = new WebSocket(url, { headers: { authorization: `Bearer ${connection.token}` } } as unknown as string[]);
  socket.binaryType = "arraybuffer";
  const { promise: exited, resolve, reject } = Promise.withResolvers<ShellExit>();
  // A caller that closes the shell on purpose need not await its end.
  exited.catch(() => undefined);
  let opened = false;
  let settled = false;
  const queue: (string | Uint8Array)[] = [];
  const send = (data: string | Uint8Array) => (socket.readyState === WebSocket.OPEN ? socket.send(data) : socket.readyState === WebSocket.CONNECTING && queue.push(data));
  const encoder = new TextEncoder();

  socket.onopen = () => {
    opened = true;
    for (const data of queue.splice(0)) socket.send(data);
  };
  socket.onmessage = (event: MessageEvent) => {
    if (event.data instanceof ArrayBuffer) return options.onOutput(new Uint8Array(event.data));
    const message = JSON.parse(String(event.data)) as ServerMessage;
    if (message.type === "started") options.onStarted?.(message.vmName);
    else if (message.type === "exit") {
      settled = true;
      resolve({ exitCode: message.exitCode, timedOut: message.timedOut, cancelled: message.cancelled, oomKilled: message.oomKilled === true });
    } else if (message.type === "error") {
      settled = true;
      reject(toSdkError(message.status, { code: message.code, message: message.message }));
    }
  };
  socket.onclose = (event: CloseEvent) => {
    if (settled) return;
    settled = true;
    if (!opened) void handshakeFailure(url, connection.token).then(reject);
    else reject(new ManagerUnreachableError(0, "MANAGER_UNREACHABLE", `the connection to the manager closed before the shell ended (code ${event.code}${event.reason ? `: ${event.reason}` : ""})`));
  };

  return {
    write: (data) => send(typeof data === "string" ? encoder.encode(data) : data),
    resize: (rows, cols) => send(JSON.stringify({ type: "resize", rows, cols })),
    end: () => send(JSON.stringify({ type: "eof" })),
    close: () => {
      if (!settled) {
        settled = true;
        reject(new ManagerUnreachableError(0, "MANAGER_UNREACHABLE", "the shell was closed by this client, which killed it"));
      }
      socket.close(1000);
    },
    exited,
  };
}
