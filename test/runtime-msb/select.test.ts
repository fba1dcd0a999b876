// selectRuntime: SANDBOX_RUNTIME plus probe results → the driver in use and why the other one is not.
import { describe, expect, test } from "bun:test";
import type { Capability } from "../../runtime/driver";
import { InvalidRuntimeSettingError, parseRuntimeRequest, selectRuntime } from "../../runtime/select";

const up = (version: string): Capability => ({ available: true, version, problems: [] });
const down = (what: string, fix: string): Capability => ({ available: false, version: "x", problems: [{ what, fix }] });
const local = up("local (crun 1.8.1)");
const msb = up("msb 0.6.18");
const msbDown = down("/dev/kvm does not exist", "enable KVM");

describe("selectRuntime", () => {
  test("auto with both available → msb, local noted as available but not preferred", () => {
    const s = selectRuntime({ env: "auto", probes: { local, msb } });
    expect(s).toMatchObject({ requested: "auto", runtime: "msb", reason: "auto: msb is available (msb 0.6.18)" });
    expect(s.notUsed.local).toBe("available, but auto prefers msb");
  });

  test("auto with msb unavailable → local, msb's problems and fixes as the reason", () => {
    const s = selectRuntime({ env: undefined, probes: { local, msb: msbDown } });
    expect(s.runtime).toBe("local");
    expect(s.notUsed.msb).toBe("msb is unavailable: /dev/kvm does not exist (fix: enable KVM)");
  });

  test("auto with msb not probed → local, msb reported as not probed", () => {
    expect(selectRuntime({ env: "", probes: { local } }).notUsed.msb).toBe("msb was not probed");
  });

  test("auto with neither → no runtime, both reasons", () => {
    const s = selectRuntime({ env: "auto", probes: { local: down("crun missing", "apt-get install crun"), msb: msbDown } });
    expect(s.runtime).toBeUndefined();
    expect(s.reason).toContain("crun missing");
    expect(s.reason).toContain("/dev/kvm does not exist");
  });

  test("explicit msb while unavailable → no runtime (never falls back to local)", () => {
    const s = selectRuntime({ env: "msb", probes: { local, msb: msbDown } });
    expect(s.runtime).toBeUndefined();
    expect(s.reason).toContain("SANDBOX_RUNTIME=msb, but msb is unavailable");
    expect(s.notUsed.local).toBe("not selected: SANDBOX_RUNTIME=msb");
  });

  test("auto with gvisor and local but no msb → local, the default without KVM; gvisor noted as a choice", () => {
    const s = selectRuntime({ env: "auto", probes: { local, gvisor: up("gvisor (runsc 0.0~20240729.0)"), msb: msbDown } });
    expect(s.runtime).toBe("local");
    expect(s.reason).toBe("auto: msb is unavailable: /dev/kvm does not exist (fix: enable KVM); using local (local (crun 1.8.1))");
    expect(s.notUsed).toEqual({
      msb: "msb is unavailable: /dev/kvm does not exist (fix: enable KVM)",
      gvisor: "available: sessions can choose it (isolation gvisor or auto); SANDBOX_RUNTIME=gvisor makes it the default",
    });
  });

  test("auto with only gvisor working → gvisor", () => {
    expect(selectRuntime({ env: "auto", probes: { local: down("x", "y"), gvisor: up("gvisor"), msb: msbDown } }).runtime).toBe("gvisor");
  });

  test("explicit gvisor → gvisor, even where local works", () => {
    expect(selectRuntime({ env: "gvisor", probes: { local, gvisor: up("gvisor"), msb } })).toMatchObject({ runtime: "gvisor", notUsed: { local: "not selected: SANDBOX_RUNTIME=gvisor" } });
  });

  test("explicit gvisor while runsc is missing → no runtime, never local", () => {
    const s = selectRuntime({ env: "gvisor", probes: { local, gvisor: down("runsc not found", "apt-get install runsc"), msb } });
    expect(s.runtime).toBeUndefined();
    expect(s.reason).toBe("SANDBOX_RUNTIME=gvisor, but gvisor is unavailable: runsc not found (fix: apt-get install runsc)");
  });

  test("explicit local → local even when msb is available", () => {
    expect(selectRuntime({ env: "local", probes: { local, msb } })).toMatchObject({ runtime: "local", notUsed: { msb: "not selected: SANDBOX_RUNTIME=local" } });
  });

  test("invalid values → InvalidRuntimeSettingError naming the allowed ones", () => {
    for (const value of ["MSB", " msb", "kvm", "auto,local"]) {
      const error = (() => {
        try {
          selectRuntime({ env: value, probes: {} });
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(InvalidRuntimeSettingError);
      expect((error as Error).message).toContain("must be one of auto, local, gvisor, msb");
    }
  });

  test("unset or empty → auto", () => {
    expect([parseRuntimeRequest(undefined), parseRuntimeRequest("")]).toEqual(["auto", "auto"]);
  });
});
