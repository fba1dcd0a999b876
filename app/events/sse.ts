// The event bus as server-sent events: `retry:` first, then one frame per event with `id:`, `event:` and
// JSON `data:`, and a heartbeat comment while nothing happens. Notices (replay-gap, overflow) carry no
// `id:`, so a client's Last-Event-ID stays the last event it really got. The stream is pulled: a client
// that reads slowly lets the bus cursor lag (up to its buffer) instead of growing a queue here.
import type { EventBus, SandboxEvent, SubscribeOptions } from "./event-bus";

/** How long a client waits before reconnecting (sent as `retry:`). */
const RETRY_MS = 2_000;
const HEARTBEAT_MS = 15_000;

const encoder = new TextEncoder();

function sseFrame(event: SandboxEvent): string {
  const id = "id" in event ? `id: ${event.id}\n` : "";
  return `${id}event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/**
 * A text/event-stream of the bus, after `options.after` when given (Last-Event-ID or ?since=), until
 * `signal` aborts or the client goes (or, with `follow: false`, until it has caught up).
 */
export function eventStreamResponse(bus: EventBus, signal: AbortSignal, options: SubscribeOptions, heartbeatMs = HEARTBEAT_MS): Response {
  const stop = new AbortController();
  signal.addEventListener("abort", () => stop.abort(), { once: true });
  const events = bus.subscribe(stop.signal, options);
  let pending: Promise<IteratorResult<SandboxEvent>> | undefined;
  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        controller.enqueue(encoder.encode(`retry: ${RETRY_MS}\n: connected\n\n`));
      },
      async pull(controller) {
        pending ??= events.next();
        let timer: ReturnType<typeof setTimeout> | undefined;
        const quiet = new Promise<"quiet">((resolve) => (timer = setTimeout(() => resolve("quiet"), heartbeatMs)));
        const next = await Promise.race([pending, quiet]).finally(() => clearTimeout(timer));
        if (next === "quiet") return controller.enqueue(encoder.encode(": heartbeat\n\n"));
        pending = undefined;
        if (next.done) return controller.close();
        controller.enqueue(encoder.encode(sseFrame(next.value)));
      },
      cancel() {
        stop.abort();
      },
    },
    { highWaterMark: 1 },
  );
  return new Response(stream, { headers: { "content-type": "text/event-stream", "cache-control": "no-store" } });
}
