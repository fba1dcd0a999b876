/** @jsxImportSource preact */
// Sessions: the tree (root → children, forks marked) and, per root, its sandbox: toggle, resources, VM.
import { useState } from "preact/hooks";
import { api, ApiError, describeError } from "../api";
import type { PageProps } from "./page-props";
import { ErrorText } from "../error-text";
import { cpuCount, image, network, when, type ImageChoice, type NetworkPolicy } from "../format";
import type * as Api from "../../../sdk/api-types";
import { useApi } from "../use-api";

// The server's own shapes (the SDK's types, generated from its OpenAPI document), not copies.
type ListedSession = Api.ListedSession;
type Sandbox = Api.SessionSandbox;
type Vm = Api.Vm;

export function SessionsPage({ tick }: PageProps) {
  const sessions = useApi<{ sessions: ListedSession[] }>("/api/sessions", tick);
  const vms = useApi<{ vms: Vm[] }>("/api/vms", tick);
  const all = sessions.data?.sessions ?? [];
  const children = (id: string) => all.filter((s) => s.parentID === id);
  const roots = all.filter((s) => s.parentID === null || !all.some((p) => p.id === s.parentID));
  return (
    <>
      <ErrorText error={sessions.error ?? vms.error} />
      {sessions.data && roots.length === 0 && <p>No sessions are registered.</p>}
      {roots.map((root) => (
        <section key={root.id} class="card" aria-labelledby={`root-${root.id}`}>
          <h2 id={`root-${root.id}`}>{root.id}</h2>
          <p class="muted">{root.directory}</p>
          <p>
            Agent: <Activity session={root} />
          </p>
          <RootSandbox id={root.id} tick={tick} vms={vms.data?.vms ?? []} />
          {children(root.id).length > 0 && <Tree parent={root.id} children={children} />}
        </section>
      ))}
    </>
  );
}

/** What the session's agent does, as its OpenCode plugin reports; a working one holds its root's VM. */
function Activity({ session }: { session: ListedSession }) {
  const activity = session.activity;
  if (!activity) return <span class="muted">not reported</span>;
  const what = activity.state === "retry" ? `retrying (attempt ${activity.attempt ?? "?"})` : activity.state === "question" ? "waiting on a question" : activity.state === "permission" ? "waiting on a permission" : activity.state;
  return (
    <span>
      <strong>{what}</strong> since {when(activity.since)}
      {activity.holds && <span class="tag"> (holds the VM)</span>}
    </span>
  );
}

function Tree({ parent, children }: { parent: string; children: (id: string) => ListedSession[] }) {
  return (
    <ul class="tree" aria-label={`Children of ${parent}`}>
      {children(parent).map((s) => (
        <li key={s.id}>
          {s.id}
          {s.forkOf && <span class="tag"> (fork of {s.forkOf})</span>}
          {s.activity && (
            <>
              {" "}
              — <Activity session={s} />
            </>
          )}
          {children(s.id).length > 0 && <Tree parent={s.id} children={children} />}
        </li>
      ))}
    </ul>
  );
}

function RootSandbox({ id, tick, vms }: { id: string; tick: number; vms: Vm[] }) {
  const [saved, setSaved] = useState(0);
  const sandbox = useApi<Sandbox>(`/api/session-sandbox/${encodeURIComponent(id)}`, tick + saved);
  const [toggleError, setToggleError] = useState<string | null>(null);
  const s = sandbox.data;
  if (!s) return <ErrorText error={sandbox.error} />;
  const vm = vms.find((v) => v.name === s.vmName);
  async function toggle(on: boolean) {
    setToggleError(null);
    await api("PUT", `/api/session-sandbox/${encodeURIComponent(id)}`, { sandboxed: on }).catch((err: unknown) => setToggleError(describeError(err)));
    setSaved((n) => n + 1);
  }
  return (
    <>
      <p class="switch">
        <input type="checkbox" role="switch" id={`sandbox-${id}`} checked={s.sandboxed} onChange={(e) => toggle((e.target as HTMLInputElement).checked)} />
        <label for={`sandbox-${id}`}>Sandbox for {id}</label>: <strong>{s.sandboxed ? "on" : "off"}</strong>
        {!s.serverEnabled && " (sandboxing is off server-wide)"}
      </p>
      {toggleError && <p class="error" role="alert">{toggleError}</p>}
      <dl class="facts">
        <dt>Source</dt>
        <dd>{s.source}</dd>
        <dt>Resources</dt>
        <dd>
          {cpuCount(s.resources.effective.cpus)}, {s.resources.effective.memoryMib} MiB{s.resources.override ? " (override)" : " (settings)"}
        </dd>
        <dt>Network</dt>
        <dd>{network(s.network.effective)}</dd>
        <dt>Image</dt>
        <dd>{image(s.image.effective)}</dd>
        <dt>Isolation</dt>
        <dd>
          {s.isolation.effective}
          {s.isolation.override ? " (override)" : " (settings)"}
        </dd>
        <dt>VM</dt>
        <dd>
          {s.vmName}: {vm ? vm.status : "no VM"}
        </dd>
        <dt>Last stop</dt>
        <dd>{s.lastStop ? `${s.lastStop.status}, reason ${s.lastStop.reason ?? "none given"}, at ${when(s.lastStop.at)}` : "—"}</dd>
      </dl>
      <ResourcesForm id={id} override={s.resources.override} onSaved={() => setSaved((n) => n + 1)} />
    </>
  );
}

type Field = "cpus" | "memoryMib";
/** The field an API refusal is about, from its message (422 names the path, 400 the setting). */
const fieldOf = (message: string): Field | "form" => (/memory/i.test(message) ? "memoryMib" : /cpu/i.test(message) ? "cpus" : "form");

function ResourcesForm({ id, override, onSaved }: { id: string; override: Sandbox["resources"]["override"]; onSaved(): void }) {
  const [errors, setErrors] = useState<Partial<Record<Field | "form", string>>>({});
  const [status, setStatus] = useState("");
  async function submit(event: Event) {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    const resources: Record<string, number> = {};
    for (const field of ["cpus", "memoryMib"] as const) {
      const text = String(form.get(field) ?? "").trim();
      if (text) resources[field] = Number(text);
    }
    await send(Object.keys(resources).length ? resources : null);
  }
  async function send(resources: Record<string, number> | null) {
    setErrors({});
    setStatus("");
    try {
      await api("PUT", `/api/session-sandbox/${encodeURIComponent(id)}`, { resources });
      setStatus(resources ? "Saved: the next command's VM gets these resources." : "Override cleared.");
      onSaved();
    } catch (err) {
      const message = err instanceof ApiError ? err.message : describeError(err);
      setErrors({ [fieldOf(message)]: message });
    }
  }
  const input = (field: Field, label: string, min: number) => (
    <p class="field">
      <label for={`${field}-${id}`}>{label}</label>
      <input
        id={`${field}-${id}`}
        name={field}
        type="number"
        min={min}
        step={1}
        defaultValue={override?.[field]?.toString() ?? ""}
        aria-invalid={errors[field] ? "true" : undefined}
        aria-describedby={errors[field] ? `${field}-${id}-error` : undefined}
      />
      {errors[field] && (
        <span id={`${field}-${id}-error`} class="error" role="alert">
          {errors[field]}
        </span>
      )}
    </p>
  );
  return (
    <form class="override" noValidate onSubmit={submit} aria-label={`Resource override for ${id}`}>
      {input("cpus", "CPUs", 1)}
      {input("memoryMib", "Memory (MiB)", 128)}
      <button type="submit">Save resources</button>{" "}
      <button type="button" onClick={() => send(null)}>
        Clear override
      </button>
      {errors.form && (
        <p class="error" role="alert">
          {errors.form}
        </p>
      )}
      <p role="status">{status}</p>
    </form>
  );
}
