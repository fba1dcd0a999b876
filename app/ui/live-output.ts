// Follows a running command's output (GET …/processes/:callID/logs?follow=1, NDJSON) with the page's token,
// handing each piece of text on as it comes, then how it ended.
import { ApiError, authHeaders } from "./api";

export type OutputEnd = { exitCode: number; timedOut: boolean; cancelled: boolean } | { error: string };

export async function followOutput(session: string, callID: string, signal: AbortSignal, on: { text(text: string): void; end(end: OutputEnd): void }): Promise<void> {
  const res = await fetch(`/api/sessions/${encodeURIComponent(session)}/processes/${encodeURIComponent(callID)}/logs?follow=1`, { headers: { ...authHeaders(), accept: "application/x-ndjson" }, signal });
  if (!res.ok || !res.body) throw new ApiError(res.status, `HTTP_${res.status}`, await res.text());
  const decoder = new TextDecoder();
  let buffered = "";
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buffered += value;
    let newline: number;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      const event = JSON.parse(buffered.slice(0, newline)) as { type: string; data?: string; bytes?: number; message?: string; exitCode?: number; timedOut?: boolean; cancelled?: boolean };
      buffered = buffered.slice(newline + 1);
      if (event.type === "stdout" || event.type === "stderr") on.text(decoder.decode(Uint8Array.from(atob(event.data ?? ""), (c) => c.charCodeAt(0)), { stream: true }));
      else if (event.type === "skipped") on.text(`\n… ${event.bytes} bytes not kept …\n`);
      else if (event.type === "exit") on.end({ exitCode: event.exitCode ?? 0, timedOut: Boolean(event.timedOut), cancelled: Boolean(event.cancelled) });
      else if (event.type === "error") on.end({ error: event.message ?? "the command failed" });
    }
  }
}

