// assessCapability: the msb probe's verdict from gathered facts, each missing piece with its fix.
import { describe, expect, test } from "bun:test";
import { MSB_PINNED_VERSION } from "../../runtime/msb";
import { assessCapability, type ProbeFacts } from "../../runtime/msb/probe";

// What this machine reported (msb 0.6.18 doctor output, captured here).
const DOCTOR_HERE = `info Platform: Linux x86_64
   ✓ msb          /x/bin/msb
   ✓ libkrunfw    /x/lib/libkrunfw.so.5.6.1
   ✗ CPU virt     not found
   ✓ KVM device   /dev/kvm
   ✓ KVM access   read/write
error: CPU virtualization is not available
  → no vmx (Intel) or svm (AMD) flag in /proc/cpuinfo
  → enable virtualization (VT-x / AMD-V) in your BIOS or UEFI firmware
`;

const good: ProbeFacts = {
  binary: { path: "/x/bin/msb", source: "npm package" },
  version: { ok: true, stdout: `msb ${MSB_PINNED_VERSION}\n` },
  kvm: { exists: true, readWrite: true, pvm: false, cpuVirtualisation: true },
  doctor: { exitCode: 0, output: "" },
};

describe("assessCapability", () => {
  test("all present → available, no problems", () => {
    expect(assessCapability(good)).toEqual({ available: true, version: `msb ${MSB_PINNED_VERSION}`, problems: [] });
  });

  test("this machine's facts (kvm_pvm, doctor failing on CPU virt) → unavailable, both named with fixes", () => {
    const capability = assessCapability({ ...good, kvm: { ...good.kvm, pvm: true, cpuVirtualisation: false }, doctor: { exitCode: 1, output: DOCTOR_HERE } });
    expect(capability.available).toBe(false);
    expect(capability.problems.map((p) => p.what)).toEqual([
      expect.stringContaining("kvm_pvm"),
      "msb doctor: CPU virt: not found (CPU virtualization is not available)",
    ]);
    expect(capability.problems[1]?.fix).toContain("no vmx (Intel) or svm (AMD) flag");
  });

  test("no binary → one problem telling how to install", () => {
    const capability = assessCapability({ ...good, binary: undefined, version: { ok: false, error: "not run" }, doctor: undefined });
    expect(capability.problems).toEqual([{ what: expect.stringContaining("no msb binary"), fix: expect.stringContaining(`microsandbox@${MSB_PINNED_VERSION}`) }]);
  });

  test("another msb version → unavailable (command lines are verified against the pinned one)", () => {
    const capability = assessCapability({ ...good, version: { ok: true, stdout: "msb 0.7.2\n" } });
    expect(capability.available).toBe(false);
    expect(capability.problems[0]?.what).toContain("0.7.2");
  });

  test("missing /dev/kvm, or no access → each a problem", () => {
    expect(assessCapability({ ...good, kvm: { ...good.kvm, exists: false, readWrite: false } }).problems[0]?.what).toBe("/dev/kvm does not exist");
    expect(assessCapability({ ...good, kvm: { ...good.kvm, readWrite: false } }).problems[0]?.fix).toContain("kvm group");
  });

  test("doctor failing without ✗ lines → its error header", () => {
    expect(assessCapability({ ...good, doctor: { exitCode: 1, output: "error: boom\n" } }).problems).toEqual([{ what: "msb doctor failed: boom", fix: "run `msb doctor` for details" }]);
  });
});
