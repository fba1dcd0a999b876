// Whether this host's /dev/kvm can boot a microVM's guest kernel: facts read from the host once per call,
// then a pure verdict that names each missing piece with its fix. The one KVM check: the msb driver's
// probe, the manager's doctor and the admin doctor all render this verdict.
import { accessSync, constants, existsSync, readFileSync } from "node:fs";
import type { Capability } from "./driver";

export type KvmFacts = {
  exists: boolean;
  readWrite: boolean;
  /** /dev/kvm comes from kvm_pvm, which runs only PVM-enabled guest kernels. */
  pvm: boolean;
  /** A vmx or svm flag in /proc/cpuinfo; null where unknown (not x86, which has no such flag, or unreadable). */
  cpuVirtualisation: boolean | null;
};

type KvmVerdict = { usable: boolean; facts: KvmFacts; detail: string; problems: Capability["problems"] };

function cpuVirtualisation(): boolean | null {
  if (process.arch !== "x64" && process.arch !== "ia32") return null;
  try {
    return /^flags\s*:.*\b(vmx|svm)\b/m.test(readFileSync("/proc/cpuinfo", "utf8"));
  } catch {
    return null;
  }
}

export function readKvmFacts(): KvmFacts {
  const facts: KvmFacts = { exists: existsSync("/dev/kvm"), readWrite: false, pvm: existsSync("/sys/module/kvm_pvm"), cpuVirtualisation: cpuVirtualisation() };
  if (!facts.exists) return facts;
  try {
    accessSync("/dev/kvm", constants.R_OK | constants.W_OK);
    facts.readWrite = true;
  } catch {
    // exists, but not ours to use
  }
  return facts;
}

export function judgeKvm(facts: KvmFacts): KvmVerdict {
  const problems: Capability["problems"] = [];
  if (!facts.exists) {
    problems.push({ what: "/dev/kvm does not exist", fix: "enable VT-x/AMD-V (nested virtualisation when inside a VM) and load kvm_intel or kvm_amd" });
  } else if (!facts.readWrite) {
    problems.push({ what: "/dev/kvm is not readable and writable by this user", fix: "add the user to the kvm group (usermod -aG kvm USER) or grant rw on /dev/kvm" });
  }
  if (facts.pvm) {
    problems.push({
      what: "/dev/kvm is provided by kvm_pvm (pagetable-based virtualisation): it boots only PVM-enabled guest kernels, and libkrunfw's kernel stops with KVM_EXIT_INTERNAL_ERROR",
      fix: "run on a host that exposes hardware virtualisation (a vmx or svm flag in /proc/cpuinfo), or use SANDBOX_RUNTIME=local",
    });
  } else if (facts.exists && facts.cpuVirtualisation === false) {
    problems.push({
      what: "/dev/kvm is present, but the CPU shows no vmx/svm flag: microVM guest kernels cannot boot",
      fix: "run on a host with hardware virtualisation (nested virtualisation enabled when inside a VM)",
    });
  }
  const usable = problems.length === 0;
  const withFlag = facts.cpuVirtualisation ? ", with hardware virtualisation" : "";
  const detail = usable ? `/dev/kvm is present and read-write${withFlag}` : problems.map((problem) => problem.what).join("; ");
  return { usable, facts, detail, problems };
}

export const probeKvm = (): KvmVerdict => judgeKvm(readKvmFacts());
