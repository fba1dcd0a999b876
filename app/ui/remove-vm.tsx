/** @jsxImportSource preact */
// Removing a VM from the dashboard: a button, then a confirmation naming what goes (the VM and its data
// volume), then DELETE /api/vms/:name. Used by the VMs list and by a VM's own page.
import { useState } from "preact/hooks";
import { api, describeError } from "./api";

export function RemoveVm({ name, onRemoved }: { name: string; onRemoved(): void }) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function remove() {
    try {
      await api("DELETE", `/api/vms/${encodeURIComponent(name)}`);
      onRemoved();
    } catch (err) {
      setError(describeError(err));
    }
    setConfirming(false);
  }
  return (
    <>
      {confirming ? (
        <span role="group" aria-label={`Confirm removal of ${name}`}>
          Remove {name} and its data volume?{" "}
          <button type="button" class="danger" onClick={remove}>
            Yes, remove
          </button>{" "}
          <button type="button" onClick={() => setConfirming(false)}>
            Cancel
          </button>
        </span>
      ) : (
        <button type="button" onClick={() => setConfirming(true)} aria-label={`Remove ${name}`}>
          Remove
        </button>
      )}
      {error && (
        <span class="error" role="alert">
          {error}
        </span>
      )}
    </>
  );
}
