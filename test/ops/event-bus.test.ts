// The event bus on its own: monotonic ids, where a subscriber starting after an id begins, exactly when a
// gap is reported (the edge: the last evicted id is no gap), time-based ids as `since`, follow: false.
import { describe, expect, test } from "bun:test";
import { createEventBus, type EventBus, type SandboxEvent } from "../../app/events/event-bus";
import { eventIdAt } from "../../sdk/index";

const settings = (bus: EventBus, n: number) => Array.from({ length: n }, (_, i) => bus.publish({ type: "settings", keys: [`k${i}`], at: i }));

/** Everything a subscriber after `after` gets right now (follow: false). */
async function drain(bus: EventBus, after?: string): Promise<SandboxEvent[]> {
  const out: SandboxEvent[] = [];
  for await (const event of bus.subscribe(new AbortController().signal, { after, follow: false })) out.push(event);
  return out;
}
const keyOf = (e: SandboxEvent | undefined) => (e?.type === "settings" ? e.keys[0] : e?.type);

describe("event bus", () => {
  test("1,000 events in a burst (many in one millisecond) → unique, strictly increasing ids, carried in the event", () => {
    const ids = settings(createEventBus(), 1_000).map((e) => e.id);
    expect(new Set(ids).size).toBe(1_000);
    expect([...ids].sort()).toEqual(ids);
    expect(ids.every((id) => /^[0-9A-HJKMNP-TV-Z]{26}$/.test(id))).toBe(true);
  });

  test("after an id in the ring → the events after it, no gap; after the newest → nothing", async () => {
    const bus = createEventBus({ bufferSize: 10 });
    const published = settings(bus, 5);
    expect((await drain(bus, published[1]!.id)).map(keyOf)).toEqual(["k2", "k3", "k4"]);
    expect(await drain(bus, published[4]!.id)).toEqual([]);
    expect((await drain(bus, published[1]!.id.toLowerCase())).map(keyOf)).toEqual(["k2", "k3", "k4"]);
  });

  test("the ring wraps → after the last evicted id is no gap; after any older id is a gap naming the oldest buffered", async () => {
    const bus = createEventBus({ bufferSize: 3 });
    const published = settings(bus, 6); // k3, k4, k5 stay
    expect((await drain(bus, published[2]!.id)).map(keyOf)).toEqual(["k3", "k4", "k5"]);
    const [notice, ...rest] = await drain(bus, published[1]!.id);
    expect(notice).toMatchObject({ type: "replay-gap", lastEventID: published[1]!.id, oldestID: published[3]!.id });
    expect(rest.map(keyOf)).toEqual(["k3", "k4", "k5"]);
  });

  test("a time as id (eventIdAt) → the events from that moment; before the bus started → a gap", async () => {
    const bus = createEventBus();
    const started = Date.now();
    await Bun.sleep(5);
    const [early] = settings(bus, 1);
    await Bun.sleep(5);
    const cut = Date.now();
    await Bun.sleep(5);
    settings(bus, 2);
    expect((await drain(bus, eventIdAt(cut))).map(keyOf)).toEqual(["k0", "k1"]);
    expect((await drain(bus, eventIdAt(started))).map(keyOf)).toEqual(["k0", "k0", "k1"]);
    expect(early!.id > eventIdAt(started)).toBe(true);
    expect((await drain(bus, eventIdAt(started - 60_000)))[0]).toMatchObject({ type: "replay-gap" });
  });

  test("a subscriber that is aborted → it ends and no longer counts", async () => {
    const bus = createEventBus();
    const stop = new AbortController();
    const events = bus.subscribe(stop.signal);
    const next = events.next();
    expect(bus.subscriberCount()).toBe(1);
    stop.abort();
    expect(await next).toEqual({ done: true, value: undefined });
    expect(bus.subscriberCount()).toBe(0);
  });
});
