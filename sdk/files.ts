// Files in and out of a session's VM (GET/PUT /api/sessions/:id/files): the bytes as a stream both ways.
// Uses fetch directly, as exec.ts does: a large file is a long transfer that must not carry the API call
// timeout, and its body is not JSON.
import type { Answer } from "./api-types";
import { UnexpectedResponseError } from "./errors";
import { rawRequest, type RawBase } from "./raw-request";

type Base = RawBase;
export type FileWritten = Answer<"writeFile">;
/** `tar`: a tar of the path (a directory: its contents) instead of the file's bytes. */
export type ReadFileOptions = { tar?: boolean; signal?: AbortSignal };
/** `mode`: octal permissions such as "0755"; `tar`: the data is a tar to unpack into the directory `path`. */
export type WriteFileOptions = { mode?: string; tar?: boolean; signal?: AbortSignal };

const filesPath = (sessionId: string, query: Record<string, string>) => `/api/sessions/${encodeURIComponent(sessionId)}/files?${new URLSearchParams(query)}`;

/** An open file of the VM: its bytes (or a tar) as they come, and for a file its size and octal mode. */
export type OpenedFile = { body: ReadableStream<Uint8Array>; size: number | null; mode: string | null };

/** The file at `path` in the session's VM (resolved there), or a tar of it, as a stream. */
export async function openFile(base: Base, sessionId: string, path: string, options: ReadFileOptions = {}): Promise<OpenedFile> {
  const response = await rawRequest(base, filesPath(sessionId, { path }), { headers: options.tar ? { accept: "application/x-tar" } : {}, signal: options.signal });
  if (!response.body) throw new UnexpectedResponseError(response.status, "UNEXPECTED_RESPONSE", "the file's answer had no body");
  const size = response.headers.get("x-session-sandbox-file-size");
  return { body: response.body, size: size === null ? null : Number(size), mode: response.headers.get("x-session-sandbox-file-mode") };
}

/** Writes `data` to `path` in the session's VM (parents made; a broken upload leaves the old file). */
export async function writeFile(base: Base, sessionId: string, path: string, data: string | Uint8Array | ReadableStream<Uint8Array>, options: WriteFileOptions = {}): Promise<FileWritten> {
  const body = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const query: Record<string, string> = { path, ...(options.mode ? { mode: options.mode } : {}) };
  const response = await rawRequest(base, filesPath(sessionId, query), {
    method: "PUT",
    headers: { "content-type": options.tar ? "application/x-tar" : "application/octet-stream" },
    body,
    signal: options.signal,
    // A streamed body (Node's fetch wants it said; Bun's takes it either way).
    ...(body instanceof Uint8Array ? {} : { duplex: "half" }),
  } as RequestInit);
  return (await response.json()) as FileWritten;
}
