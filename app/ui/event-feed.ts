// Follows GET /api/events with fetch streaming (EventSource cannot send the Authorization header),
// reconnecting with Last-Event-ID so the manager replays what was missed.
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { ApiError, authHeaders } from "./api";

export type StreamState = "connecting" | "live" | "reconnecting" | "refused";

type FeedHandlers = { onEvent(message: EventSourceMessage): void; onState(state: StreamState): void };

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
  });

/** An id before every event's: the first connection replays what the manager's ring still holds (its last 10,000). */
const BEGINNING = "00000000000000000000000000";

export async function followEvents(signal: AbortSignal, on: FeedHandlers): Promise<void> {
  let lastEventId: string | undefined = BEGINNING;
  let retryMs = 1000;
  on.onState("connecting");
  while (!signal.aborted) {
    try {
      const headers: Record<string, string> = { ...authHeaders(), accept: "text/event-stream" };
      if (lastEventId) headers["last-event-id"] = lastEventId;
      const res = await fetch("/api/events", { headers, signal });
      if (!res.ok || !res.body) throw new ApiError(res.status, `HTTP_${res.status}`, res.statusText);
      on.onState("live");
      const parser = createParser({
        onEvent: (message) => {
          if (message.id) lastEventId = message.id;
          on.onEvent(message);
        },
        onRetry: (ms) => (retryMs = ms),
      });
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        parser.feed(value);
      }
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof ApiError && error.status === 401) return on.onState("refused");
    }
    on.onState("reconnecting");
    await sleep(retryMs, signal);
  }
}
