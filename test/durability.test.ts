// Crash durability: SIGKILL the real manager in the middle of a stream of acknowledged PUTs, restart it,
// and find every acknowledged change.
import { afterAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { createClient } from "../sdk/index";
import { makeTempDir } from "./helpers";
import { startManager } from "./manager-process";

const STREAMS = 4;
const dataDir = makeTempDir("ss-durable-");
afterAll(() => {
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(`${dataDir}-runtime`, { recursive: true, force: true });
});

describe("durability", () => {
  test("SIGKILL mid-stream → after restart every acknowledged PUT is there", async () => {
    const first = await startManager(dataDir);
    const client = createClient({ url: first.url, token: first.token, timeoutMs: 5_000 });
    for (let s = 0; s < STREAMS; s++) await client.sessions.register({ id: `ses_d${s}`, directory: "/repo" });

    // Each stream raises its session's memory by 1 MiB per PUT; the value acknowledged last is remembered.
    const acknowledged = new Array<number>(STREAMS).fill(0);
    const killAfterAcks = 150 + Math.floor(Math.random() * 100);
    let totalAcks = 0;
    const killed = Promise.withResolvers<void>();
    const streams = Array.from({ length: STREAMS }, async (_, s) => {
      for (let memoryMib = 200; ; memoryMib++) {
        try {
          await client.sandbox.set(`ses_d${s}`, { resources: { memoryMib }, sandboxed: memoryMib % 2 === 0 });
        } catch {
          return; // the manager died under this request: it was never acknowledged
        }
        acknowledged[s] = memoryMib;
        if (++totalAcks === killAfterAcks) killed.resolve();
      }
    });
    await killed.promise;
    await first.kill9();
    await Promise.all(streams);

    const second = await startManager(dataDir);
    try {
      const after = createClient({ url: second.url, token: second.token });
      for (let s = 0; s < STREAMS; s++) {
        const view = await after.sandbox.get(`ses_d${s}`);
        const stored = view.resources.effective.memoryMib;
        // The one in flight at the kill may or may not have landed; nothing acknowledged may be missing.
        expect([s, stored === acknowledged[s] || stored === acknowledged[s]! + 1]).toEqual([s, true]);
        expect(view.sandboxed).toBe(stored % 2 === 0);
      }
      expect(acknowledged.reduce((a, b) => a + b - 199, 0)).toBeGreaterThanOrEqual(killAfterAcks);
    } finally {
      await second.stop();
    }
  });
});
