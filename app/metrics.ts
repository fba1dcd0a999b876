// Prometheus metrics for GET /metrics, on a registry of our own (prom-client, the standard Node client:
// text format, histograms and label handling done right). One registry per manager, so tests that build
// several managers in one process never share counters. Labelled counters start at 0 for every label value
// known in advance, so rate() and absent() work before the first event; per-VM usage is read at scrape time.
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { StopReason } from "../workers/protocol";
import type { VmStatsView } from "./services/vm-stats";

export type SessionCounts = { root: { sandboxed: number; unsandboxed: number }; child: { sandboxed: number; unsandboxed: number } };

type MetricsReaders = {
  runningVms: () => number;
  maxRunningVms: () => number;
  /** Sessions by kind (root or child) and whether their commands run sandboxed now. */
  sessions?: () => SessionCounts;
  /** Every VM's usage now (see app/services/vm-stats.ts). */
  vmStats?: () => Promise<VmStatsView[]>;
  build?: { version: string; runtime: string | null };
  /** The configured secrets and their host entries: the label values of sandbox_secret_substitutions_total. */
  secretHosts?: { name: string; hosts: string[] }[];
};

const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

const EXEC_OUTCOMES = ["ok", "nonzero", "timeout", "cancelled", "failed"] as const;
/** A Record, so that a new StopReason fails the typecheck until it is listed here. */
const STOP_REASONS: Record<StopReason, true> = { idle: true, suspend: true, cap: true, "toggle-off": true, deleted: true, "spec-change": true, crash: true, sweep: true, manual: true, disabled: true, recovery: true, shutdown: true };
/** Error codes (lowercased) that POST /api/sessions/:id/exec refuses with before anything runs, and "internal". */
const EXEC_REFUSAL_REASONS = [
  "session_not_found",
  "not_sandboxed",
  "mounts_changed",
  "cwd_outside_mounts",
  "path_not_found",
  "worktree_unverified",
  "unsafe_mount",
  "vm_cap_reached",
  "runtime_failed",
  "shutting_down",
  "image_unavailable",
  "internal",
] as const;

/**
 * Reads every VM's usage once per scrape: the registry calls every collector in one synchronous loop, so
 * they all join the read the first one started; the next scrape reads afresh.
 */
function sharedRead<T>(read: () => Promise<T>, fallback: T): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () =>
    (pending ??= read()
      .catch(() => fallback)
      .finally(() => (pending = undefined)));
}

function usageMetrics(registers: Registry[], readers: MetricsReaders): void {
  const vmStats = sharedRead(readers.vmStats ?? (async () => []), [] as VmStatsView[]);
  const labelNames = ["vm"] as const;
  const perVm = (pick: (vm: VmStatsView) => number | null) => async function (this: Gauge<"vm"> | Counter<"vm">) {
    this.reset(); // a removed VM's series goes with it
    for (const vm of await vmStats()) {
      const value = pick(vm);
      if (value !== null) this.inc({ vm: vm.name }, value);
    }
  };
  new Counter({ name: "sandbox_vm_cpu_seconds_total", help: "CPU time used by each running VM's processes (from its cgroup)", labelNames, registers, collect: perVm((vm) => vm.cpuSeconds) });
  new Gauge({ name: "sandbox_vm_memory_bytes", help: "Memory each running VM uses, without reclaimable page cache; /tmp included", labelNames, registers, collect: perVm((vm) => vm.memoryBytes) });
  new Gauge({ name: "sandbox_vm_memory_limit_bytes", help: "Each running VM's memory limit", labelNames, registers, collect: perVm((vm) => vm.memoryLimitBytes) });
  new Gauge({ name: "sandbox_vm_pids", help: "Processes and threads in each running VM", labelNames, registers, collect: perVm((vm) => vm.pids) });
  new Gauge({ name: "sandbox_vm_disk_used_bytes", help: "Used in each VM's home volume filesystem", labelNames, registers, collect: perVm((vm) => vm.diskUsedBytes) });
  new Gauge({ name: "sandbox_vm_disk_size_bytes", help: "Size of each VM's home volume filesystem", labelNames, registers, collect: perVm((vm) => vm.diskSizeBytes) });
}

function infoMetrics(registers: Registry[], readers: MetricsReaders): void {
  if (readers.build) {
    const build = new Gauge({ name: "sandbox_build_info", help: "Always 1: the manager's version, the runtime in use and the Bun version", labelNames: ["version", "runtime", "bun_version"] as const, registers });
    build.set({ version: readers.build.version, runtime: readers.build.runtime ?? "none", bun_version: Bun.version }, 1);
  }
  const sessions = readers.sessions;
  new Gauge({
    name: "sandbox_sessions",
    help: "Registered sessions, by kind (root or child) and whether their commands run sandboxed now",
    labelNames: ["kind", "sandboxed"] as const,
    registers,
    collect() {
      const counts = sessions?.() ?? { root: { sandboxed: 0, unsandboxed: 0 }, child: { sandboxed: 0, unsandboxed: 0 } };
      for (const kind of ["root", "child"] as const) {
        this.set({ kind, sandboxed: "true" }, counts[kind].sandboxed);
        this.set({ kind, sandboxed: "false" }, counts[kind].unsandboxed);
      }
    },
  });
}

export function createMetrics(read: MetricsReaders) {
  const registry = new Registry();
  const registers = [registry];
  new Gauge({ name: "sandbox_running_vms", help: "VMs running now", registers, collect() { this.set(read.runningVms()); } });
  new Gauge({ name: "sandbox_max_running_vms", help: "The cap on running VMs (maxRunningVms)", registers, collect() { this.set(read.maxRunningVms()); } });
  infoMetrics(registers, read);
  usageMetrics(registers, read);
  const metrics = {
    registry,
    boots: new Counter({ name: "sandbox_vm_boots_total", help: "VM boots (create, start or recreate)", registers }),
    bootDuration: new Histogram({ name: "sandbox_vm_boot_duration_seconds", help: "From booting to running", buckets: SECONDS_BUCKETS, registers }),
    execs: new Counter({ name: "sandbox_execs_total", help: "Commands run, by outcome", labelNames: ["outcome"] as const, registers }),
    oomKills: new Counter({ name: "sandbox_oom_kills_total", help: "Commands the kernel killed at their VM's memory limit", registers }),
    execDuration: new Histogram({ name: "sandbox_exec_duration_seconds", help: "From start to exit", buckets: SECONDS_BUCKETS, registers }),
    evictions: new Counter({ name: "sandbox_vm_evictions_total", help: "VMs stopped to make room under the cap", registers }),
    removals: new Counter({ name: "sandbox_vm_removals_total", help: "VMs removed, by reason", labelNames: ["reason"] as const, registers }),
    refusals: new Counter({ name: "sandbox_exec_refusals_total", help: "Commands refused before they ran, by reason", labelNames: ["reason"] as const, registers }),
    // Bounded by configuration: `name` is a configured secret (or git credential) and `host` the configured
    // host entry that matched (`*.example.com`, not each subdomain a guest makes up). Per session: the events.
    secretSubstitutions: new Counter({ name: "sandbox_secret_substitutions_total", help: "Requests that went out with a secret's value, by secret name and configured host", labelNames: ["name", "host"] as const, registers }),
  };
  for (const outcome of EXEC_OUTCOMES) metrics.execs.inc({ outcome }, 0);
  for (const reason of Object.keys(STOP_REASONS)) metrics.removals.inc({ reason }, 0);
  for (const reason of EXEC_REFUSAL_REASONS) metrics.refusals.inc({ reason }, 0);
  for (const { name, hosts } of read.secretHosts ?? []) for (const host of hosts) metrics.secretSubstitutions.inc({ name, host: host.toLowerCase() }, 0);
  return metrics;
}

export type Metrics = ReturnType<typeof createMetrics>;
