// The event buffer's limits over real HTTP (a test app on port 0, its real bus fed directly): a
// Last-Event-ID the ring no longer reaches back to is answered with a replay-gap and the 10,000 buffered
// events; a subscriber that falls more than the ring behind is told how many it lost (through the SDK).
// Then the SDK's parser and reconnection against a stand-in SSE server (named as such) that writes the
// grammar's other spellings: CRLF, `data:` without a space, frames split across chunks, a closed stream.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { EVENT_BUFFER_SIZE } from "../../app/events/event-bus";
import { createClient, ManagerUnreachableError, UnauthorizedError, type SandboxEvent } from "../../sdk/index";
import { eventually } from "../actors/fixture";
import { makeTestApp, TEST_TOKEN, type TestApp } from "../helpers";
import { openEventStream } from "./sse-client";

let t: TestApp;
let server: ReturnType<typeof Bun.serve>;
beforeAll(() => {
  t = makeTestApp();
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: t.app.fetch });
});
afterAll(() => {
  void server.stop(true);
  t.cleanup();
});

const url = () => server.url.href.replace(/\/$/, "");
const progress = (detail: string) => t.events.publish({ type: "image", image: "default", phase: "progress", detail, at: Date.now() });
const detailOf = (e: SandboxEvent | undefined) => (e?.type === "image" ? e.detail : e?.type);

describe("event buffer", () => {
  test("Last-Event-ID older than the ring → replay-gap naming the oldest buffered id, then exactly the last 10,000 events", async () => {
    const seen = progress("seen");
    for (let i = 0; i < EVENT_BUFFER_SIZE + 5; i++) progress(`gap ${i}`);
    const stream = await openEventStream(url(), TEST_TOKEN, { "last-event-id": seen.id });
    await eventually(() => stream.frames.length >= EVENT_BUFFER_SIZE + 1);
    await stream.close();

    const [notice, ...replayed] = stream.frames;
    expect(notice!.event).toBe("replay-gap");
    expect(notice!.id).toBeUndefined();
    expect(notice!.data).toMatchObject({ type: "replay-gap", lastEventID: seen.id, oldestID: replayed[0]!.id });
    expect((notice!.data as { message: string }).message).toContain(`the buffer keeps the last ${EVENT_BUFFER_SIZE} events and no longer reaches back to ${seen.id}`);
    expect(replayed.length).toBe(EVENT_BUFFER_SIZE);
    expect(detailOf(replayed[0]!.data)).toBe("gap 5");
    expect(detailOf(replayed.at(-1)!.data)).toBe(`gap ${EVENT_BUFFER_SIZE + 4}`);
  }, 60_000);

  test("a subscriber that falls more than the ring behind → an overflow event naming how many it lost, then the buffered ones (SDK)", async () => {
    const client = createClient({ url: url(), token: TEST_TOKEN });
    const stop = new AbortController();
    const seen: SandboxEvent[] = [];
    const start = progress("start");
    const reading = (async () => {
      for await (const event of client.events(stop.signal, { since: start.id })) seen.push(event);
    })();
    progress("ready");
    await eventually(() => seen.some((e) => detailOf(e) === "ready"));
    // One burst in one tick: the stream cannot send any of it before the ring has moved 251 past its cursor (the burst and "after").
    for (let i = 0; i < EVENT_BUFFER_SIZE + 250; i++) progress(`burst ${i}`);
    progress("after");
    await eventually(() => seen.some((e) => detailOf(e) === "after"), 60_000);
    stop.abort();
    await reading;

    const from = seen.findIndex((e) => e.type === "overflow");
    expect(seen.slice(0, from).map(detailOf)).toEqual(["ready"]);
    expect(seen[from]).toMatchObject({ type: "overflow", dropped: 251 });
    expect((seen[from] as { message: string }).message).toContain(`fell more than ${EVENT_BUFFER_SIZE} events behind: 251 events were dropped`);
    const rest = seen.slice(from + 1).map(detailOf);
    expect(rest.length).toBe(EVENT_BUFFER_SIZE);
    expect(rest[0]).toBe("burst 251");
    expect(rest.at(-1)).toBe("after");
  }, 60_000);

  test("a client that stops reading → the stream stops being pulled (its backlog is the ring, not a queue); reading again → an overflow event", async () => {
    const socket = connect(server.port!, "127.0.0.1");
    const received: string[] = [];
    let tail = ""; // a frame may arrive in pieces
    socket.setEncoding("utf8").on("data", (text: string) => {
      received.push(text);
      tail = (tail + text).slice(-4_096);
    });
    socket.write(`GET /api/events HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${TEST_TOKEN}\r\n\r\n`);
    await eventually(() => tail.includes(": connected"));
    socket.pause();
    const line = "x".repeat(1_000);
    // 40 MB in batches, the event loop turning in between: the server sends until the socket is full, then waits.
    for (let batch = 0; batch < 40; batch++) {
      for (let i = 0; i < 1_000; i++) progress(`${line} ${batch}-${i}`);
      await Bun.sleep(1);
    }
    progress("after");
    socket.resume();
    await eventually(() => tail.includes('"detail":"after"'), 60_000);
    socket.destroy();
    const text = received.join("");
    const overflow = /event: overflow\r?\ndata: (\{.*\})/.exec(text);
    expect(overflow).not.toBeNull();
    const { dropped } = JSON.parse(overflow![1]!) as { dropped: number };
    expect(dropped).toBeGreaterThan(0);
    // Every event is either received or counted as dropped.
    expect((text.match(/^event: image$/gm) ?? []).length + dropped).toBe(40_001);
  }, 60_000);
});

describe("SDK events() against a stand-in SSE server", () => {
  test("CRLF, `data:` without a space, split chunks; the stream ends → it reconnects after retry: with Last-Event-ID", async () => {
    const asked: (string | null)[] = [];
    const chunks = [
      ["retry: 20\r\n: hello\r\n\r\nid: 01KB0000000000000000000001\r\nevent: settings\r\nda", 'ta:{"id":"01KB0000000000000000000001","type":"settings","keys":["cpus"],"at":1}\r', "\n\r\n"],
      ['id:01KB0000000000000000000002\nevent:settings\ndata:{"id":"01KB0000000000000000000002","type":"settings","keys":["diskMib"],"at":2}\n\n', 'event: overflow\ndata: {"type":"overflow","dropped":3,"message":"m","at":3}\n\n'],
    ];
    const standIn = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(request) {
        asked.push(request.headers.get("last-event-id"));
        const parts = chunks[asked.length - 1] ?? [];
        const last = asked.length >= chunks.length;
        const body = new ReadableStream<Uint8Array>({
          async start(controller) {
            for (const part of parts) {
              controller.enqueue(new TextEncoder().encode(part));
              await Bun.sleep(5);
            }
            if (!last) controller.close(); // the first stream ends: the SDK must come back
          },
        });
        return new Response(body, { headers: { "content-type": "text/event-stream" } });
      },
    });
    const stop = new AbortController();
    const seen: SandboxEvent[] = [];
    const disconnects: number[] = [];
    const onDisconnect = (_: ManagerUnreachableError, retryInMs: number) => disconnects.push(retryInMs);
    const reading = (async () => {
      for await (const event of createClient({ url: standIn.url.href.replace(/\/$/, ""), token: TEST_TOKEN }).events(stop.signal, { onDisconnect })) seen.push(event);
    })();
    await eventually(() => seen.length >= 3);
    stop.abort();
    await reading;
    void standIn.stop(true);

    expect(seen).toEqual([
      { id: "01KB0000000000000000000001", type: "settings", keys: ["cpus"], at: 1 },
      { id: "01KB0000000000000000000002", type: "settings", keys: ["diskMib"], at: 2 },
      { type: "overflow", dropped: 3, message: "m", at: 3 },
    ]);
    expect(asked).toEqual([null, "01KB0000000000000000000001"]);
    expect(disconnects).toEqual([20]); // the server's retry:
  });

  test("no manager at first, or reconnect: false and the stream ends → ManagerUnreachableError; a wrong token → UnauthorizedError, not a retry", async () => {
    const nobody = createClient({ url: "http://127.0.0.1:1", token: TEST_TOKEN }).events();
    expect(await nobody.next().catch((e) => e)).toBeInstanceOf(ManagerUnreachableError);

    const ended = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("retry: 10\n\n", { headers: { "content-type": "text/event-stream" } }) });
    const once = createClient({ url: ended.url.href.replace(/\/$/, ""), token: TEST_TOKEN }).events(undefined, { reconnect: false });
    expect(await once.next().catch((e) => e)).toBeInstanceOf(ManagerUnreachableError);
    void ended.stop(true);

    const wrongToken = createClient({ url: url(), token: "wrong-token-0123456789" }).events();
    expect(await wrongToken.next().catch((e) => e)).toBeInstanceOf(UnauthorizedError);
  });
});
