/** @jsxImportSource preact */
// Settings: one small form per server-wide setting, each with Save and a reset to its default (PATCH null).
import { useState } from "preact/hooks";
import { api, describeError } from "../api";
import type { PageProps } from "./page-props";
import { ErrorText } from "../error-text";
import { image, network, type ImageChoice, type NetworkPolicy } from "../format";
import { useApi } from "../use-api";

type Settings = Record<string, boolean | number | string | NetworkPolicy | ImageChoice>;
type Kind = "boolean" | "integer" | "network" | "image" | "isolation";

const ISOLATION_CHOICES = ["auto", "container", "gvisor", "microvm"];

const SETTINGS: { key: string; label: string; kind: Kind; help: string }[] = [
  { key: "enabled", label: "Sandboxing enabled", kind: "boolean", help: "Off: every command runs on the host" },
  { key: "defaultForNewSessions", label: "Sandbox new sessions", kind: "boolean", help: "The mode a new root session starts in" },
  { key: "cpus", label: "CPUs per VM", kind: "integer", help: "1 to the host's CPU count" },
  { key: "memoryMib", label: "Memory per VM (MiB)", kind: "integer", help: "128 to the host's memory" },
  { key: "idleStopMinutes", label: "Idle stop (minutes)", kind: "integer", help: "1 to 10080: a quiescent VM unused this long (no command, no activity of its sessions) is removed with its volume" },
  { key: "idleSuspendMinutes", label: "Idle suspend (minutes)", kind: "integer", help: "0 (off) to below the idle stop: a quiescent VM unused this long is stopped first, its volume kept, and restarts at its next command" },
  { key: "holdWhileBusy", label: "Hold while busy", kind: "boolean", help: "A working session (busy, or retrying up to 3 times) keeps its VM: not removed when idle, not evicted by the cap" },
  { key: "maxHoldMinutes", label: "Longest hold (minutes)", kind: "integer", help: "1 to 10080: a session busy longer than this in one stretch (stuck) no longer holds its VM" },
  { key: "maxRunningVms", label: "Most running VMs", kind: "integer", help: "1 to 256" },
  { key: "execTimeoutMs", label: "Command timeout (ms)", kind: "integer", help: "1000 to 86400000" },
  { key: "diskMib", label: "Disk per VM (MiB)", kind: "integer", help: "At least 64" },
  { key: "maxImageMib", label: "Largest image (MiB)", kind: "integer", help: "64 to 1048576: a build or pull past it is stopped (IMAGE_TOO_LARGE)" },
  { key: "forwardGitCredentials", label: "Forward git credentials", kind: "boolean", help: "Opt-in: SANDBOX_GIT_CREDENTIALS into sandboxes" },
  { key: "network", label: "Network policy", kind: "network", help: "none, all, or allowlist: a comma-separated list of domains and keywords" },
  { key: "image", label: "Guest image", kind: "image", help: "recipe: extra Debian packages, comma-separated; oci: an image reference" },
  { key: "isolation", label: "Isolation tier", kind: "isolation", help: "auto: the strongest tier that works here; the overview lists which do" },
  { key: "docker", label: "Docker Engine", kind: "boolean", help: "A Docker Engine in each VM; needs an isolation tier that can hold one (gvisor or microvm)" },
];

export function SettingsPage({ tick }: PageProps) {
  const [saved, setSaved] = useState(0);
  const settings = useApi<Settings>("/api/settings/sandbox", tick + saved);
  const defaults = useApi<Settings>("/api/settings/sandbox/defaults", 0);
  if (!settings.data) return <ErrorText error={settings.error} />;
  return (
    <>
      <ErrorText error={settings.error ?? defaults.error} />
      <p>Each setting's reset returns it to its default: the manager's environment, then the built-in value.</p>
      {SETTINGS.map((s) => (
        <SettingFields key={`${s.key}-${tick + saved}`} settingKey={s.key} label={s.label} kind={s.kind} help={s.help} value={settings.data![s.key]!} defaultValue={defaults.data?.[s.key]} onSaved={() => setSaved((n) => n + 1)} />
      ))}
    </>
  );
}

const list = (text: string) => text.split(",").map((x) => x.trim()).filter(Boolean);

function readValue(kind: Kind, form: FormData): unknown {
  const text = String(form.get("value") ?? "").trim();
  if (kind === "boolean") return form.get("value") === "on";
  if (kind === "integer") return text === "" ? text : Number(text);
  if (kind === "isolation") return String(form.get("value"));
  const mode = String(form.get("mode"));
  if (kind === "network") return mode === "allowlist" ? { mode, allow: list(text) } : { mode };
  if (mode === "dockerfile") return { kind: "dockerfile", path: text };
  return mode === "oci" ? { kind: "oci", reference: text } : { kind: "recipe", packages: list(text) };
}

/** What the image field holds for a choice: its reference, its Dockerfile path or its packages. */
const imageValue = (choice: ImageChoice): string => (choice.kind === "oci" ? choice.reference : choice.kind === "dockerfile" ? choice.path : choice.packages.join(", "));

type FieldProps = { settingKey: string; label: string; kind: Kind; help: string; value: Settings[string]; defaultValue: Settings[string] | undefined; onSaved(): void };

const describe = (kind: Kind, value: Settings[string]): string =>
  kind === "network" ? network(value as NetworkPolicy) : kind === "image" ? image(value as ImageChoice) : String(value);

function SettingFields({ settingKey, label, kind, help, value, defaultValue, onSaved }: FieldProps) {
  const [error, setError] = useState<string | null>(null);
  const id = `setting-${settingKey}`;
  async function patch(next: unknown) {
    setError(null);
    try {
      await api("PATCH", "/api/settings/sandbox", { [settingKey]: next });
      onSaved();
    } catch (err) {
      setError(describeError(err));
    }
  }
  const policy = value as NetworkPolicy;
  const choice = value as ImageChoice;
  const described = `${id}-help${error ? ` ${id}-error` : ""}`;
  return (
    <form class="setting" noValidate aria-label={label} onSubmit={(e) => (e.preventDefault(), patch(readValue(kind, new FormData(e.target as HTMLFormElement))))}>
      {kind === "boolean" ? (
        <p class="field">
          <input id={id} name="value" type="checkbox" defaultChecked={value as boolean} aria-describedby={described} />
          <label for={id}>{label}</label>
        </p>
      ) : kind === "isolation" ? (
        <p class="field">
          <label for={id}>{label}</label>
          {/* `selected` on the option: Preact's defaultValue on a <select> is ignored, and the first option showed instead. */}
          <select id={id} name="value" aria-describedby={described} aria-invalid={error ? "true" : undefined}>
            {ISOLATION_CHOICES.map((choice) => (
              <option key={choice} value={choice} selected={choice === value}>
                {choice}
              </option>
            ))}
          </select>
        </p>
      ) : kind === "integer" ? (
        <p class="field">
          <label for={id}>{label}</label>
          <input id={id} name="value" type="number" step={1} defaultValue={String(value)} aria-describedby={described} aria-invalid={error ? "true" : undefined} />
        </p>
      ) : (
        <p class="field">
          <label for={`${id}-mode`}>{label}: {kind === "network" ? "mode" : "kind"}</label>
          <select id={`${id}-mode`} name="mode">
            {(kind === "network" ? ["none", "allowlist", "all"] : ["recipe", "oci", "dockerfile"]).map((m) => (
              <option key={m} value={m} selected={m === (kind === "network" ? policy.mode : choice.kind)}>
                {m}
              </option>
            ))}
          </select>
          <label for={id}>{kind === "network" ? "Allowed hosts" : "Packages, reference or Dockerfile path"}</label>
          <input
            id={id}
            name="value"
            defaultValue={kind === "network" ? (policy.mode === "allowlist" ? policy.allow.join(", ") : "") : imageValue(choice)}
            aria-describedby={described}
            aria-invalid={error ? "true" : undefined}
          />
        </p>
      )}
      <p id={`${id}-help`} class="muted">
        Now: {describe(kind, value)}. Default: {defaultValue === undefined ? "…" : describe(kind, defaultValue)}. {help}.
      </p>
      <button type="submit">Save</button>{" "}
      <button type="button" onClick={() => patch(null)}>
        Reset {label} to default
      </button>
      {error && (
        <p id={`${id}-error`} class="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}
