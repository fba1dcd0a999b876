// Decides whether the msb driver can run VMs on this host: facts are gathered once (binary, version,
// /dev/kvm, kvm_pvm, `msb doctor`), then judged by a pure function that lists each missing piece.
import { accessSync, constants, existsSync } from "node:fs";
import type { Capability } from "../driver";
import { buildDoctorArgs, buildVersionArgs } from "./lifecycle-args";
import { MSB_PINNED_VERSION, type MsbBinary, parseVersion } from "./msb-binary";
import type { MsbCli } from "./msb-cli";
import { lastErrorBlock } from "./stderr-tail";

export type ProbeFacts = {
  binary: MsbBinary | undefined;
  /** `msb --version` output, or why it could not run. */
  version: { ok: true; stdout: string } | { ok: false; error: string };
  kvm: { exists: boolean; readWrite: boolean };
  /** /dev/kvm comes from kvm_pvm, which runs only PVM-enabled guest kernels. */
  pvm: boolean;
  doctor: { exitCode: number | null; output: string } | undefined;
};

const INSTALL_FIX = `run \`bun install\` (installs microsandbox@${MSB_PINNED_VERSION} as a devDependency) or set MSB_PATH to an msb ${MSB_PINNED_VERSION} binary`;

/** msb doctor's failed checks look like `   ✗ CPU virt     not found`; its hints follow `error:` as `  → …`. */
function doctorProblems(doctor: NonNullable<ProbeFacts["doctor"]>): Capability["problems"] {
  const hints = lastErrorBlock(doctor.output)?.details ?? [];
  const fix = hints.length > 0 ? hints.join("; ") : "run `msb doctor` for details";
  const failed = [...doctor.output.matchAll(/^\s*✗\s+(\S.*?)\s{2,}(\S.*)$/gm)].map((m) => `${m[1]}: ${m[2]}`);
  const header = lastErrorBlock(doctor.output)?.header;
  if (failed.length === 0) return [{ what: `msb doctor failed: ${header ?? `exit ${doctor.exitCode}`}`, fix }];
  return failed.map((check) => ({ what: `msb doctor: ${check}${header ? ` (${header})` : ""}`, fix }));
}

export function assessCapability(facts: ProbeFacts): Capability {
  const problems: Capability["problems"] = [];
  const version = facts.version.ok ? parseVersion(facts.version.stdout) : undefined;
  if (!facts.binary) {
    problems.push({ what: "no msb binary found (option, MSB_PATH, the microsandbox npm package, PATH)", fix: INSTALL_FIX });
  } else if (!facts.version.ok || version === undefined) {
    const why = facts.version.ok ? `unexpected output ${JSON.stringify(facts.version.stdout.trim())}` : facts.version.error;
    problems.push({ what: `msb at ${facts.binary.path} does not run: ${why}`, fix: INSTALL_FIX });
  } else if (version !== MSB_PINNED_VERSION) {
    problems.push({ what: `msb ${version} at ${facts.binary.path} is not the pinned ${MSB_PINNED_VERSION} the driver was verified against`, fix: INSTALL_FIX });
  }
  if (!facts.kvm.exists) {
    problems.push({ what: "/dev/kvm does not exist", fix: "enable VT-x/AMD-V (nested virtualisation when inside a VM) and load kvm_intel or kvm_amd" });
  } else if (!facts.kvm.readWrite) {
    problems.push({ what: "/dev/kvm is not readable and writable by this user", fix: "add the user to the kvm group (usermod -aG kvm USER) or grant rw on /dev/kvm" });
  }
  if (facts.pvm) {
    problems.push({
      what: "/dev/kvm is provided by kvm_pvm (pagetable-based virtualisation): it boots only PVM-enabled guest kernels, and libkrunfw's kernel stops with KVM_EXIT_INTERNAL_ERROR",
      fix: "run on a host that exposes hardware virtualisation (a vmx or svm flag in /proc/cpuinfo), or use SANDBOX_RUNTIME=local",
    });
  }
  if (facts.doctor && facts.doctor.exitCode !== 0) problems.push(...doctorProblems(facts.doctor));
  return { available: problems.length === 0, version: version ? `msb ${version}` : "msb (not runnable)", problems };
}

function kvmFacts(): ProbeFacts["kvm"] {
  if (!existsSync("/dev/kvm")) return { exists: false, readWrite: false };
  try {
    accessSync("/dev/kvm", constants.R_OK | constants.W_OK);
    return { exists: true, readWrite: true };
  } catch {
    return { exists: true, readWrite: false };
  }
}

export async function gatherProbeFacts(binary: MsbBinary | undefined, cli: MsbCli | undefined): Promise<ProbeFacts> {
  const facts: ProbeFacts = { binary, version: { ok: false, error: "not run" }, kvm: kvmFacts(), pvm: existsSync("/sys/module/kvm_pvm"), doctor: undefined };
  if (!cli) return facts;
  try {
    const out = await cli.run(buildVersionArgs(), { timeoutMs: 15_000 });
    facts.version = out.exitCode === 0 ? { ok: true, stdout: out.stdout } : { ok: false, error: `exit ${out.exitCode}: ${out.stderr.trim()}` };
  } catch (error) {
    facts.version = { ok: false, error: (error as Error).message };
    return facts;
  }
  const doctor = await cli.run(buildDoctorArgs(), { timeoutMs: 30_000 }).catch((error: Error) => ({ exitCode: null, stdout: "", stderr: error.message }));
  facts.doctor = { exitCode: doctor.exitCode, output: `${doctor.stdout}\n${doctor.stderr}` };
  return facts;
}
