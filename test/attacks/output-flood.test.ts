// A guest printing 2 GiB sets no one's memory. Each hop on the way to the client has a
// window (agent socket → actor Worker → main thread → HTTP body), so the guest is paused while its client
// reads slowly, and the manager's memory stays within a bound whatever the reader does, while another
// session's commands keep answering. Figures: `bun run bench:output-flood` (docs/performance.md).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { makeProject, startTestManager, type TestManager } from "../e2e/fixture";
import { makeTempDir } from "../helpers";
import { prepareLocalRuntime } from "../runtime/local-target";
import { execText, floodCommand, GIB, MIB, outputBytes, rssOf, watchRss } from "./output-flood";

/**
 * The bound asserted on the manager's RSS above its level with both VMs booted: the windows hold 5 MiB per
 * command (4 MiB actor→main, 1 MiB in the HTTP body's queue); the rest is room for the garbage collector's
 * timing. Before the windows, a fast reader took it far past this bound.
 */
const BOUND_BYTES = 256 * MIB;

let manager: TestManager;
let dir: string;
const FLOODED = "ses_flooded";
const NEIGHBOUR = "ses_neighbour";

beforeAll(async () => {
  manager = await startTestManager(await prepareLocalRuntime());
  dir = makeTempDir("ss-flood-");
  for (const id of [FLOODED, NEIGHBOUR]) await manager.client.sessions.register({ id, parentID: null, forkOf: null, directory: makeProject(dir, id) });
  // Both VMs booted, and the exec path warm, before the baseline is read.
  for (const id of [FLOODED, NEIGHBOUR]) await manager.client.run(id, { command: "true" });
}, 300_000);

afterAll(async () => {
  await manager?.cleanUp();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 120_000);

const pid = () => manager.process.proc.pid;
const flood = (pace?: (readSoFar: number) => Promise<void>, signal?: AbortSignal) =>
  execText(manager.process.url, manager.process.token, FLOODED, floodCommand(2 * GIB), pace, signal);

/** Runs `echo` in the neighbour's VM every 500 ms until stopped; each answer must come. */
function neighbourKeepsAnswering(): { stop(): Promise<string[]> } {
  const answers: string[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const result = await manager.client.run(NEIGHBOUR, { command: "echo neighbour-ok" });
      answers.push(result.stdout.trim());
      await Bun.sleep(500);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return answers;
    },
  };
}

describe("a VM printing 2 GiB", () => {
  test("to a fast reader → every byte arrives; the manager's RSS stays within the bound; another session answers meanwhile", async () => {
    Bun.gc(true);
    const baseline = rssOf(pid());
    const rss = watchRss(pid());
    const neighbour = neighbourKeepsAnswering();
    const reading = await flood();
    const answers = await neighbour.stop();
    const peak = rss.stop();
    console.log(`fast reader: ${(2 * GIB) / MIB / reading.seconds} MiB/s; manager RSS ${baseline / MIB} → peak ${peak / MIB} MiB`);
    expect(reading.tail).toContain("exit=0 timedOut=false cancelled=false");
    expect(outputBytes(reading)).toBe(2 * GIB);
    expect(peak - baseline).toBeLessThan(BOUND_BYTES);
    expect(answers.length).toBeGreaterThan(0);
    expect(answers.every((answer) => answer === "neighbour-ok")).toBe(true);
  }, 600_000);

  test("to a slow reader (a chunk every 100 ms, then none for 5 s, then as fast as it can) → paused, not dropped: every byte arrives; RSS within the bound; another session answers meanwhile", async () => {
    Bun.gc(true);
    const baseline = rssOf(pid());
    const rss = watchRss(pid());
    const neighbour = neighbourKeepsAnswering();
    const slowUntil = performance.now() + 5_000;
    let stalled = false;
    const reading = await flood(async () => {
      if (performance.now() < slowUntil) return Bun.sleep(100);
      if (!stalled) {
        stalled = true;
        await Bun.sleep(5_000);
      }
    });
    const answers = await neighbour.stop();
    const peak = rss.stop();
    console.log(`slow reader: manager RSS ${baseline / MIB} → peak ${peak / MIB} MiB; ${answers.length} neighbour answers`);
    expect(outputBytes(reading)).toBe(2 * GIB);
    expect(reading.tail).toContain("exit=0 timedOut=false cancelled=false");
    expect(peak - baseline).toBeLessThan(BOUND_BYTES);
    expect(answers.length).toBeGreaterThan(10);
    expect(answers.every((answer) => answer === "neighbour-ok")).toBe(true);
  }, 600_000);

  test("to a reader that stops reading and goes away → the command is cancelled (its VM runs nothing of it afterwards)", async () => {
    const gone = new AbortController();
    const reading = flood(async (readSoFar) => {
      if (readSoFar > 8 * MIB) {
        await Bun.sleep(2_000);
        gone.abort();
      }
    }, gone.signal).catch((error: Error) => error);
    expect(await reading).toBeInstanceOf(Error);
    // The cancel kills the command's tree in the VM: no head(1) is left printing into a paused pipe.
    for (let i = 0; i < 50; i++) {
      const left = await manager.client.run(FLOODED, { command: "pgrep -x head || true" });
      if (left.stdout.trim() === "") return;
      await Bun.sleep(200);
    }
    throw new Error("the flood's head(1) still runs in the VM after its client went away");
  }, 120_000);
});
