// The manager's event stream (GET /api/events, server-sent events) as an async iterator that reconnects
// with the last event id, so a dropped connection loses nothing the manager still buffers.
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { encodeTime, TIME_LEN } from "ulid";
import type { SandboxEvent } from "./api-types";
import { ManagerUnreachableError, toSdkError } from "./errors";

export type { SandboxEvent } from "./api-types";

export type EventStreamOptions = {
  /** Start after this event id (an event's `id`): the manager replays what it still buffers after it. */
  since?: string;
  /**
   * Reconnect when an open stream drops (default true), resuming after the last event, for as long as the
   * manager cannot be reached. A first connection that fails still throws ManagerUnreachableError.
   */
  reconnect?: boolean;
  /** Told each time the stream dropped and a reconnection is scheduled (e.g. to say so on a terminal). */
  onDisconnect?: (error: ManagerUnreachableError, retryInMs: number) => void;
  /** The longest wait between two reconnection attempts (default 30 s); the first waits the server's `retry:`. */
  maxBackoffMs?: number;
  /** false: end once the manager has sent what it buffers (after `since`), instead of waiting for live events. */
  follow?: boolean;
};

type Base = { url: string; token: string; fetcher?: typeof fetch };

/**
 * The smallest event id of a moment (Unix ms): as `since`, the events from that moment on. Event ids are
 * ULIDs, whose first 10 characters are their time.
 */
export function eventIdAt(ms: number): string {
  return encodeTime(ms, TIME_LEN) + "0".repeat(16);
}

const DEFAULT_RETRY_MS = 2_000;
const DEFAULT_MAX_BACKOFF_MS = 30_000;
/** An event larger than this is a broken stream, not something to buffer. */
const MAX_EVENT_CHARS = 16 * 1024 * 1024;

/** A wait that ends early (false) when `signal` aborts. */
function pause(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const done = (value: boolean) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve(value);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** One connection: its events, in order, until the body ends (it returns) or breaks (it throws). */
async function* connection(
  base: Base,
  lastEventId: string | undefined,
  signal: AbortSignal | undefined,
  on: { open(): void; retry(ms: number): void; follow: boolean },
): AsyncGenerator<EventSourceMessage> {
  const headers: Record<string, string> = { authorization: `Bearer ${base.token}`, accept: "text/event-stream" };
  if (lastEventId !== undefined) headers["last-event-id"] = lastEventId;
  let response: Response;
  try {
    response = await (base.fetcher ?? fetch)(`${base.url}/api/events${on.follow ? "" : "?follow=false"}`, { headers, signal });
  } catch (error) {
    throw new ManagerUnreachableError(0, "MANAGER_UNREACHABLE", `cannot reach the manager at ${base.url}: ${(error as Error).message}`);
  }
  if (response.status >= 500) throw new ManagerUnreachableError(0, "MANAGER_UNREACHABLE", `the manager at ${base.url} answered ${response.status} to the event stream`);
  if (!response.ok || !response.body) throw toSdkError(response.status, await response.json().catch(() => response.statusText));
  on.open();
  const parsed: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (message) => parsed.push(message), onRetry: on.retry, maxBufferSize: MAX_EVENT_CHARS });
  const decoder = new TextDecoder();
  try {
    for await (const chunk of response.body) {
      parser.feed(decoder.decode(chunk, { stream: true }));
      yield* parsed.splice(0);
    }
  } catch (error) {
    throw new ManagerUnreachableError(0, "MANAGER_UNREACHABLE", `the event stream from ${base.url} broke: ${(error as Error).message}`);
  }
}

/**
 * Yields events until `signal` aborts (with `follow: false`, until the buffered ones are sent). When an
 * open stream drops it reconnects (after the server's `retry:`, then backing off up to `maxBackoffMs`) with
 * the last event's id, so the manager replays what was missed; `replay-gap` and `overflow` events say when
 * that was not possible. It throws ManagerUnreachableError when the first connection fails, or on a drop
 * with `reconnect: false`. Refusals (401, 422) always throw.
 */
export async function* eventStream(base: Base, signal?: AbortSignal, options: EventStreamOptions = {}): AsyncGenerator<SandboxEvent> {
  const maxBackoffMs = options.maxBackoffMs ?? DEFAULT_MAX_BACKOFF_MS;
  let lastEventId = options.since;
  let retryMs = DEFAULT_RETRY_MS;
  let failures = 0;
  let opened = false;
  const follow = options.follow ?? true;
  const on = {
    open: () => {
      failures = 0;
      opened = true;
    },
    retry: (ms: number) => (retryMs = ms),
    follow,
  };
  while (!signal?.aborted) {
    try {
      for await (const message of connection(base, lastEventId, signal, on)) {
        if (message.id) lastEventId = message.id;
        yield JSON.parse(message.data) as SandboxEvent;
      }
      if (!follow) return;
      throw new ManagerUnreachableError(0, "MANAGER_UNREACHABLE", `the event stream from ${base.url} ended`);
    } catch (error) {
      if (signal?.aborted) return;
      if (!(error instanceof ManagerUnreachableError) || !opened || options.reconnect === false) throw error;
      failures += 1;
      const delayMs = Math.min(maxBackoffMs, retryMs * 2 ** (failures - 1));
      options.onDisconnect?.(error, delayMs);
      if (!(await pause(delayMs, signal))) return;
    }
  }
}
