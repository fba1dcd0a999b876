// judgeKvm: the one KVM verdict (msb probe, doctor, admin doctor) from host facts, each missing piece with
// its fix; readKvmFacts against this machine.
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { judgeKvm, readKvmFacts, type KvmFacts } from "../../runtime/kvm-probe";

const hardware: KvmFacts = { exists: true, readWrite: true, pvm: false, cpuVirtualisation: true };

describe("judgeKvm", () => {
  test("read-write /dev/kvm with a vmx/svm flag → usable, no problems", () => {
    expect(judgeKvm(hardware)).toEqual({ usable: true, facts: hardware, detail: "/dev/kvm is present and read-write, with hardware virtualisation", problems: [] });
  });

  test("no flag to read (not x86) → judged on /dev/kvm alone", () => {
    expect(judgeKvm({ ...hardware, cpuVirtualisation: null })).toMatchObject({ usable: true, detail: "/dev/kvm is present and read-write" });
  });

  test("missing, or not read-write → that problem first, with its fix", () => {
    expect(judgeKvm({ ...hardware, exists: false, readWrite: false }).problems.map((p) => p.what)).toEqual(["/dev/kvm does not exist"]);
    expect(judgeKvm({ ...hardware, readWrite: false }).problems[0]?.fix).toContain("kvm group");
  });

  test("kvm_pvm without a flag (this machine) → one problem, kvm_pvm, not also the missing flag", () => {
    const verdict = judgeKvm({ ...hardware, pvm: true, cpuVirtualisation: false });
    expect(verdict.usable).toBe(false);
    expect(verdict.problems.map((p) => p.what)).toEqual([expect.stringContaining("kvm_pvm")]);
    expect(verdict.detail).toBe(verdict.problems[0]!.what);
  });

  test("/dev/kvm on an x86 CPU without vmx/svm → unusable, the flag named", () => {
    expect(judgeKvm({ ...hardware, cpuVirtualisation: false }).problems.map((p) => p.what)).toEqual([expect.stringContaining("no vmx/svm flag")]);
  });
});

describe("readKvmFacts", () => {
  test("this machine → the facts the files show", () => {
    const facts = readKvmFacts();
    expect(facts.exists).toBe(existsSync("/dev/kvm"));
    expect(facts.pvm).toBe(existsSync("/sys/module/kvm_pvm"));
    if (!facts.exists) expect(facts.readWrite).toBe(false);
  });
});
