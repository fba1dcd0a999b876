// Watching one exec's runtime process for its timeout or abort, and ending its command when one comes:
// shared by the crun and runsc execs (exec.ts, runtime/gvisor/exec.ts) and the exec agent's (exec-agent-client.ts).
import type { ExecRequest } from "../driver";

/**
 * How long a cancelled exec's runtime process may take to notice its command died before it is SIGKILLed too;
 * also how long the rest of a command whose agent handler was killed may take to die (exec-agent-client.ts).
 */
export const CANCEL_GRACE_MS = 5000;

type CancelReason = "timeout" | "abort";

/**
 * Watches the runtime process of one exec: on the request's timeout or abort (the first of them), `kill`
 * ends the command's whole tree by `deadline` (`graceMs` after the cancel); past it the runtime process
 * itself is SIGKILLed. `disarm` when the exec is over.
 */
export function superviseExec(
  proc: { exited: Promise<number>; kill(signal: "SIGKILL"): void },
  request: ExecRequest,
  kill: (running: () => boolean, deadline: number) => Promise<void>,
  graceMs = CANCEL_GRACE_MS,
): { exitCode: Promise<number>; cancelReason: () => CancelReason | undefined; cancelled: () => Promise<void>; disarm: () => void } {
  let exited = false;
  const exitCode = proc.exited.finally(() => (exited = true));
  let reason: CancelReason | undefined;
  let cancelling: Promise<void> = Promise.resolve();
  const cancel = (why: CancelReason) => {
    if (reason || exited) return;
    reason = why;
    cancelling = (async () => {
      await kill(() => !exited, performance.now() + graceMs);
      if (!exited) proc.kill("SIGKILL");
    })();
  };
  const timer = request.timeoutMs !== undefined ? setTimeout(() => void cancel("timeout"), request.timeoutMs) : undefined;
  const onAbort = () => void cancel("abort");
  request.signal?.addEventListener("abort", onAbort, { once: true });
  if (request.signal?.aborted) onAbort();
  const disarm = () => {
    clearTimeout(timer);
    request.signal?.removeEventListener("abort", onAbort);
  };
  // `cancelled`: settles once a cancellation's kill is over (at once when there was none).
  return { exitCode, cancelReason: () => reason, cancelled: () => cancelling, disarm };
}
