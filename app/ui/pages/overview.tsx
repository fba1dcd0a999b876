/** @jsxImportSource preact */
// Overview: is sandboxing on, which runtime and why, running VMs against the cap, the host, doctor problems.
import type { PageProps } from "./page-props";
import { ErrorText } from "../error-text";
import { cpuCount } from "../format";
import type * as Api from "../../../sdk/api-types";
import { useApi } from "../use-api";

// The server's own shapes (the SDK's types, generated from its OpenAPI document), not copies.
type Health = Api.Health;
type Doctor = Api.DoctorReport;

/** The runtime's name and version, without saying the name twice when the version already starts with it. */
function runtimeName({ name, version }: Health["runtime"]): string {
  if (!name) return "none";
  return version ? (version.startsWith(name) ? version : `${name} ${version}`) : name;
}

/** Why this runtime, without its name and version again when the reason repeats them. */
function runtimeReason(runtime: Health["runtime"]): string {
  const name = runtimeName(runtime);
  return runtime.reason.replace(`: ${name}`, "").replace(name, "").replace(/[:\s]+$/, "").trim();
}

/**
 * A doctor finding whose text the tiers list already shows (the same KVM explanation came up to five
 * times) points there instead of saying it again.
 */
function shownAbove(texts: string[], tierReasons: string[]): boolean {
  return texts.some((text) => {
    const start = text.slice(0, 60);
    return start.length >= 20 && tierReasons.some((reason) => reason.includes(start));
  });
}

export function OverviewPage({ tick }: PageProps) {
  const health = useApi<Health>("/api/health", tick);
  const settings = useApi<{ enabled: boolean; maxRunningVms: number }>("/api/settings/sandbox", tick);
  const vms = useApi<{ vms: { status: string }[] }>("/api/vms", tick);
  const doctor = useApi<Doctor>("/api/doctor", tick);
  const running = vms.data?.vms.filter((vm) => vm.status === "running").length;
  const problems = doctor.data?.checks.filter((check) => !check.ok) ?? [];
  const tierReasons = Object.values(health.data?.runtime.tiers ?? {}).filter((status) => !status.available).map((status) => status.reason);
  const pointed = problems.filter((check) => shownAbove([check.detail, check.fix ?? ""], tierReasons));
  const own = problems.filter((check) => !pointed.includes(check));
  return (
    <>
      <ErrorText error={health.error ?? settings.error ?? vms.error ?? doctor.error} />
      <dl class="facts">
        <dt>Sandboxing</dt>
        <dd>{settings.data ? (settings.data.enabled ? "On" : "Off (commands run on the host)") : "…"}</dd>
        <dt>Manager</dt>
        <dd>{health.data ? `Up, version ${health.data.version}` : "…"}</dd>
        <dt>Runtime</dt>
        <dd>
          {health.data ? `${runtimeName(health.data.runtime)} (${health.data.runtime.available ? "available" : "unavailable"})${runtimeReason(health.data.runtime) ? `: ${runtimeReason(health.data.runtime)}` : ""}` : "…"}
        </dd>
        <dt>Isolation tiers</dt>
        <dd>
          {health.data?.runtime.tiers ? (
            <ul class="tiers">
              {Object.entries(health.data.runtime.tiers).map(([tier, status]) => (
                <li key={tier}>
                  {tier}: {status.available ? "works here" : "not available"}
                  {/* A tier that works is the runtime named above; one that does not says why, once. */}
                  {status.available ? null : ` — ${status.reason}`}
                </li>
              ))}
            </ul>
          ) : (
            "…"
          )}
        </dd>
        <dt>Running VMs</dt>
        <dd>{running !== undefined && settings.data ? `${running} of at most ${settings.data.maxRunningVms}` : "…"}</dd>
        <dt>Host</dt>
        <dd>{health.data ? `${cpuCount(health.data.host.cpus)}, ${health.data.host.memoryMib} MiB memory` : "…"}</dd>
      </dl>
      <h2>Doctor</h2>
      {doctor.data && (problems.length === 0 ? <p>All {doctor.data.checks.length} checks pass.</p> : null)}
      <ul class="checks">
        {pointed.length > 0 && (
          <li>
            <strong>{pointed.some((check) => check.required) ? "Problems" : "Warnings"}: {pointed.map((check) => check.name).join(", ")}</strong> — the reason and its fix are under Isolation tiers above
          </li>
        )}
        {own.map((check) => (
          <li key={check.name}>
            <strong>{check.required ? "Problem" : "Warning"}: {check.name}</strong> — {check.detail}
            {check.fix && <p>Fix: {check.fix}</p>}
          </li>
        ))}
      </ul>
    </>
  );
}
