// Decides whether the msb driver can run VMs on this host: facts are gathered once (binary, version,
// /dev/kvm through runtime/kvm-probe.ts, `msb doctor`), then judged by a pure function that lists each
// missing piece.
import type { Capability } from "../driver";
import { judgeKvm, readKvmFacts, type KvmFacts } from "../kvm-probe";
import { buildDoctorArgs, buildVersionArgs } from "./lifecycle-args";
import { MSB_PINNED_VERSION, type MsbBinary, parseVersion } from "./msb-binary";
import type { MsbCli } from "./msb-cli";
import { lastErrorBlock } from "./stderr-tail";

/** Exported so the tests build facts to assess. */
export type ProbeFacts = {
  binary: MsbBinary | undefined;
  /** `msb --version` output, or why it could not run. */
  version: { ok: true; stdout: string } | { ok: false; error: string };
  kvm: KvmFacts;
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
  problems.push(...judgeKvm(facts.kvm).problems);
  if (facts.doctor && facts.doctor.exitCode !== 0) problems.push(...doctorProblems(facts.doctor));
  return { available: problems.length === 0, version: version ? `msb ${version}` : "msb (not runnable)", problems };
}

export async function gatherProbeFacts(binary: MsbBinary | undefined, cli: MsbCli | undefined): Promise<ProbeFacts> {
  const facts: ProbeFacts = { binary, version: { ok: false, error: "not run" }, kvm: readKvmFacts(), doctor: undefined };
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
