// The manager's event stream: what happened to VMs, commands, images, sessions and settings. Every event
// gets a monotonic ULID and goes into one bounded ring buffer that every subscriber reads at its own
// cursor, so a subscriber can start after a given id (a reconnecting SSE client), a slow one lags without
// holding the publisher up or costing memory of its own, and one that falls further behind than the ring
// holds is told how many it lost instead of losing them silently.
import { encodeTime, TIME_LEN } from "ulid";
import { newId } from "../ids";
import type { PublishedEvent, ReplayGapNotice, SandboxEvent } from "./sandbox-event";

export type { ImageEventPhase, PublishedEvent, SandboxEvent, StreamNotice, VmEventStatus } from "./sandbox-event";

/**
 * How many of the latest events are kept for replay and for subscribers that lag.
 * Exported so a test can overflow it by a known count.
 */
export const EVENT_BUFFER_SIZE = 10_000;

/** An event id: a ULID (Crockford base32, either case). */
export const EVENT_ID_PATTERN = "^[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}$";
const EVENT_ID = new RegExp(EVENT_ID_PATTERN);

type Stored = PublishedEvent & { id: string };

export type SubscribeOptions = {
  /** Start after this event id (replaying what the buffer still holds), instead of with the next event. */
  after?: string;
  /** false: end once every event published so far has been yielded, instead of waiting for more. */
  follow?: boolean;
};

export function createEventBus(options: { bufferSize?: number; now?: () => number } = {}) {
  const size = options.bufferSize ?? EVENT_BUFFER_SIZE;
  const now = options.now ?? Date.now;
  const ring: Stored[] = [];
  let published = 0; // sequence number of the next event; the ring holds [oldest(), published)
  // Every id below this one may belong to an event the ring does not hold: one from before this bus
  // started (the smallest id of its start time), or, once the ring wraps, the last one it evicted.
  let floorID = encodeTime(Date.now(), TIME_LEN) + "0".repeat(16);
  const waiting = new Set<() => void>();
  let subscribers = 0;

  const oldest = () => Math.max(0, published - size);
  const at = (seq: number) => ring[seq % size]!;

  function publish(event: PublishedEvent): Stored {
    const stored = { id: newId(), ...event } as Stored;
    if (published >= size) floorID = at(published).id;
    ring[published % size] = stored;
    published += 1;
    for (const wake of waiting) wake();
    waiting.clear();
    return stored;
  }

  /** The sequence number of the first buffered event whose id is greater than `id` (ids grow with it). */
  function firstAfter(id: string): number {
    let low = oldest();
    let high = published;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (at(middle).id <= id) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  function gap(lastEventID: string, why: string): ReplayGapNotice {
    const oldestID = published > 0 ? at(oldest()).id : null;
    return { type: "replay-gap", lastEventID, oldestID, message: `${why}; events after it that are still buffered follow, then live ones`, at: now() };
  }

  /** Where a subscriber starting after `after` begins, and the gap notice it gets first, if any. */
  function start(after: string | undefined): { cursor: number; notice?: ReplayGapNotice } {
    if (after === undefined) return { cursor: published };
    const id = after.toUpperCase();
    if (!EVENT_ID.test(id)) return { cursor: published, notice: gap(after, `"${after}" is not an event id (a ULID): nothing can be replayed`) };
    const cursor = firstAfter(id);
    if (id >= floorID) return { cursor };
    const why = published > size ? `the buffer keeps the last ${size} events and no longer reaches back to ${id}` : `${id} is from before this manager started`;
    return { cursor, notice: gap(after, `events after ${id} may have been missed: ${why}`) };
  }

  /**
   * Events (after `options.after`, else from now on) until `signal` aborts. Where it starts is fixed by
   * this call, not by the first `next()`: nothing published in between is missed.
   */
  function subscribe(signal: AbortSignal, options: SubscribeOptions = {}): AsyncGenerator<SandboxEvent> {
    return read(signal, start(options.after), options.follow ?? true);
  }

  async function* read(signal: AbortSignal, from: { cursor: number; notice?: ReplayGapNotice }, follow: boolean): AsyncGenerator<SandboxEvent> {
    let { cursor } = from;
    let wake: (() => void) | undefined;
    const onAbort = () => wake?.();
    signal.addEventListener("abort", onAbort, { once: true });
    subscribers += 1;
    try {
      if (from.notice) yield from.notice;
      while (!signal.aborted) {
        if (cursor < oldest()) {
          const dropped = oldest() - cursor;
          cursor = oldest();
          const message = `this subscriber fell more than ${size} events behind: ${dropped} events were dropped and can no longer be replayed; it continues with the oldest buffered event`;
          yield { type: "overflow", dropped, message, at: now() };
        } else if (cursor < published) {
          yield at(cursor++);
        } else if (!follow) {
          return;
        } else {
          await new Promise<void>((resolve) => {
            wake = resolve;
            waiting.add(resolve);
          });
          wake = undefined;
        }
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
      if (wake) waiting.delete(wake);
      subscribers -= 1;
    }
  }

  return { publish, subscribe, subscriberCount: () => subscribers };
}

export type EventBus = ReturnType<typeof createEventBus>;
