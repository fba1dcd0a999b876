// POST /api/sessions/:id/exec: runs a command in the session's VM and streams NDJSON events:
// {"type":"started"} · {"type":"stdout"|"stderr","data":"<base64>"} · {"type":"exit",...} | {"type":"error",...},
// with {"type":"heartbeat"} every 15 s so that a proxy in between never sees a quiet command as idle.
// With `Accept: text/plain` it streams the raw output and a final status line instead (app/http/exec-text.ts).
// Refusals before the command starts (not sandboxed, bad cwd, cap, runtime down) are ordinary 4xx/5xx JSON.
// This route only frames the stream; app/services/exec.ts runs the command.
import { Elysia, t } from "elysia";
import { BackgroundWithStdinError, DomainError } from "../errors";
import { execBody, stdinOf } from "../http/exec-body";
import { createLineTracker, errorLine, exitLine, wantsText } from "../http/exec-text";
import { createPacedStream } from "../http/paced-stream";
import { errors, ExecBody, SessionParams } from "../http/schemas";
import type { ExecService } from "../services/exec";

export type ExecStreamEvent =
  | { type: "started"; vmName: string; callID: string | null }
  | { type: "stdout" | "stderr"; data: string }
  | { type: "exit"; exitCode: number; timedOut: boolean; cancelled: boolean; oomKilled: boolean }
  | { type: "error"; code: string; message: string }
  | { type: "heartbeat" };

const encoder = new TextEncoder();
/** Below common proxy idle timeouts (30–60 s); clients skip these lines. */
const EXEC_HEARTBEAT_MS = 15_000;

export function execRoutes(execService: ExecService) {
  return new Elysia({ tags: ["exec"] }).post(
    "/api/sessions/:id/exec",
    async ({ params, body, request, server }) => {
      // A quiet command must not be cut by the server's idle timeout (lifted in app/http/server-guard.ts
      // for the real server; here too when Elysia serves itself); the exec has its own timeout.
      server?.timeout(request, 0);
      // The client went away: kill the command in the VM. A client that reads slowly holds the command's
      // output back instead (paced-stream.ts): it runs on, paused, until the client reads or its timeout.
      const cancel = new AbortController();
      const output = createPacedStream(() => cancel.abort());
      request.signal.addEventListener("abort", () => (cancel.abort(), output.close()), { once: true });
      const text = wantsText(request.headers.get("accept"));
      const lines = createLineTracker();
      // Text: raw bytes and a status line, no heartbeat (it would be output). NDJSON: one event per line.
      const write = (event: ExecStreamEvent) => {
        if (!text) return output.write(encoder.encode(JSON.stringify(event) + "\n"));
        if (event.type === "exit") output.write(encoder.encode(lines.final(exitLine(event))));
        else if (event.type === "error") output.write(encoder.encode(lines.final(errorLine(event.code, event.message))));
      };
      // Refusals (nothing ran) reject here: an ordinary error response.
      const { stdin: stdinField, background, ...execBody } = body;
      const stdin = stdinOf(request, stdinField);
      if (background) {
        if (stdin) throw new BackgroundWithStdinError();
        const { prepared } = await execService.startBackground(params.id, execBody);
        return new Response(JSON.stringify({ callID: prepared.callID, vmName: prepared.spec.name, background: true }), {
          status: 202,
          headers: { "content-type": "application/json", "x-session-sandbox-call-id": prepared.callID, "x-session-sandbox-vm": prepared.spec.name },
        });
      }
      const { prepared, outcome } = await execService.start(params.id, execBody, {
        signal: cancel.signal,
        ...(stdin ? { stdin } : {}),
        onChunk: (name, data) => {
          if (!text) return write({ type: name, data: Buffer.from(data).toString("base64") });
          lines.saw(data);
          return output.write(data);
        },
      });
      write({ type: "started", vmName: prepared.spec.name, callID: prepared.callID });
      const heartbeat = text ? undefined : setInterval(() => write({ type: "heartbeat" }), EXEC_HEARTBEAT_MS);
      void outcome.then((settled) => {
        clearInterval(heartbeat);
        if (settled.ok) write({ type: "exit", ...settled.result });
        else {
          const error = settled.error;
          write(error instanceof DomainError ? { type: "error", code: error.errorCode, message: error.message } : { type: "error", code: "INTERNAL", message: String(error) });
        }
        output.close();
      });
      const headers = {
        "content-type": text ? "text/plain; charset=utf-8" : "application/x-ndjson",
        "cache-control": "no-store",
        "x-session-sandbox-call-id": prepared.callID,
        "x-session-sandbox-vm": prepared.spec.name,
      };
      return new Response(output.stream, { headers });
    },
    {
      params: SessionParams,
      parse: execBody,
      body: ExecBody,
      response: {
        200: t.String({ description: "NDJSON stream of ExecStreamEvent" }),
        202: t.Object({ callID: t.String(), vmName: t.String(), background: t.Literal(true) }, { description: "Started in the background (background: true)" }),
        ...errors(400, 401, 404, 409, 413, 415, 422, 429, 503),
      },
      detail: { operationId: "exec", summary: "Run `sh -c <command>` in the session's VM; streams NDJSON (started, stdout/stderr base64 chunks, exit or error)" },
    },
  );
}
