// Events you can rely on, over real HTTP to the real manager process: frames carry
// `id:` and `event:` after a `retry:`; a client that reconnects with Last-Event-ID (or opens ?since=)
// gets exactly what it missed; an id the buffer does not reach back to is answered with a replay-gap;
// the SDK reconnects by itself through a dropped connection and loses nothing; sessions, toggles and
// settings publish events.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { createClient, type SandboxEvent } from "../../sdk/index";
import { eventually } from "../actors/fixture";
import { makeTempDir } from "../helpers";
import { startManager, type ManagerProcess } from "../manager-process";
import { cuttableProxy, openEventStream } from "./sse-client";

let manager: ManagerProcess;
let dataDir: string;
let repo: string;
let client: ReturnType<typeof createClient>;

beforeAll(async () => {
  dataDir = makeTempDir("ss-events-");
  repo = makeTempDir("ss-events-repo-");
  manager = await startManager(dataDir);
  client = createClient({ url: manager.url, token: manager.token });
});
afterAll(async () => {
  await manager?.stop();
  for (const dir of [dataDir, `${dataDir}-runtime`, repo]) rmSync(dir, { recursive: true, force: true });
});

const registered = (id: string) => (e: SandboxEvent) => e.type === "session" && e.phase === "registered" && e.sessionID === id;
const register = (id: string) => client.sessions.register({ id, directory: repo });

/** Registers `id` and returns its event's id, read from a raw stream: where an SDK stream can start without a race. */
async function registrationEventId(id: string): Promise<string> {
  const stream = await openEventStream(manager.url, manager.token);
  await register(id);
  await eventually(() => stream.frames.some((f) => registered(id)(f.data)));
  await stream.close();
  return stream.frames.find((f) => registered(id)(f.data))!.id!;
}

describe("GET /api/events: ids, replay and gaps", () => {
  test("disconnect, miss three events, reconnect with Last-Event-ID → exactly those three, then live ones", async () => {
    const first = await openEventStream(manager.url, manager.token);
    expect(first.response.headers.get("content-type")).toBe("text/event-stream");
    await register("ses_r_seen");
    await eventually(() => first.frames.some((f) => registered("ses_r_seen")(f.data)));
    await first.close();
    expect(first.raw().startsWith("retry: 2000\n")).toBe(true);
    const seen = first.frames.find((f) => registered("ses_r_seen")(f.data))!;
    expect(seen.event).toBe("session");
    expect(seen.id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(first.raw()).toContain(`id: ${seen.id}\nevent: session\ndata: {"id":"${seen.id}"`);

    for (const id of ["ses_r_m1", "ses_r_m2", "ses_r_m3"]) await register(id); // nobody is listening
    const again = await openEventStream(manager.url, manager.token, { "last-event-id": seen.id! });
    await register("ses_r_live");
    await eventually(() => again.frames.length >= 4);
    await again.close();

    const sessions = again.frames.map((f) => (f.data.type === "session" ? f.data.sessionID : f.data.type));
    expect(sessions).toEqual(["ses_r_m1", "ses_r_m2", "ses_r_m3", "ses_r_live"]);
    const ids = again.frames.map((f) => f.id!);
    expect(ids.every((id) => id > seen.id!)).toBe(true);
    expect([...ids].sort()).toEqual(ids);
    expect(again.frames.map((f) => ("id" in f.data ? f.data.id : null))).toEqual(ids); // the JSON says it too
  });

  test("?since=<id> → the events after it; a Last-Event-ID header wins over ?since=", async () => {
    const probe = await openEventStream(manager.url, manager.token);
    for (const id of ["ses_s1", "ses_s2", "ses_s3"]) await register(id);
    await eventually(() => probe.frames.length >= 3);
    await probe.close();
    const [s1, s2] = probe.frames;

    const since = await openEventStream(manager.url, manager.token, {}, `?since=${s1!.id}`);
    await eventually(() => since.frames.length >= 2);
    await since.close();
    expect(since.frames.map((f) => f.id)).toEqual([s2!.id, probe.frames[2]!.id]);

    const both = await openEventStream(manager.url, manager.token, { "last-event-id": s2!.id! }, `?since=${s1!.id}`);
    await eventually(() => both.frames.length >= 1);
    await both.close();
    expect(both.frames[0]!.id).toBe(probe.frames[2]!.id);

    const refused = await fetch(`${manager.url}/api/events?since=yesterday`, { headers: { authorization: `Bearer ${manager.token}` } });
    expect(refused.status).toBe(422);
  });

  test("?follow=false → the buffered events after since, then the stream ends (raw and SDK)", async () => {
    const since = await registrationEventId("ses_f0");
    for (const id of ["ses_f1", "ses_f2"]) await register(id);
    const raw = await fetch(`${manager.url}/api/events?since=${since}&follow=false`, { headers: { authorization: `Bearer ${manager.token}` } });
    const text = await raw.text(); // ends by itself
    expect([...text.matchAll(/"sessionID":"(ses_f\d)"/g)].map((m) => m[1])).toEqual(["ses_f1", "ses_f2"]);

    const collected: SandboxEvent[] = [];
    for await (const event of client.events(undefined, { since, follow: false })) collected.push(event);
    expect(collected.map((e) => (e.type === "session" ? e.sessionID : e.type))).toEqual(["ses_f1", "ses_f2"]);
  });

  test("an id from before this manager started, or not an id at all → a replay-gap first, then what is buffered and live events", async () => {
    const old = await openEventStream(manager.url, manager.token, { "last-event-id": "01ARZ3NDEKTSV4RRFFQ69G5FAV" }); // 2016
    await eventually(() => old.frames.length >= 2);
    await old.close();
    expect(old.frames[0]!.id).toBeUndefined();
    expect(old.frames[0]!.event).toBe("replay-gap");
    expect(old.frames[0]!.data).toMatchObject({ type: "replay-gap", lastEventID: "01ARZ3NDEKTSV4RRFFQ69G5FAV" });
    expect((old.frames[0]!.data as { message: string }).message).toContain("from before this manager started");
    expect(old.frames[1]!.data).toMatchObject({ type: "session", sessionID: "ses_r_seen" }); // the oldest buffered

    const garbage = await openEventStream(manager.url, manager.token, { "last-event-id": "not-an-id" });
    await register("ses_after_garbage");
    await eventually(() => garbage.frames.length >= 2);
    await garbage.close();
    expect(garbage.frames[0]!.data).toMatchObject({ type: "replay-gap", lastEventID: "not-an-id" });
    expect(garbage.frames[1]!.data).toMatchObject({ type: "session", sessionID: "ses_after_garbage" }); // nothing replayed
  });
});

describe("SDK events()", () => {
  test("the server drops the connection → the SDK reconnects with the last id and loses nothing", async () => {
    const proxy = await cuttableProxy(new URL(manager.url));
    const viaProxy = createClient({ url: proxy.url, token: manager.token });
    const stop = new AbortController();
    const seen: SandboxEvent[] = [];
    const since = await registrationEventId("ses_sdk_start");
    const reading = (async () => {
      for await (const event of viaProxy.events(stop.signal, { since })) seen.push(event);
    })();
    try {
      await register("ses_sdk_before");
      await eventually(() => seen.some(registered("ses_sdk_before")));
      proxy.hold();
      proxy.cut();
      for (const id of ["ses_sdk_1", "ses_sdk_2", "ses_sdk_3"]) await register(id); // while the SDK is cut off
      await eventually(() => proxy.parked() === 1); // the SDK came back on its own (after retry: 2000)
      proxy.release();
      await register("ses_sdk_after");
      await eventually(() => seen.some(registered("ses_sdk_after")));
    } finally {
      stop.abort();
      await reading;
      await proxy.close();
    }
    const sessions = seen.flatMap((e) => (e.type === "session" ? [e.sessionID] : [e.type]));
    expect(sessions).toEqual(["ses_sdk_before", "ses_sdk_1", "ses_sdk_2", "ses_sdk_3", "ses_sdk_after"]);
  });

  test("sessions registered and deleted, sandbox toggled, settings changed → one event each, repeats none", async () => {
    const stop = new AbortController();
    const seen: SandboxEvent[] = [];
    const since = await registrationEventId("ses_ev_marker0");
    const reading = (async () => {
      for await (const event of client.events(stop.signal, { since })) seen.push(event);
    })();
    await register("ses_ev_root");
    await register("ses_ev_root"); // an identical repeat: no event
    await client.sessions.register({ id: "ses_ev_child", parentID: "ses_ev_root", directory: repo });
    await client.sandbox.set("ses_ev_root", { sandboxed: false });
    await client.sandbox.set("ses_ev_root", { sandboxed: true });
    await client.sandbox.set("ses_ev_root", { sandboxed: true }); // already on: no event
    await client.settings.patch({ maxRunningVms: 3, idleStopMinutes: 31 });
    await client.settings.patch({ maxRunningVms: 3 }); // nothing changes: no event
    await client.sessions.delete("ses_ev_root");
    await register("ses_ev_marker1");
    await eventually(() => seen.some(registered("ses_ev_marker1")));
    stop.abort();
    await reading;

    const from = seen.findIndex(registered("ses_ev_root"));
    const picked = seen.slice(from).map((e) => {
      const { id, at, ...rest } = e as SandboxEvent & { id: string; at: number };
      expect([typeof id, typeof at]).toEqual(["string", "number"]);
      return rest;
    });
    expect(picked).toEqual([
      { type: "session", phase: "registered", sessionID: "ses_ev_root", parentID: null, forkOf: null, rootSessionID: "ses_ev_root", directory: repo },
      { type: "session", phase: "registered", sessionID: "ses_ev_child", parentID: "ses_ev_root", forkOf: null, rootSessionID: "ses_ev_root", directory: repo },
      { type: "sandbox", rootSessionID: "ses_ev_root", sandboxed: false },
      { type: "sandbox", rootSessionID: "ses_ev_root", sandboxed: true },
      { type: "settings", keys: ["idleStopMinutes", "maxRunningVms"] },
      { type: "session", phase: "deleted", sessionID: expect.any(String) },
      { type: "session", phase: "deleted", sessionID: expect.any(String) },
      { type: "session", phase: "registered", sessionID: "ses_ev_marker1", parentID: null, forkOf: null, rootSessionID: "ses_ev_marker1", directory: repo },
    ]);
    const deleted = picked.filter((e) => e.type === "session" && e.phase === "deleted").map((e) => (e as { sessionID: string }).sessionID);
    expect(deleted.sort()).toEqual(["ses_ev_child", "ses_ev_root"]);
  }, 30_000);
});
