// Operating the manager: the event stream (SSE), Prometheus metrics, and the doctor report.
import { Elysia, t } from "elysia";
import { EVENT_ID_PATTERN, type EventBus } from "../events/event-bus";
import { eventStreamResponse } from "../events/sse";
import { errors } from "../http/schemas";
import type { Metrics } from "../metrics";
import type { DoctorReport } from "../services/doctor";

const DoctorCheck = t.Object({ name: t.String(), ok: t.Boolean(), required: t.Boolean(), detail: t.String(), fix: t.Nullable(t.String()) });

export function opsRoutes(events: EventBus, metrics: Metrics, doctor: () => DoctorReport) {
  return new Elysia({ tags: ["ops"] })
    .get(
      "/api/events",
      ({ request, server, query }) => {
        server?.timeout(request, 0); // a quiet stream is not an idle connection
        // A reconnecting client's Last-Event-ID is newer than the ?since= of the URL it first opened.
        const after = request.headers.get("last-event-id") ?? query.since;
        return eventStreamResponse(events, request.signal, { after, follow: query.follow !== "false" });
      },
      {
        query: t.Object({
          since: t.Optional(t.String({ pattern: EVENT_ID_PATTERN, description: "Replay the buffered events after this event id (as Last-Event-ID does)" })),
          follow: t.Optional(t.UnionEnum(["true", "false"], { description: "false: end the stream once the buffered events are sent, instead of staying for live ones" })),
        }),
        response: {
          200: t.String({ description: "text/event-stream: `retry:`, then frames `id: <ULID>`, `event: vm|exec|image|secret|session|sandbox|settings` with a JSON SandboxEvent; `event: replay-gap|overflow` (no id) when events were missed" }),
          ...errors(401, 403, 422),
        },
        detail: { operationId: "streamEvents", summary: "Server-sent events: VM booting/running/stopped/evicted/removed with reasons, exec started/finished, image progress, secret substituted (names, never values), sessions registered/deleted, sandbox toggled, settings changed; Last-Event-ID or ?since= replays the last 10,000" },
      },
    )
    .get(
      "/metrics",
      async () => new Response(await metrics.registry.metrics(), { headers: { "content-type": metrics.registry.contentType } }),
      {
        response: { 200: t.String({ description: "Prometheus text format" }), ...errors(401, 403) },
        detail: { operationId: "getMetrics", summary: "Prometheus metrics: running VMs and the cap, boots, execs, evictions, removals and refusals" },
      },
    )
    .get("/api/doctor", () => doctor(), {
      response: { 200: t.Object({ ok: t.Boolean(), checks: t.Array(DoctorCheck) }), ...errors(401, 403) },
      detail: { operationId: "getDoctorReport", summary: "Checks the runtimes, KVM, cgroups, the root filesystem, disk space, the database and the token; each problem with its fix" },
    });
}
