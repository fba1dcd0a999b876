// Which tier a session's isolation choice runs in (resolveTier), and which tiers a manager offers given its
// runtime and the drivers' probes (tierAvailability). Pure functions: every case is a unit test.
import { describe, expect, test } from "bun:test";
import { tierAvailability } from "../../app/runtime-setup";
import type { Capability } from "../../runtime/driver";
import { resolveTier, type TierAvailability } from "../../runtime/isolation";

const up = (version: string): Capability => ({ available: true, version, problems: [] });
const down = (what: string, fix: string): Capability => ({ available: false, version: "x", problems: [{ what, fix }] });
const probes = { local: up("local (crun 1.8.1)"), gvisor: up("gvisor (runsc)"), msb: down("/dev/kvm is kvm_pvm", "run on a KVM host") };

describe("resolveTier", () => {
  const tiers: TierAvailability = {
    container: { available: true, reason: "crun" },
    gvisor: { available: true, reason: "runsc" },
    microvm: { available: false, reason: "no KVM" },
  };
  test("auto → the strongest that works", () => {
    expect(resolveTier("auto", tiers)).toEqual({ tier: "gvisor", reason: "isolation auto: gvisor is the strongest tier that works here (runsc)" });
    expect(resolveTier("auto", { ...tiers, gvisor: { available: false, reason: "runsc missing" } }).tier).toBe("container");
  });
  test("an explicit tier → that tier, or none with why: never a weaker one", () => {
    expect(resolveTier("container", tiers).tier).toBe("container");
    expect(resolveTier("microvm", tiers)).toEqual({ tier: undefined, reason: "isolation microvm is not available here: no KVM" });
  });
  test("nothing works → auto names every tier's reason", () => {
    const none: TierAvailability = { container: { available: false, reason: "a" }, gvisor: { available: false, reason: "b" }, microvm: { available: false, reason: "c" } };
    expect(resolveTier("auto", none)).toEqual({ tier: undefined, reason: "isolation auto: no tier works here (container: a; gvisor: b; microvm: c)" });
  });
});

describe("tierAvailability", () => {
  test("an embedded runtime in use → the embedded tiers that work; microvm with msb's own reason", () => {
    expect(tierAvailability("gvisor", probes)).toEqual({
      container: { available: true, reason: "local (crun 1.8.1)" },
      gvisor: { available: true, reason: "gvisor (runsc)" },
      microvm: { available: false, reason: "/dev/kvm is kvm_pvm (fix: run on a KVM host)" },
    });
  });
  test("msb works but the manager runs the embedded tiers → microvm refused with how to get it", () => {
    expect(tierAvailability("local", { ...probes, msb: up("msb 0.6.18") }).microvm).toEqual({
      available: false,
      reason: "msb works here, but this manager runs the embedded tiers, which boot root filesystems (fix: start the manager with SANDBOX_RUNTIME=msb)",
    });
  });
  test("msb in use → microvm only; the embedded tiers say how to get them", () => {
    const tiers = tierAvailability("msb", { ...probes, msb: up("msb 0.6.18") });
    expect(tiers.microvm).toEqual({ available: true, reason: "msb 0.6.18" });
    expect(tiers.container.reason).toBe("local works here, but this manager runs microVMs, which boot OCI images (fix: start the manager with SANDBOX_RUNTIME=local or gvisor)");
  });
  test("no runtime in use → nothing available", () => {
    expect(tierAvailability(undefined, probes).container).toEqual({ available: false, reason: "no runtime is in use on this manager" });
  });
});
