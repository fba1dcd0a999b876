// Stress over the real runtime: 30 sessions doing random execs, toggles, resizes and deletes under a cap
// of 3. A sampler reads the runtime's own list throughout: the cap is never exceeded. Every command reads
// its volume's identity (made by the first command in it): one that starts after a toggle-off was applied
// never sees a volume commands saw before that toggle-off was asked for (no stale VM). Nothing is left.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { NotSandboxedError, SessionNotFoundError, VmCapReachedError } from "../../sdk/index";
import { eventually, makeActorFixture, type ActorFixture } from "./fixture";

const SESSIONS = 30;
const OPERATIONS = 240;
const CAP = 3;

let f: ActorFixture;
beforeAll(async () => {
  f = await makeActorFixture();
  await f.client.settings.patch({ maxRunningVms: CAP, execTimeoutMs: 1_000 });
}, 600_000);
afterAll(async () => f?.teardown(), 180_000);

/** A small seeded generator, so a failing run can be replayed with STRESS_SEED. */
function prng(seed: number) {
  let state = seed >>> 0;
  return () => ((state = (state * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

describe("stress", () => {
  test(`${SESSIONS} sessions, ${OPERATIONS} random operations, cap ${CAP} → cap held, no stale VM, nothing left`, async () => {
    const seed = Number(process.env.STRESS_SEED ?? Date.now() % 100_000);
    const random = prng(seed);
    const repo = f.makeRepo("shared");
    // Per session: the volume identities finished commands saw, and those a toggle-off has retired.
    const seen = new Map<string, Set<string>>();
    const retired = new Map<string, Set<string>>();
    const ids = Array.from({ length: SESSIONS }, (_, i) => `ses_stress_${i}`);
    for (const id of ids) {
      await f.client.sessions.register({ id, directory: repo });
      seen.set(id, new Set());
      retired.set(id, new Set());
    }

    let maxRunning = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const listed = (await f.driver.list({})).filter((vm) => vm.status === "running");
        const running = listed.length;
        if (running > CAP && process.env.STRESS_DEBUG) {
          console.log("OVER CAP runtime:", listed.map((vm) => vm.name).join(" "), "supervisor:", f.supervisor.list().map((r) => `${r.vmName}:${r.status}:${r.activeExecs}`).join(" "));
        }
        maxRunning = Math.max(maxRunning, running);
        await Bun.sleep(5);
      }
    })();

    const counts = { exec: 0, refusedCap: 0, notSandboxed: 0, toggle: 0, resize: 0, delete: 0 };
    const stale: string[] = [];
    const live = new Set(ids);
    const pick = () => [...live][Math.floor(random() * live.size)]!;

    /** Another worker may delete the session at any moment: that is part of the test, not a failure. */
    async function operation(): Promise<void> {
      try {
        await randomOperation();
      } catch (error) {
        if (!(error instanceof SessionNotFoundError)) throw error;
        counts.notSandboxed++;
      }
    }

    async function randomOperation(): Promise<void> {
      const id = pick();
      if (!id) return;
      const roll = random();
      f.clock.advance(1_100); // every idle VM is past the exec timeout: eviction may happen on any boot
      if (roll < 0.7) {
        // Like an agent, retry a cap refusal a few times: with 6 workers and a cap of 3, all places can be busy.
        for (let attempt = 0; attempt < 50; attempt++) {
          const retiredAtStart = new Set(retired.get(id));
          try {
            // The first command in a volume names it (noclobber: one name however many race); a concurrent
            // reader may find it still empty, which counts for nothing.
            const result = await f.client.run(id, { command: "(set -C; od -An -N8 -tx8 /dev/urandom > ~/volume-id) 2>/dev/null; cat ~/volume-id", cwd: repo, timeoutMs: 30_000 });
            counts.exec++;
            const volume = result.stdout.trim();
            if (volume && retiredAtStart.has(volume)) stale.push(`${id}: a command started after a toggle-off ran on the volume ${volume} from before it`);
            if (volume) seen.get(id)!.add(volume);
            return;
          } catch (error) {
            if (error instanceof VmCapReachedError) {
              counts.refusedCap++;
              await Bun.sleep(10);
              continue;
            }
            if (error instanceof NotSandboxedError || error instanceof SessionNotFoundError) return void counts.notSandboxed++;
            throw error;
          }
        }
      } else if (roll < 0.85) {
        const on = (await f.client.sandbox.get(id)).sandboxed;
        const before = [...seen.get(id)!];
        await f.client.sandbox.set(id, { sandboxed: !on });
        // Applied: the VM and volume of every command that finished before it was asked for are retired.
        if (on) for (const volume of before) retired.get(id)!.add(volume);
        counts.toggle++;
      } else if (roll < 0.97) {
        await f.client.sandbox.set(id, { resources: { memoryMib: 256 + 128 * Math.floor(random() * 3) } });
        counts.resize++;
      } else {
        live.delete(id);
        await f.client.sessions.delete(id);
        counts.delete++;
      }
    }

    let remaining = OPERATIONS;
    await Promise.all(
      Array.from({ length: 6 }, async () => {
        while (remaining-- > 0) await operation();
      }),
    );
    sampling = false;
    await sampler;

    console.log(`stress seed ${seed}: ${JSON.stringify(counts)}, max running ${maxRunning}`);
    const problems = f.logLines.filter((line) => /"level":"(warn|error)"/.test(line));
    if (problems.length > 0) console.log(problems.slice(-15).join("\n"));
    for (const id of live) await f.client.sessions.delete(id);
    // Both the runtime and the supervisor: a removal's record goes a moment after the runtime is done.
    await eventually(async () => (await f.driver.list({})).length === 0 && (await f.client.vms.list()).vms.length === 0, 30_000).catch(async (error) => {
      const left = (await f.driver.list({})).map((vm) => `${vm.name} ${vm.status} root=${vm.spec.labels["session-sandbox.root"]}`);
      const records = f.supervisor.list().map((r) => `${r.vmName} ${r.status} execs=${r.activeExecs}`);
      throw new Error(`${error.message}; left in runtime: ${left.join("; ")}; supervisor: ${records.join("; ")}; errors: ${f.logLines.filter((l) => /"(warn|error)"/.test(l)).slice(-10).join("\n")}`);
    });
    expect(stale).toEqual([]);
    expect(maxRunning).toBeLessThanOrEqual(CAP);
    expect(counts.exec).toBeGreaterThan(OPERATIONS / 8); // a sanity floor: the run really ran commands
    const leftover = (await f.client.vms.list()).vms;
    if (leftover.length > 0) console.log(f.logLines.filter((line) => /"level":"(warn|error)"/.test(line) || leftover.some((vm) => line.includes(vm.name))).join("\n"));
    expect(leftover).toEqual([]);
  }, 300_000);
});
