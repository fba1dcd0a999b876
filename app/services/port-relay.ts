// One TCP connection of a forwarded port: the client's bytes become the stdin of a relay command in the
// session's VM (the VM relay, or socat, to the guest's own loopback), and its stdout goes back to the client. Both ways are
// paced: a client that reads slowly holds the guest's writes back, a guest that reads slowly pauses the
// client's socket. Nothing here opens anything on the host: the relay runs in the VM, where the guest's
// server is, so a forward reaches the guest's loopback and nothing else, and the guest cannot use it to
// reach the host (it only ever answers).
import type { Socket } from "bun";
import { GUEST_RELAY } from "../../runtime/guest-layout";

/** Client bytes held before the socket is paused (the relay command reads them as it can). */
const INPUT_HIGH_WATER_BYTES = 1024 * 1024;
/** After the client went away, how long the relay gets to finish on its own before it is cancelled. */
const CLOSE_GRACE_MS = 2000;

/**
 * Connects to the guest port given as $1 on the VM's loopback, over IPv4 when something listens there on
 * IPv4 (0.0.0.0 or 127.0.0.1), else over IPv6 (:: or ::1), as read from the guest's /proc/net: with the VM
 * relay the embedded tiers bind into every VM (any image), else the image's socat. Exit 3 when nothing
 * listens, 4 when the VM has neither: before any byte of the client's is read.
 */
export const CONNECT_SCRIPT = `p=$1 hex=$(printf '%04X' "$1")
if [ -x ${GUEST_RELAY} ]; then v4() { exec ${GUEST_RELAY} connect 127.0.0.1 "$p"; }; v6() { exec ${GUEST_RELAY} connect ::1 "$p"; }
elif command -v socat >/dev/null; then v4() { exec socat - "TCP4:127.0.0.1:$p"; }; v6() { exec socat - "TCP6:[::1]:$p"; }
else echo "session-sandbox: the VM's image has no socat, which a forwarded port needs on this tier" >&2; exit 4; fi
listening() { grep -q "^ *[0-9]*: [0-9A-F]*:$hex [0-9A-F]*:0000 0A" "$1" 2>/dev/null; }
if listening /proc/net/tcp; then v4; fi
if listening /proc/net/tcp6; then v6; fi
echo "session-sandbox: nothing listens on port $p in the VM" >&2
exit 3`;

export type RelayExit = { exitCode: number | null; stderr: string };

/** What a connection needs from the ports service: runs its relay command, with this stdin, into these hooks; resolves with its exit code once it ended (null: it failed to run). */
export type StartRelay = (hooks: {
  stdin: ReadableStream<Uint8Array>;
  signal: AbortSignal;
  onOutput(data: Uint8Array): Promise<void> | undefined;
  onStderr(data: Uint8Array): void;
}) => Promise<number | null>;

type State = {
  queue: Uint8Array[];
  queued: number;
  ended: boolean;
  wake: (() => void) | undefined;
  pending: Uint8Array | undefined;
  drained: (() => void) | undefined;
  firstBytes: string;
  wroteToClient: boolean;
  abort: AbortController;
  finished: boolean;
};

/** The Bun.listen socket handlers of one forward: each accepted connection gets its relay. */
export function relayHandlers(startRelay: StartRelay, onConnectionEnd: (exit: RelayExit) => void) {
  const write = (socket: Socket<State>, data: Uint8Array): Promise<void> | undefined => {
    const state = socket.data;
    if (state.finished) return undefined;
    state.wroteToClient = true;
    const sent = socket.write(data);
    if (sent >= data.byteLength) return undefined;
    // The rest waits for drain; the relay's output waits with it (backpressure into the VM).
    state.pending = data.subarray(Math.max(0, sent));
    return new Promise((resolve) => (state.drained = resolve));
  };

  return {
    open(socket: Socket<State>) {
      const state: State = { queue: [], queued: 0, ended: false, wake: undefined, pending: undefined, drained: undefined, firstBytes: "", wroteToClient: false, abort: new AbortController(), finished: false };
      socket.data = state;
      const stdin = new ReadableStream<Uint8Array>(
        {
          async pull(controller) {
            while (state.queue.length === 0 && !state.ended) await new Promise<void>((resolve) => (state.wake = resolve));
            const chunk = state.queue.shift();
            if (!chunk) return controller.close();
            state.queued -= chunk.byteLength;
            if (state.queued < INPUT_HIGH_WATER_BYTES / 2) socket.resume();
            controller.enqueue(chunk);
          },
        },
        { highWaterMark: 0 },
      );
      let stderr = "";
      void startRelay({
        stdin,
        signal: state.abort.signal,
        onOutput: (data) => write(socket, data),
        onStderr: (data) => void (stderr = (stderr + new TextDecoder().decode(data)).slice(-1024)),
      })
        .catch((error: unknown) => {
          stderr = String((error as Error)?.message ?? error);
          return null;
        })
        .then((exitCode) => {
          // A browser asking a port where nothing listens gets a page that says so, not a dropped connection.
          if (!state.wroteToClient && exitCode !== 0 && /^[A-Z]+ \S+ HTTP\/1\.[01]\r?\n/.test(state.firstBytes)) {
            const body = `${stderr.trim() || "the forwarded port could not be reached"}\n`;
            socket.write(`HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
          }
          state.finished = true;
          socket.end();
          onConnectionEnd({ exitCode, stderr });
        });
    },
    data(socket: Socket<State>, chunk: Uint8Array) {
      const state = socket.data;
      if (state.firstBytes.length < 64) state.firstBytes += new TextDecoder().decode(chunk.subarray(0, 64));
      state.queue.push(new Uint8Array(chunk));
      state.queued += chunk.byteLength;
      if (state.queued >= INPUT_HIGH_WATER_BYTES) socket.pause();
      state.wake?.();
    },
    drain(socket: Socket<State>) {
      const state = socket.data;
      if (!state.pending) return;
      const rest = state.pending;
      state.pending = undefined;
      const sent = socket.write(rest);
      if (sent < rest.byteLength) state.pending = rest.subarray(Math.max(0, sent));
      else {
        const resolve = state.drained;
        state.drained = undefined;
        resolve?.();
      }
    },
    /** The client sent its end of input (a half-close): the relay's stdin ends, the answer may still come. */
    end(socket: Socket<State>) {
      const state = socket.data;
      if (!state) return;
      state.ended = true;
      state.wake?.();
    },
    close(socket: Socket<State>) {
      const state = socket.data;
      if (!state) return;
      // The client is gone: its relay gets a moment to finish on its own, then it is cancelled.
      state.ended = true;
      state.finished = true;
      state.wake?.();
      state.drained?.();
      setTimeout(() => state.abort.abort(), CLOSE_GRACE_MS).unref?.();
    },
    error(socket: Socket<State>) {
      socket.data?.abort.abort();
    },
  };
}

export type RelayState = State;
