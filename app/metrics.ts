// Prometheus metrics for GET /metrics, on a registry of our own (prom-client, the standard Node client:
// text format, histograms and label handling done right). One registry per manager, so tests that build
// several managers in one process never share counters.
import { Counter, Gauge, Histogram, Registry } from "prom-client";

export type MetricsReaders = { runningVms: () => number; maxRunningVms: () => number };

const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

export function createMetrics(read: MetricsReaders) {
  const registry = new Registry();
  const registers = [registry];
  new Gauge({ name: "sandbox_running_vms", help: "VMs running now", registers, collect() { this.set(read.runningVms()); } });
  new Gauge({ name: "sandbox_max_running_vms", help: "The cap on running VMs (maxRunningVms)", registers, collect() { this.set(read.maxRunningVms()); } });
  return {
    registry,
    boots: new Counter({ name: "sandbox_vm_boots_total", help: "VM boots (create, start or recreate)", registers }),
    bootDuration: new Histogram({ name: "sandbox_vm_boot_duration_seconds", help: "From booting to running", buckets: SECONDS_BUCKETS, registers }),
    execs: new Counter({ name: "sandbox_execs_total", help: "Commands run, by outcome", labelNames: ["outcome"] as const, registers }),
    execDuration: new Histogram({ name: "sandbox_exec_duration_seconds", help: "From start to exit", buckets: SECONDS_BUCKETS, registers }),
    evictions: new Counter({ name: "sandbox_vm_evictions_total", help: "VMs stopped to make room under the cap", registers }),
    removals: new Counter({ name: "sandbox_vm_removals_total", help: "VMs removed, by reason", labelNames: ["reason"] as const, registers }),
    refusals: new Counter({ name: "sandbox_exec_refusals_total", help: "Commands refused before they ran, by reason", labelNames: ["reason"] as const, registers }),
    // Bounded by configuration: `name` is a configured secret (or git credential) and `host` the configured
    // host entry that matched (`*.example.com`, not each subdomain a guest makes up). Per session: the events.
    secretSubstitutions: new Counter({ name: "sandbox_secret_substitutions_total", help: "Requests that went out with a secret's value, by secret name and configured host", labelNames: ["name", "host"] as const, registers }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
