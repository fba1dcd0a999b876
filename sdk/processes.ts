// A session's running commands: start one in the background, list them, follow one's output, kill one.
// The output streams use fetch directly, as exec.ts does: a follow lasts as long as the command.
import type { Answer } from "./api-types";
import { ManagerUnreachableError, SandboxError, toSdkError, UnexpectedResponseError } from "./errors";
import { rawRequest, type RawBase } from "./raw-request";
import type { ExecRequest } from "./exec";
import { ndjsonLines } from "./ndjson";

type Base = RawBase;

/** A running command's output: chunks as in the exec stream, what a slow reader missed, and (following) its end. */
export type ProcessLogEvent =
  | { type: "stdout" | "stderr"; data: Uint8Array }
  | { type: "skipped"; bytes: number }
  | { type: "exit"; exitCode: number; timedOut: boolean; cancelled: boolean; oomKilled: boolean };

export type BackgroundStarted = { callID: string; vmName: string; background: true };
export type ProcessList = Answer<"listProcesses">;

type Wire = { type: "stdout" | "stderr"; data: string } | { type: "skipped"; bytes: number } | { type: "exit"; exitCode: number; timedOut: boolean; cancelled: boolean; oomKilled: boolean } | { type: "error"; code: string; message: string };

/** Starts a command in the background: answers its call id at once; it runs on, nobody reading it. */
export async function startBackground(base: Base, sessionId: string, request: Omit<ExecRequest, "stdin">): Promise<BackgroundStarted> {
  const response = await rawRequest(base, `/api/sessions/${encodeURIComponent(sessionId)}/exec`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...request, background: true }),
  });
  return (await response.json()) as BackgroundStarted;
}

/** The command's latest output, then with `follow` what comes until it ends (an exit event last). */
export async function* processLogs(base: Base, sessionId: string, callID: string, options: { follow?: boolean; signal?: AbortSignal } = {}): AsyncGenerator<ProcessLogEvent> {
  const response = await rawRequest(base, `/api/sessions/${encodeURIComponent(sessionId)}/processes/${encodeURIComponent(callID)}/logs?follow=${options.follow ? 1 : 0}`, { signal: options.signal });
  if (!response.body) throw new UnexpectedResponseError(response.status, "UNEXPECTED_RESPONSE", "the logs answer had no body");
  try {
    for await (const event of ndjsonLines<Wire>(response.body)) {
      if (event.type === "error") throw toSdkError(503, { code: event.code, message: event.message });
      if (event.type === "skipped" || event.type === "exit") yield event;
      else yield { type: event.type, data: Uint8Array.from(Buffer.from(event.data, "base64")) };
    }
  } catch (error) {
    if (error instanceof SandboxError || options.signal?.aborted) throw error;
    throw new ManagerUnreachableError(0, "MANAGER_UNREACHABLE", `the logs stream from ${base.url} broke: ${(error as Error).message}`);
  }
}
