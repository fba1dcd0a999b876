// Running commands through the manager: an async iterator over the NDJSON exec stream, and run() which
// collects it. Uses fetch directly: the stream is long-lived and must not carry the API call timeout.
import type { ExecStreamEvent } from "./api-types";
import { ManagerUnreachableError, SandboxError, toSdkError, UnexpectedResponseError } from "./errors";
import { ndjsonLines } from "./ndjson";
import { rawRequest } from "./raw-request";

/**
 * `cwd` defaults to the session's directory; `callID` (default: a new ULID, in `started`) names it for a cancel.
 * `stdin`: the command's standard input (text as UTF-8); a stream is sent as it is read, as fast as the
 * command takes it. Without it the command reads an empty input.
 */
export type ExecRequest = {
  command: string;
  cwd?: string;
  env?: Record<string, string>;
  timeoutMs?: number;
  callID?: string;
  stdin?: string | Uint8Array | ReadableStream<Uint8Array>;
};

/** The media type of an exec body that is the request as one JSON line, then the raw stdin (the manager's app/http/exec-body.ts). */
const EXEC_STDIN_MEDIA_TYPE = "application/vnd.session-sandbox.exec-stdin";
/** Input up to this size goes inside the JSON body, as base64 (which the manager takes up to 1 MiB); more is streamed. */
const INLINE_STDIN_BYTES = 512 * 1024;

/** The exec request's body and its content type: plain JSON, or the JSON line followed by the streamed input. */
function execBody(request: ExecRequest): { body: string | ReadableStream<Uint8Array>; contentType: string } {
  const { stdin, ...rest } = request;
  const bytes = typeof stdin === "string" ? new TextEncoder().encode(stdin) : stdin;
  if (bytes === undefined) return { body: JSON.stringify(rest), contentType: "application/json" };
  if (bytes instanceof Uint8Array && bytes.byteLength <= INLINE_STDIN_BYTES) {
    return { body: JSON.stringify({ ...rest, stdin: Buffer.from(bytes).toString("base64") }), contentType: "application/json" };
  }
  const head = new TextEncoder().encode(`${JSON.stringify(rest)}\n`);
  const input = bytes instanceof Uint8Array ? new Blob([bytes]).stream() : bytes;
  const reader = input.getReader();
  let sentHead = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!sentHead) {
        sentHead = true;
        return controller.enqueue(head);
      }
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return { body, contentType: EXEC_STDIN_MEDIA_TYPE };
}

export type ExecEvent =
  | { type: "started"; vmName: string; callID: string | null }
  | { type: "stdout"; data: Uint8Array }
  | { type: "stderr"; data: Uint8Array }
  /** `oomKilled`: the kernel killed it at the VM's memory limit (its stderr ends with the limit and how to raise it). */
  | { type: "exit"; exitCode: number; timedOut: boolean; cancelled: boolean; oomKilled: boolean };

export type RunResult = { exitCode: number; stdout: string; stderr: string; timedOut: boolean; cancelled: boolean; oomKilled: boolean; vmName: string };

/** One line of the exec stream, as the manager's OpenAPI document describes it (heartbeats: every 15 s while a command is quiet, for proxies in between; skipped here). */
type WireEvent = ExecStreamEvent;

/** Yields the exec's events; throws a typed error for a refusal or a runtime failure. Abort `signal` to cancel the command in the VM. */
export async function* execStream(
  base: { url: string; token: string; fetcher?: typeof fetch },
  sessionId: string,
  request: ExecRequest,
  signal?: AbortSignal,
): AsyncGenerator<ExecEvent> {
  const { body, contentType } = execBody(request);
  const response = await rawRequest(base, `/api/sessions/${encodeURIComponent(sessionId)}/exec`, {
    method: "POST",
    headers: { "content-type": contentType },
    body,
    signal,
    // A streamed body (Node's fetch wants it said; Bun's takes it either way).
    ...(typeof body === "string" ? {} : { duplex: "half" }),
  } as RequestInit);
  if (!response.body) throw new UnexpectedResponseError(response.status, "UNEXPECTED_RESPONSE", "the exec answer had no body");
  let ended = false;
  try {
    for await (const event of ndjsonLines<WireEvent>(response.body)) {
      switch (event.type) {
        case "heartbeat":
          continue;
        case "error":
          throw toSdkError(503, { code: event.code, message: event.message });
        case "stdout":
        case "stderr":
          yield { type: event.type, data: Uint8Array.from(Buffer.from(event.data, "base64")) } as ExecEvent;
          continue;
        default:
          yield event;
          if (event.type === "exit") ended = true;
      }
    }
  } catch (error) {
    if (error instanceof SandboxError) throw error;
    throw new ManagerUnreachableError(0, "MANAGER_UNREACHABLE", `the exec stream from ${base.url} broke: ${(error as Error).message}`);
  }
  // A stream that stops without an exit line means the manager went away mid-command.
  if (!ended) throw new ManagerUnreachableError(0, "MANAGER_UNREACHABLE", `the exec stream from ${base.url} ended before the command's exit status`);
}

/** Runs a command to completion and collects its output as text. */
export async function runCollected(events: AsyncGenerator<ExecEvent>): Promise<RunResult> {
  const out: Uint8Array[] = [];
  const err: Uint8Array[] = [];
  let vmName = "";
  for await (const event of events) {
    if (event.type === "started") vmName = event.vmName;
    else if (event.type === "stdout") out.push(event.data);
    else if (event.type === "stderr") err.push(event.data);
    else return { exitCode: event.exitCode, timedOut: event.timedOut, cancelled: event.cancelled, oomKilled: event.oomKilled, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8"), vmName };
  }
  throw new ManagerUnreachableError(0, "MANAGER_UNREACHABLE", "the exec stream ended without an exit status");
}
