// GET /api/doctor: every precondition of a working sandbox, each problem with its fix. Read-only.
import type { Database } from "bun:sqlite";
import { existsSync, statfsSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Capability } from "../../runtime/driver";
import { probeKvm } from "../../runtime/kvm-probe";
import { detectCgroupLayout } from "../../runtime/local/cgroup-layout";
import { inotifyHostCheck } from "../../runtime/local/inotify-limits";
import { tokenPath } from "../auth-token";
import type { RuntimeStatus } from "../routes/health";
import { ISOLATION_TIERS, type TierAvailability } from "../../runtime/isolation";
import type { RuntimeName } from "../../runtime/select";
import { TIERS, tierOfRuntime } from "../../runtime/tiers/index";

export type DoctorCheck = { name: string; ok: boolean; required: boolean; detail: string; fix: string | null };
export type DoctorReport = { ok: boolean; checks: DoctorCheck[] };

type DoctorInputs = {
  runtime: RuntimeStatus;
  capabilities: Partial<Record<RuntimeName, Capability>>;
  db: Database;
  dataDir: string;
  runtimeDir: string;
  rootfsDir: string;
  tokenFromEnv: boolean;
};

const MIN_FREE_BYTES = 1024 ** 3;

function capabilityCheck(name: RuntimeName, capability: Capability | undefined, required: boolean): DoctorCheck {
  if (!capability) return { name: `runtime ${name}`, ok: false, required, detail: "not probed", fix: "restart the manager" };
  return {
    name: `runtime ${name}`,
    ok: capability.available,
    required,
    detail: capability.available ? capability.version : capability.problems.map((p) => p.what).join("; "),
    fix: capability.available ? null : capability.problems.map((p) => p.fix).join("; "),
  };
}

/** The KVM probe's verdict (runtime/kvm-probe.ts, the one the microvm tier's driver uses). */
function kvmCheck(required: boolean): DoctorCheck {
  const kvm = probeKvm();
  return { name: "kvm", ok: kvm.usable, required, detail: kvm.detail, fix: kvm.usable ? null : kvm.problems.map((problem) => problem.fix).join("; ") };
}

function cgroupCheck(required: boolean): DoctorCheck {
  const layout = detectCgroupLayout();
  if (!layout) return { name: "cgroups", ok: false, required, detail: "no usable cgroup mount found", fix: "mount cgroup2 at /sys/fs/cgroup (or run in a container with --cgroupns=private)" };
  return { name: "cgroups", ok: true, required, detail: layout.kind === "v2" ? "cgroup v2" : layout.kind === "hybrid" ? "hybrid cgroup v1/v2" : "cgroup v1", fix: null };
}

/** All VMs share host root's inotify quota; each VM has its own limit, and the host must cover them all. */
function inotifyCheck(required: boolean): DoctorCheck {
  return { name: "inotify limits", required, ...inotifyHostCheck() };
}

function rootfsCheck(rootfsDir: string, required: boolean): DoctorCheck {
  const ok = existsSync(join(rootfsDir, "etc/session-sandbox-rootfs"));
  return { name: "root filesystem", ok, required, detail: ok ? rootfsDir : `${rootfsDir} is not built`, fix: ok ? null : "bash scripts/build-rootfs.sh (about 40 s, cached afterwards)" };
}

function diskCheck(label: string, dir: string): DoctorCheck {
  try {
    const stats = statfsSync(existsSync(dir) ? dir : "/");
    const free = stats.bavail * stats.bsize;
    const ok = free >= MIN_FREE_BYTES;
    return { name: `disk space (${label})`, ok, required: true, detail: `${(free / 1024 ** 3).toFixed(1)} GiB free at ${dir}`, fix: ok ? null : `free space on the filesystem of ${dir} (at least 1 GiB), e.g. bun run prune` };
  } catch (error) {
    return { name: `disk space (${label})`, ok: false, required: true, detail: String(error), fix: `check that ${dir} is reachable` };
  }
}

function databaseCheck(db: Database): DoctorCheck {
  try {
    const problems = db.query<{ quick_check: string }, []>("PRAGMA quick_check").all().filter((r) => r.quick_check !== "ok");
    const version = db.query<{ user_version: number }, []>("PRAGMA user_version").get()!.user_version;
    const ok = problems.length === 0;
    return { name: "database", ok, required: true, detail: ok ? `ok, schema version ${version}` : problems.map((p) => p.quick_check).join("; "), fix: ok ? null : "stop the manager and restore manager.sqlite from a backup" };
  } catch (error) {
    return { name: "database", ok: false, required: true, detail: String(error), fix: "stop the manager and restore manager.sqlite from a backup" };
  }
}

function tokenCheck(dataDir: string, fromEnv: boolean): DoctorCheck {
  if (fromEnv) return { name: "token", ok: true, required: true, detail: "from SANDBOX_API_TOKEN", fix: null };
  const path = tokenPath(dataDir);
  if (!existsSync(path)) return { name: "token", ok: false, required: true, detail: `${path} is missing`, fix: "restart the manager (it creates one) or set SANDBOX_API_TOKEN" };
  const mode = statSync(path).mode & 0o777;
  const ok = (mode & 0o077) === 0;
  return { name: "token", ok, required: true, detail: `${path}, mode ${mode.toString(8)}`, fix: ok ? null : `chmod 600 ${path}` };
}

/** One line per isolation tier: whether sessions can run in it on this manager, and why not. Informational. */
function tierChecks(tiers: TierAvailability | undefined): DoctorCheck[] {
  if (!tiers) return [];
  return ISOLATION_TIERS.map((tier) => ({
    name: `isolation ${tier}`,
    ok: tiers[tier].available,
    required: false,
    detail: tiers[tier].available ? `available: ${tiers[tier].reason}` : "not available on this manager",
    fix: tiers[tier].available ? null : tiers[tier].reason,
  }));
}

export function runDoctor(inputs: DoctorInputs): DoctorReport {
  const inUse = inputs.runtime.name ? tierOfRuntime(inputs.runtime.name as RuntimeName) : undefined;
  // The tiers that boot root filesystems share the host's cgroups, inotify limits and the root filesystem.
  const usingRootfs = inUse?.imageFamily === "rootfs";
  const checks: DoctorCheck[] = [
    {
      name: "runtime in use",
      ok: inputs.runtime.available,
      required: true,
      detail: inputs.runtime.available ? `${inputs.runtime.name} (${inputs.runtime.version})` : "none: sandboxed commands are refused",
      fix: inputs.runtime.available ? null : inputs.runtime.reason,
    },
    ...Object.values(TIERS).map((tier) => capabilityCheck(tier.runtime, inputs.capabilities[tier.runtime], inputs.runtime.name === tier.runtime)),
    ...tierChecks(inputs.runtime.tiers),
    kvmCheck(inUse?.needsKvm ?? false),
    cgroupCheck(usingRootfs),
    inotifyCheck(usingRootfs),
    rootfsCheck(inputs.rootfsDir, usingRootfs),
    diskCheck("data dir", inputs.dataDir),
    diskCheck("runtime dir", inputs.runtimeDir),
    databaseCheck(inputs.db),
    tokenCheck(inputs.dataDir, inputs.tokenFromEnv),
  ];
  return { ok: checks.every((check) => check.ok || !check.required), checks };
}
