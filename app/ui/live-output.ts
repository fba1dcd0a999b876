// Follows a running command's output (GET …/processes/:callID/logs?follow=1, NDJSON) with the page's token,
// handing each piece of text on as it comes, then how it ended.
import { ndjsonLines } from "../../sdk/ndjson";
import { ApiError, authHeaders } from "./api";

export type OutputEnd = { exitCode: number; timedOut: boolean; cancelled: boolean } | { error: string };

type LogLine = { type: string; data?: string; bytes?: number; message?: string; exitCode?: number; timedOut?: boolean; cancelled?: boolean };

export async function followOutput(session: string, callID: string, signal: AbortSignal, on: { text(text: string): void; end(end: OutputEnd): void }): Promise<void> {
  const res = await fetch(`/api/sessions/${encodeURIComponent(session)}/processes/${encodeURIComponent(callID)}/logs?follow=1`, { headers: { ...authHeaders(), accept: "application/x-ndjson" }, signal });
  if (!res.ok || !res.body) throw new ApiError(res.status, `HTTP_${res.status}`, await res.text());
  const decoder = new TextDecoder();
  for await (const event of ndjsonLines<LogLine>(res.body)) {
    if (event.type === "stdout" || event.type === "stderr") on.text(decoder.decode(Uint8Array.from(atob(event.data ?? ""), (c) => c.charCodeAt(0)), { stream: true }));
    else if (event.type === "skipped") on.text(`\n… ${event.bytes} bytes not kept …\n`);
    else if (event.type === "exit") on.end({ exitCode: event.exitCode ?? 0, timedOut: Boolean(event.timedOut), cancelled: Boolean(event.cancelled) });
    else if (event.type === "error") on.end({ error: event.message ?? "the command failed" });
  }
}
