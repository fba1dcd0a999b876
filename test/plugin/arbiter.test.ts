// The arbiter registry: shared across module copies, tiers and ties, failing claims block, decisions
// cached per call id in a bounded LRU, only the winner marks a call.
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { copyFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import * as arbiter from "../../sdk/arbiter";
import { makeTempDir } from "../helpers";

type ArbiterModule = typeof arbiter;
const input = { sessionID: "ses_1", directory: "/repo" };
let callCounter = 0;
const nextCall = () => ({ callID: `call_${++callCounter}`, ...input });

// A second, independent copy of the module file: what happens when two plugins each bundle the SDK.
const copies = makeTempDir("ss-arbiter-copy-");
async function loadCopy(name: string): Promise<ArbiterModule> {
  const path = join(copies, `${name}.ts`);
  copyFileSync(join(import.meta.dir, "../../sdk/arbiter.ts"), path);
  return (await import(path)) as ArbiterModule;
}
afterAll(() => rmSync(copies, { recursive: true, force: true }));

beforeEach(() => {
  delete (globalThis as Record<symbol, unknown>)[arbiter.ARBITER_KEY];
});

const provider = (id: string, claim: arbiter.SandboxProvider["claim"]): arbiter.SandboxProvider => ({ id, claim });

describe("arbiter registry", () => {
  test("created on first use → lives on globalThis under the shared symbol, versioned", () => {
    const registry = arbiter.getArbiter();
    expect((globalThis as Record<symbol, unknown>)[Symbol.for("opencode.sandbox-arbiter.v1")]).toBe(registry);
    expect(registry.version).toBe(1);
  });

  test("a registry of another version → refused with a reason", () => {
    (globalThis as Record<symbol, unknown>)[arbiter.ARBITER_KEY] = { version: 2 };
    expect(() => arbiter.getArbiter()).toThrow(/version 2/);
  });

  for (const order of [["a", "b"], ["b", "a"]] as const) {
    test(`two module copies loaded ${order.join(" then ")} → one registry, the same winner from either`, async () => {
      const first = await loadCopy(`${order[0]}-${callCounter}`);
      const second = await loadCopy(`${order[1]}-${callCounter}`);
      expect(first).not.toBe(second);
      first.registerProvider(provider(`p-${order[0]}`, () => ({ tier: order[0] === "a" ? "workload" : "explicit", at: 1 })));
      second.registerProvider(provider(`p-${order[1]}`, () => ({ tier: order[1] === "a" ? "workload" : "explicit", at: 2 })));
      expect(first.getArbiter()).toBe(second.getArbiter());
      const call = nextCall();
      const viaFirst = await first.decideCall(call);
      const viaSecond = await second.decideCall(call);
      expect(viaFirst).toEqual(viaSecond);
      expect(viaFirst).toMatchObject({ blocked: false, winner: { providerId: "p-a", claim: { tier: "workload" } } });
      expect(await second.markCall(call.callID, "p-a")).toBe(true);
      expect(first.markedBy(call.callID)).toBe("p-a");
    });
  }
});

describe("arbiter decisions", () => {
  test("workload beats explicit beats default, whatever the registration order", async () => {
    arbiter.registerProvider(provider("d", () => ({ tier: "default", at: 300 })));
    arbiter.registerProvider(provider("e", () => ({ tier: "explicit", at: 200 })));
    arbiter.registerProvider(provider("w", () => ({ tier: "workload", at: 100 })));
    expect(await arbiter.decideCall(nextCall())).toMatchObject({ winner: { providerId: "w" } });
    arbiter.registerProvider(provider("w", () => null));
    expect(await arbiter.decideCall(nextCall())).toMatchObject({ winner: { providerId: "e" } });
    arbiter.registerProvider(provider("e", () => null));
    expect(await arbiter.decideCall(nextCall())).toMatchObject({ winner: { providerId: "d" } });
  });

  test("equal tiers → the most recent `at` wins; equal `at` → the lower provider id, in any order", async () => {
    arbiter.registerProvider(provider("old", () => ({ tier: "explicit", at: 10 })));
    arbiter.registerProvider(provider("new", () => Promise.resolve({ tier: "explicit" as const, at: 20 })));
    expect(await arbiter.decideCall(nextCall())).toMatchObject({ winner: { providerId: "new", claim: { at: 20 } } });
    delete (globalThis as Record<symbol, unknown>)[arbiter.ARBITER_KEY];
    arbiter.registerProvider(provider("zeta", () => ({ tier: "default", at: 5 })));
    arbiter.registerProvider(provider("alpha", () => ({ tier: "default", at: 5 })));
    expect(await arbiter.decideCall(nextCall())).toMatchObject({ winner: { providerId: "alpha" } });
  });

  test("nobody claims → no winner, not blocked", async () => {
    arbiter.registerProvider(provider("off", () => null));
    expect(await arbiter.decideCall(nextCall())).toMatchObject({ blocked: false, winner: null });
  });

  test("a claim that throws → the call is blocked with the provider's reason, even if another claims", async () => {
    arbiter.registerProvider(provider("ok", () => ({ tier: "workload", at: 1 })));
    arbiter.registerProvider(provider("broken", () => {
      throw new Error("manager unreachable");
    }));
    const decision = await arbiter.decideCall(nextCall());
    expect(decision.blocked).toBe(true);
    expect(decision.blocked && decision.reason).toContain('"broken"');
    expect(decision.blocked && decision.reason).toContain("manager unreachable");
  });

  test("a rejected claim promise → blocked", async () => {
    arbiter.registerProvider(provider("rejects", () => Promise.reject(new Error("boom"))));
    expect(await arbiter.decideCall(nextCall())).toMatchObject({ blocked: true, reason: expect.stringContaining("boom") });
  });

  test("a claim slower than the timeout → blocked (timeout injected: 30 ms)", async () => {
    arbiter.configureArbiter({ claimTimeoutMs: 30 });
    expect(arbiter.getArbiter().claimTimeoutMs).toBe(30);
    arbiter.registerProvider(provider("slow", () => new Promise(() => undefined)));
    const started = performance.now();
    const decision = await arbiter.decideCall(nextCall());
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(decision).toMatchObject({ blocked: true, reason: expect.stringContaining("longer than 30 ms") });
  });

  test("the default claim timeout is 15 s", () => {
    expect(arbiter.getArbiter().claimTimeoutMs).toBe(15_000);
  });

  for (const bad of [{ tier: "root", at: 1 }, { tier: "explicit" }, { tier: "explicit", at: Number.NaN }, "explicit", 42, [], undefined]) {
    test(`an invalid claim ${JSON.stringify(bad) ?? "undefined"} → blocked`, async () => {
      arbiter.registerProvider(provider("invalid", () => bad as never));
      expect(await arbiter.decideCall(nextCall())).toMatchObject({ blocked: true, reason: expect.stringContaining("invalid value") });
    });
  }

  test("a call is decided once: the cached decision holds even when claims change", async () => {
    let tier: arbiter.ClaimTier = "default";
    let asked = 0;
    arbiter.registerProvider(provider("p", () => (asked++, { tier, at: 1 })));
    arbiter.registerProvider(provider("q", () => ({ tier: "explicit", at: 1 })));
    const call = nextCall();
    const [one, two] = await Promise.all([arbiter.decideCall(call), arbiter.decideCall(call)]);
    tier = "workload";
    const three = await arbiter.decideCall(call);
    expect(one).toEqual(two);
    expect(three).toEqual(one);
    expect(asked).toBe(1);
    expect(await arbiter.decideCall(nextCall())).toMatchObject({ winner: { providerId: "p" } });
  });

  test("the cache is bounded: the least recently used decision goes first", async () => {
    arbiter.configureArbiter({ maxDecisions: 3 });
    let asked = 0;
    arbiter.registerProvider(provider("p", () => (asked++, { tier: "default", at: 1 })));
    for (const id of ["c1", "c2", "c3"]) await arbiter.decideCall({ callID: id, ...input });
    await arbiter.decideCall({ callID: "c1", ...input }); // touch c1: c2 is now the oldest
    await arbiter.decideCall({ callID: "c4", ...input });
    expect([...arbiter.getArbiter().decisions.keys()]).toEqual(["c3", "c1", "c4"]);
    expect(asked).toBe(4);
  });

  test("the default cache size is 1,000 decisions", async () => {
    arbiter.registerProvider(provider("p", () => ({ tier: "default", at: 1 })));
    for (let i = 0; i < 1_005; i++) await arbiter.decideCall({ callID: `bulk_${i}`, ...input });
    expect(arbiter.getArbiter().decisions.size).toBe(1_000);
    expect(arbiter.getArbiter().decisions.has("bulk_0")).toBe(false);
  });

  test("only the winner marks a call, and only once", async () => {
    arbiter.registerProvider(provider("win", () => ({ tier: "explicit", at: 1 })));
    arbiter.registerProvider(provider("lose", () => ({ tier: "default", at: 9 })));
    const call = nextCall();
    await arbiter.decideCall(call);
    expect(await arbiter.markCall(call.callID, "lose")).toBe(false);
    expect(await arbiter.markCall(call.callID, "win")).toBe(true);
    expect(await arbiter.markCall(call.callID, "win")).toBe(false);
    expect(await arbiter.markCall("never-decided", "win")).toBe(false);
  });

  test("a blocked call cannot be marked by anyone", async () => {
    arbiter.registerProvider(provider("win", () => ({ tier: "explicit", at: 1 })));
    arbiter.registerProvider(provider("bad", () => ({ nonsense: true }) as never));
    const call = nextCall();
    await arbiter.decideCall(call);
    expect(await arbiter.markCall(call.callID, "win")).toBe(false);
  });

  test("unregistering removes only that provider instance; registering needs an id and a claim", () => {
    const first = provider("p", () => null);
    const off = arbiter.registerProvider(first);
    arbiter.registerProvider(provider("p", () => null)); // a newer instance under the same id
    off();
    expect(arbiter.listProviders().map((p) => p.id)).toEqual(["p"]);
    expect(() => arbiter.registerProvider({ id: "", claim: () => null })).toThrow(TypeError);
    expect(() => arbiter.registerProvider({ id: "x" } as never)).toThrow(TypeError);
  });
});
