// A session's running commands: GET /api/sessions/:id/processes lists them (background ones and foreground
// ones in progress), GET …/processes/:callID/logs streams one's output — the latest held (output-ring.ts),
// then with ?follow=1 what comes until it ends — and DELETE …/processes/:callID kills its whole tree.
import { Type } from "@sinclair/typebox";
import { Elysia, t } from "elysia";
import { ExecNotFoundError } from "../errors";
import { wantsText } from "../http/exec-text";
import { createPacedStream } from "../http/paced-stream";
import { ExecCallParams, ExecHistoryEntry, errors, SessionParams } from "../http/schemas";
import type { Services } from "../services";
import type { ExecService } from "../services/exec";
import { cancelByCallID } from "./execs";

const encoder = new TextEncoder();

const ProcessView = t.Object({
  callID: t.String(),
  sessionId: t.String({ description: "The session that started it (a root lists its whole tree's)" }),
  vmName: t.String(),
  command: t.String(),
  startedAt: Type.Integer({ description: "Unix epoch milliseconds" }),
  background: t.Boolean({ description: "Started with background: true" }),
  outputBytes: Type.Integer({ description: "Output printed so far" }),
  droppedBytes: Type.Integer({ description: "Of it, what is no longer held (the latest 1 MiB of a background command is, 64 KiB of a foreground one)" }),
});

export function processRoutes({ sessions, execHistory }: Services, execService: Pick<ExecService, "processes" | "output" | "cancel">) {
  return new Elysia({ prefix: "/api/sessions/:id/processes", tags: ["exec"] })
    .get(
      "",
      ({ params }) => ({ processes: execService.processes(sessions.get(params.id).rootSessionID, params.id) }),
      {
        params: SessionParams,
        response: { 200: t.Object({ processes: t.Array(ProcessView) }), ...errors(400, 401, 404, 409, 422) },
        detail: { operationId: "listProcesses", summary: "The commands running now in the session's VM (a root: its whole tree's), background or not, oldest first" },
      },
    )
    .get(
      "/:callID/logs",
      ({ params, query, request, server }) => {
        const running = execService.output(sessions.get(params.id).rootSessionID, params.callID);
        if (!running) throw new ExecNotFoundError(params.id, params.callID);
        server?.timeout(request, 0); // a follower may wait as long as the command runs
        const follow = query.follow === "1" || query.follow === "true";
        const text = wantsText(request.headers.get("accept"));
        const stop = new AbortController();
        const output = createPacedStream(() => stop.abort());
        request.signal.addEventListener("abort", () => stop.abort(), { once: true });
        const line = (event: object) => output.write(encoder.encode(`${JSON.stringify(event)}\n`));
        void (async () => {
          for await (const item of running.ring.read(follow, stop.signal)) {
            const room = "skipped" in item ? (text ? undefined : line({ type: "skipped", bytes: item.skipped })) : text ? output.write(item.data) : line({ type: item.stream, data: Buffer.from(item.data).toString("base64") });
            if (room) await room;
          }
          if (follow && !text && !stop.signal.aborted) {
            const ended = await running.ended;
            line(ended.ok ? { type: "exit", ...ended.outcome } : { type: "error", code: "RUNTIME_FAILED", message: ended.error });
          }
          output.close();
        })().catch((error: unknown) => output.fail(error instanceof Error ? error : new Error(String(error))));
        return new Response(output.stream, { headers: { "content-type": text ? "text/plain; charset=utf-8" : "application/x-ndjson", "cache-control": "no-store" } });
      },
      {
        params: ExecCallParams,
        query: t.Object({ follow: t.Optional(t.Union([t.Literal("1"), t.Literal("0"), t.Literal("true"), t.Literal("false")])) }),
        response: { 200: t.String({ description: "NDJSON: stdout/stderr chunks (base64) as in the exec stream, {type: skipped, bytes} where a slow reader missed output, and with follow its exit (or error). With Accept: text/plain, the raw bytes" }), ...errors(400, 401, 404, 409, 422) },
        detail: { operationId: "processLogs", summary: "A running command's latest output (a background one's last 1 MiB, a foreground one's last 64 KiB), then with ?follow=1 its output as it comes until it ends" },
      },
    )
    .delete(
      "/:callID",
      ({ params }) => cancelByCallID({ sessions, execHistory }, execService, params),
      {
        params: ExecCallParams,
        response: { 200: t.Object({ callID: t.String(), execs: t.Array(ExecHistoryEntry) }), ...errors(400, 401, 404, 409, 422) },
        detail: { operationId: "killProcess", summary: "Kill a running command's whole tree in the VM (its background children too); answers once it ended (at most 10 s)" },
      },
    );
}

