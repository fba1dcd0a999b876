// The tiered driver's routing between isolation tiers, over two in-memory FAKE drivers
// (test/workers/memory-driver.ts) standing in for the container and gvisor tiers. The real tiers run
// it in test/actors/isolation.test.ts.
import { describe, expect, test } from "bun:test";
import { RuntimeError } from "../../runtime/driver";
import { createTieredDriver } from "../../runtime/tiered";
import { createMemoryDriver, memorySpec } from "../workers/memory-driver";

const NAME = "ocm-session-tiered000001";
const run = async (driver: ReturnType<typeof createTieredDriver>, ...argv: string[]) => {
  let out = "";
  const result = await driver.exec(NAME, { argv, cwd: "/" }, { stdout: (chunk) => void (out += new TextDecoder().decode(chunk)), stderr: () => {} });
  return { ...result, out };
};

function harness() {
  const container = createMemoryDriver();
  const gvisor = createMemoryDriver();
  return { container, gvisor, tiered: createTieredDriver({ container, gvisor }, "container") };
}

describe("tiered driver (in-memory fake tiers)", () => {
  test("a spec without a tier → the default tier; the VM reports its tier", async () => {
    const h = harness();
    const result = await h.tiered.ensure(memorySpec(NAME));
    expect(result).toMatchObject({ action: "created", info: { spec: { isolation: "container" } } });
    expect(h.container.running()).toEqual([NAME]);
    expect(h.gvisor.calls).toEqual([]);
    expect((await h.tiered.ensure(memorySpec(NAME, { isolation: "container" }))).action).toBe("reused");
  });

  test("a session moved to another tier → recreated there, the mismatch named; each tier keeps its own volume", async () => {
    const h = harness();
    await h.tiered.ensure(memorySpec(NAME));
    await run(h.tiered, "write", "k", "on-container");
    const moved = await h.tiered.ensure(memorySpec(NAME, { isolation: "gvisor" }));
    expect(moved).toMatchObject({ action: "recreated", mismatches: ["isolation: expected gvisor, found container"], info: { spec: { isolation: "gvisor" } } });
    expect(h.container.running()).toEqual([]);
    expect(h.gvisor.running()).toEqual([NAME]);
    expect((await run(h.tiered, "read", "k")).out).toBe("");
    // Moving back finds the container tier's volume as it was.
    await h.tiered.ensure(memorySpec(NAME, { isolation: "container" }));
    expect((await run(h.tiered, "read", "k")).out).toBe("on-container");
  });

  test("a tier that does not work here → UNAVAILABLE naming it, and the VM where it is stays untouched", async () => {
    const h = harness();
    await h.tiered.ensure(memorySpec(NAME));
    const error = (await h.tiered.ensure(memorySpec(NAME, { isolation: "microvm" })).catch((e) => e)) as RuntimeError;
    expect(error.code).toBe("UNAVAILABLE");
    expect(error.message).toContain("isolation tier microvm does not work on this host");
    expect(h.container.running()).toEqual([NAME]);
  });

  test("attest → another tier is a mismatch; the same tier is the tier's own attestation", async () => {
    const h = harness();
    const info = (await h.tiered.ensure(memorySpec(NAME))).info;
    expect(h.tiered.attest(memorySpec(NAME), info)).toEqual({ ok: true });
    expect(h.tiered.attest(memorySpec(NAME, { isolation: "gvisor" }), info)).toEqual({ ok: false, mismatches: ["isolation: expected gvisor, found container"] });
    expect(h.tiered.attest(memorySpec(NAME, { cpus: 2 }), info)).toEqual({ ok: false, mismatches: ["cpus: expected 2, found 1"] });
  });

  test("remove → the VM and its volume go from every tier; list and inspect report each VM's tier", async () => {
    const h = harness();
    await h.tiered.ensure(memorySpec(NAME));
    await h.tiered.ensure(memorySpec(NAME, { isolation: "gvisor" }));
    expect((await h.tiered.list({})).map((vm) => vm.spec.isolation)).toEqual(["gvisor"]);
    expect((await h.tiered.inspect(NAME))?.spec.isolation).toBe("gvisor");
    expect((await h.tiered.listVolumes!()).sort()).toEqual([NAME]);
    await h.tiered.remove(NAME);
    await h.tiered.removeVolume!(NAME);
    expect(await h.tiered.inspect(NAME)).toBeUndefined();
    expect([...h.container.volumes.keys(), ...h.gvisor.volumes.keys()]).toEqual([]);
  });

  test("a command after ensure asks no tier where its VM is; a VM removed behind its back → NOT_FOUND", async () => {
    const h = harness();
    await h.tiered.ensure(memorySpec(NAME, { isolation: "gvisor" }));
    let inspections = 0;
    for (const driver of [h.container, h.gvisor]) {
      const inspect = driver.inspect;
      driver.inspect = (name) => (inspections++, inspect(name));
    }
    expect((await run(h.tiered, "echo", "fast")).out).toBe("echo fast");
    expect(inspections).toBe(0);
    h.gvisor.vanish(NAME);
    expect(((await run(h.tiered, "true").catch((e) => e)) as RuntimeError).code).toBe("NOT_FOUND");
  });

  test("exec in a VM no tier holds → NOT_FOUND (the actor then boots it)", async () => {
    const h = harness();
    expect(((await run(h.tiered, "true").catch((e) => e)) as RuntimeError).code).toBe("NOT_FOUND");
  });
});
