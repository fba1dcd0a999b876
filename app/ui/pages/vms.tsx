/** @jsxImportSource preact */
// VMs: status, spec, running commands, usage from /api/vms/stats, use times, and removal with confirmation.
import { useState } from "preact/hooks";
import { api, describeError } from "../api";
import type { PageProps } from "./page-props";
import { ErrorText } from "../error-text";
import { bytes, when } from "../format";
import { useApi } from "../use-api";

type Vm = {
  name: string;
  rootSessionID: string | null;
  status: string;
  spec: { cpus: number; memoryMib: number; tmpSizeMib: number; image: string } | null;
  createdAt: number | null;
  lastUsedAt: number | null;
  runningExecs: number;
  lastStopReason: string | null;
};
type Stats = { name: string; available: boolean; reason: string | null; cpuSeconds: number | null; memoryBytes: number | null; memoryLimitBytes: number | null; diskUsedBytes: number | null; diskSizeBytes: number | null };

export function VmsPage({ tick }: PageProps) {
  const [removed, setRemoved] = useState(0);
  const vms = useApi<{ vms: Vm[] }>("/api/vms", tick + removed);
  const stats = useApi<{ vms: Stats[] }>("/api/vms/stats", tick + removed);
  const list = vms.data?.vms ?? [];
  return (
    <>
      <ErrorText error={vms.error ?? stats.error} />
      {vms.data && list.length === 0 && <p>No VMs.</p>}
      {list.length > 0 && (
        <table>
          <caption class="muted">Every VM the manager knows; usage as of the last event.</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Session</th>
              <th scope="col">Status</th>
              <th scope="col">Spec</th>
              <th scope="col">Running commands</th>
              <th scope="col">CPU time</th>
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
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function remove() {
    try {
      await api("DELETE", `/api/vms/${encodeURIComponent(vm.name)}`);
      onRemoved();
    } catch (err) {
      setError(describeError(err));
    }
    setConfirming(false);
  }
  const usage = stats && !stats.available ? stats.reason : null;
  return (
    <tr>
      <th scope="row">{vm.name}</th>
      <td data-label="Session">{vm.rootSessionID ?? "—"}</td>
      <td data-label="Status">
        {vm.status}
        {vm.lastStopReason && ` (last stop: ${vm.lastStopReason})`}
      </td>
      <td data-label="Spec">{vm.spec ? `${vm.spec.cpus} CPU${vm.spec.cpus === 1 ? "" : "s"}, ${vm.spec.memoryMib} MiB, image ${vm.spec.image}` : "—"}</td>
      <td data-label="Running commands">{vm.runningExecs}</td>
      <td data-label="CPU time">{usage ?? (stats?.cpuSeconds != null ? `${stats.cpuSeconds.toFixed(2)} s` : "—")}</td>
      <td data-label="Memory">{usage ? "—" : `${bytes(stats?.memoryBytes)} of ${bytes(stats?.memoryLimitBytes)}`}</td>
      <td data-label="Disk">{usage ? "—" : `${bytes(stats?.diskUsedBytes)} of ${bytes(stats?.diskSizeBytes)}`}</td>
      <td data-label="Created / last used">
        {when(vm.createdAt)} / {when(vm.lastUsedAt)}
      </td>
      <td>
        {confirming ? (
          <span role="group" aria-label={`Confirm removal of ${vm.name}`}>
            Remove {vm.name} and its data volume?{" "}
            <button type="button" class="danger" onClick={remove}>
              Yes, remove
            </button>{" "}
            <button type="button" onClick={() => setConfirming(false)}>
              Cancel
            </button>
          </span>
        ) : (
          <button type="button" onClick={() => setConfirming(true)} aria-label={`Remove ${vm.name}`}>
            Remove
          </button>
        )}
        {error && (
          <span class="error" role="alert">
            {error}
          </span>
        )}
      </td>
    </tr>
  );
}
