/** @jsxImportSource preact */
// VMs: status, spec, running commands, usage from /api/vms/stats, use times, and removal with confirmation.
import { useEffect, useRef, useState } from "preact/hooks";
import type { Answer } from "../../../sdk/api-types";
import { cpuPercentBetween } from "../../../sdk/cpu-percent";
import type { PageProps } from "./page-props";
import { ErrorText } from "../error-text";
import { bytes, cpuCount, when } from "../format";
import { RemoveVm } from "../remove-vm";
import { useTicker } from "../ticker";
import { useApi } from "../use-api";

// The server's own shapes (the SDK's types, generated from its OpenAPI document), not copies.
type Vm = Answer<"listVms">["vms"][number];
type Stats = Answer<"listVmStats">["vms"][number] & { cpuPercent?: number | null };

/** Usage refreshed every 2 s while the tab is visible; CPU % over the time between two reads (100% = one CPU). */
function useStatsWithCpu(refresh: number): { data: { vms: Stats[] } | undefined; error: unknown } {
  const stats = useApi<{ vms: Stats[] }>("/api/vms/stats", refresh);
  const previous = useRef<Map<string, Stats>>(new Map());
  const [withCpu, setWithCpu] = useState<{ vms: Stats[] } | undefined>(undefined);
  useEffect(() => {
    if (!stats.data) return;
    const rows = stats.data.vms.map((now) => ({ ...now, cpuPercent: cpuPercentBetween(previous.current.get(now.name), now) }));
    previous.current = new Map(stats.data.vms.map((s) => [s.name, s]));
    setWithCpu({ vms: rows });
  }, [stats.data]);
  return { data: withCpu, error: stats.error };
}

export function VmsPage({ tick }: PageProps) {
  const [removed, setRemoved] = useState(0);
  const poll = useTicker(2000);
  const vms = useApi<{ vms: Vm[] }>("/api/vms", tick + removed);
  const stats = useStatsWithCpu(tick + removed + poll);
  const list = vms.data?.vms ?? [];
  return (
    <>
      <ErrorText error={vms.error ?? stats.error} />
      {vms.data && list.length === 0 && <p>No VMs.</p>}
      {list.length > 0 && (
        <table>
          <caption class="muted">Every VM the manager knows; usage refreshed every 2 s (CPU: 100% is one CPU). A VM's name opens its page.</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Session</th>
              <th scope="col">Status</th>
              <th scope="col">Spec</th>
              <th scope="col">Running commands</th>
              <th scope="col">CPU</th>
              <th scope="col">Memory</th>
              <th scope="col">Disk</th>
              <th scope="col">Created / last used</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {list.map((vm) => (
              <VmRow key={vm.name} vm={vm} stats={stats.data?.vms.find((s) => s.name === vm.name)} onRemoved={() => setRemoved((n) => n + 1)} />
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

function VmRow({ vm, stats, onRemoved }: { vm: Vm; stats: Stats | undefined; onRemoved(): void }) {
  const usage = stats && !stats.available ? stats.reason : null;
  return (
    <tr>
      <th scope="row">
        <a href={`#vm/${encodeURIComponent(vm.name)}`}>{vm.name}</a>
      </th>
      <td data-label="Session">{vm.rootSessionID ?? "—"}</td>
      <td data-label="Status">
        {vm.status}
        {vm.lastStopReason && ` (last stop: ${vm.lastStopReason})`}
      </td>
      <td data-label="Spec">{vm.spec ? `${cpuCount(vm.spec.cpus)}, ${vm.spec.memoryMib} MiB, image ${vm.spec.image}` : "—"}</td>
      <td data-label="Running commands">{vm.runningExecs}</td>
      <td data-label="CPU">{usage ?? (stats?.cpuPercent != null ? `${stats.cpuPercent.toFixed(1)}%` : stats?.cpuSeconds != null ? "…" : "—")}</td>
      <td data-label="Memory">{usage ? "—" : `${bytes(stats?.memoryBytes)} of ${bytes(stats?.memoryLimitBytes)}`}</td>
      <td data-label="Disk">{usage ? "—" : `${bytes(stats?.diskUsedBytes)} of ${bytes(stats?.diskSizeBytes)}`}</td>
      <td data-label="Created / last used">
        {when(vm.createdAt)} / {when(vm.lastUsedAt)}
      </td>
      <td>
        <RemoveVm name={vm.name} onRemoved={onRemoved} />
      </td>
    </tr>
  );
}
