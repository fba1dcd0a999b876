// The windows that hold a command's output back while its client reads slowly: the actor's (what it posted
// and the main thread has not taken), the main thread's report of what it took, and the HTTP body's queue.
// The whole path against the real runtime and a real manager: test/attacks/output-flood.test.ts.
import { describe, expect, test } from "bun:test";
import { createPacedStream } from "../../app/http/paced-stream";
import type { ExecSink } from "../../runtime/driver";
import { createOutputWindow, createTakenReporter, OUTPUT_WINDOW_BYTES } from "../../workers/output-window";
import type { ActorEvent, ExecCommand } from "../../workers/protocol";
import { createSessionActor } from "../../workers/session-actor";
import { createMemoryDriver, memorySpec } from "./memory-driver";

const MIB = 1024 * 1024;

describe("output window (actor side)", () => {
  test("room while under the limit; a promise at it, settled once enough is taken", async () => {
    const window = createOutputWindow(10);
    window.sent(9);
    expect(window.room()).toBeUndefined();
    window.sent(1);
    const wait = window.room();
    expect(wait).toBeInstanceOf(Promise);
    let settled = false;
    void wait!.then(() => (settled = true));
    window.taken(0);
    await Bun.sleep(0);
    expect(settled).toBe(false);
    window.taken(1);
    await Bun.sleep(0);
    expect(settled).toBe(true);
    expect(window.room()).toBeUndefined();
  });

  test("open() → whatever waits goes on, and nothing waits from then on (a cancelled or finished command)", async () => {
    const window = createOutputWindow(1);
    window.sent(5);
    const wait = window.room()!;
    window.open();
    await wait;
    window.sent(100);
    expect(window.room()).toBeUndefined();
  });

  test("the main thread reports what it took in batches, never per chunk", () => {
    const reports: number[] = [];
    const reporter = createTakenReporter((bytes) => reports.push(bytes), 100);
    for (let i = 0; i < 10; i++) reporter.took(30);
    expect(reports).toEqual([120, 120]);
  });
});

describe("the actor paces a command's output by what the main thread took", () => {
  /** The fake driver's exec replaced by one printing `chunks` MiB chunks, asking for room after each (as every real driver does). */
  function printingDriver(chunks: number) {
    const driver = createMemoryDriver();
    const produced = { bytes: 0 };
    const exec = driver.exec.bind(driver);
    driver.exec = async (name, request, sink: ExecSink) => {
      if (request.argv[0] !== "flood") return exec(name, request, sink);
      for (let i = 0; i < chunks; i++) {
        if (request.signal?.aborted) return { exitCode: 137, timedOut: false, cancelled: true };
        sink.stdout(new Uint8Array(MIB));
        produced.bytes += MIB;
        const wait = sink.room?.();
        if (wait) await wait;
      }
      return { exitCode: 0, timedOut: false, cancelled: false };
    };
    return { driver, produced };
  }

  const flood: ExecCommand = { argv: ["flood"], cwd: "/", env: {}, timeoutMs: 60_000 };

  test("nothing taken → it stops at the window; taken → it goes on; every byte posted once", async () => {
    const { driver, produced } = printingDriver(64);
    const posted: number[] = [];
    let reply: ActorEvent | undefined;
    const actor = createSessionActor(driver, "ocm-session-window00001", (event) => {
      if (event.type === "chunk") posted.push(event.data.byteLength);
      if (event.type === "reply") reply = event;
    });
    void actor.receive({ type: "exec", id: 1, spec: memorySpec("ocm-session-window00001"), command: flood });
    await Bun.sleep(50);
    expect(produced.bytes).toBe(OUTPUT_WINDOW_BYTES);
    // The main thread takes it all, a notice at a time, and the actor goes on each time.
    while (!reply) {
      actor.notice({ type: "output-taken", execId: 1, bytes: OUTPUT_WINDOW_BYTES });
      await Bun.sleep(5);
    }
    expect(reply).toMatchObject({ ok: true, value: { exitCode: 0 } });
    expect(posted.reduce((a, b) => a + b, 0)).toBe(64 * MIB);
  });

  test("a command cancelled while held → its window opens, so it ends at once instead of waiting for a reader that is gone", async () => {
    const { driver } = printingDriver(64);
    let reply: ActorEvent | undefined;
    const actor = createSessionActor(driver, "ocm-session-window00002", (event) => void (event.type === "reply" && event.id === 1 && (reply = event)));
    void actor.receive({ type: "exec", id: 1, spec: memorySpec("ocm-session-window00002"), command: flood });
    await Bun.sleep(50);
    expect(reply).toBeUndefined();
    await actor.receive({ type: "cancel", id: 2, execId: 1 });
    for (let i = 0; i < 100 && !reply; i++) await Bun.sleep(5);
    expect(reply).toMatchObject({ ok: true, value: { cancelled: true } });
  });
});

describe("paced response body", () => {
  test("write → a promise once the queue is at its mark; the client's reads settle it; nothing dropped", async () => {
    const paced = createPacedStream(() => {}, 100);
    expect(paced.write(new Uint8Array(60))).toBeUndefined();
    const full = paced.write(new Uint8Array(60));
    expect(full).toBeInstanceOf(Promise);
    let settled = false;
    void full!.then(() => (settled = true));
    await Bun.sleep(0);
    expect(settled).toBe(false);
    const reader = paced.stream.getReader();
    expect((await reader.read()).value?.byteLength).toBe(60);
    await Bun.sleep(0);
    expect(settled).toBe(true);
    paced.close();
    expect((await reader.read()).value?.byteLength).toBe(60);
    expect((await reader.read()).done).toBe(true);
  });

  test("the client goes away → onCancel, and a writer waiting for room goes on (its writes dropped from then on)", async () => {
    let cancelled = false;
    const paced = createPacedStream(() => (cancelled = true), 10);
    const full = paced.write(new Uint8Array(20))!;
    await paced.stream.cancel();
    await full;
    expect(cancelled).toBe(true);
    expect(paced.closed).toBe(true);
    expect(paced.write(new Uint8Array(20))).toBeUndefined();
  });
});
