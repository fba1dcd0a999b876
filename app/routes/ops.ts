// Operating the manager: the event stream (SSE), Prometheus metrics, and the doctor report.
import { Elysia, t } from "elysia";
import type { EventBus } from "../events/event-bus";
import { errors } from "../http/schemas";
import type { Metrics } from "../metrics";
import type { DoctorReport } from "../services/doctor";

const encoder = new TextEncoder();
const HEARTBEAT_MS = 15_000;

const DoctorCheck = t.Object({ name: t.String(), ok: t.Boolean(), required: t.Boolean(), detail: t.String(), fix: t.Nullable(t.String()) });

export function opsRoutes(events: EventBus, metrics: Metrics, doctor: () => DoctorReport) {
  return new Elysia({ tags: ["ops"] })
    .get(
      "/api/events",
      ({ request, server }) => {
        server?.timeout(request, 0); // a quiet stream is not an idle connection
        const stop = new AbortController();
        request.signal.addEventListener("abort", () => stop.abort(), { once: true });
        const stream = new ReadableStream<Uint8Array>({
          async start(controller) {
            controller.enqueue(encoder.encode(": connected\n\n"));
            const heartbeat = setInterval(() => controller.enqueue(encoder.encode(": heartbeat\n\n")), HEARTBEAT_MS);
            try {
              for await (const event of events.subscribe(stop.signal)) {
                controller.enqueue(encoder.encode(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`));
              }
            } catch {
              // the client went away mid-write
            } finally {
              clearInterval(heartbeat);
            }
          },
          cancel: () => stop.abort(),
        });
        return new Response(stream, { headers: { "content-type": "text/event-stream", "cache-control": "no-store" } });
      },
      {
        response: { 200: t.String({ description: "text/event-stream: `event: vm|exec|image|secret` with a JSON SandboxEvent" }), ...errors(401) },
        detail: { operationId: "streamEvents", summary: "Server-sent events: VM booting/running/stopped/evicted/removed with reasons, exec started/finished, image progress, and secret substituted (names, never values)" },
      },
    )
    .get(
      "/metrics",
      async () => new Response(await metrics.registry.metrics(), { headers: { "content-type": metrics.registry.contentType } }),
      {
        response: { 200: t.String({ description: "Prometheus text format" }), ...errors(401) },
        detail: { operationId: "getMetrics", summary: "Prometheus metrics: running VMs and the cap, boots, execs, evictions, removals and refusals" },
      },
    )
    .get("/api/doctor", () => doctor(), {
      response: { 200: t.Object({ ok: t.Boolean(), checks: t.Array(DoctorCheck) }), ...errors(401) },
      detail: { operationId: "getDoctorReport", summary: "Checks the runtime, KVM, msb, cgroups, the root filesystem, disk space, the database and the token; each problem with its fix" },
    });
}
