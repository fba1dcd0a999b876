/** @jsxImportSource preact */
// Overview: is sandboxing on, which runtime and why, running VMs against the cap, the host, doctor problems.
import type { PageProps } from "./page-props";
import { ErrorText } from "../error-text";
import { useApi } from "../use-api";

type TierStatus = { available: boolean; reason: string };
type Health = {
  version: string;
  runtime: { name: string | null; available: boolean; version: string | null; reason: string; notUsed: Record<string, string>; tiers?: Record<string, TierStatus> };
  host: { cpus: number; memoryMib: number };
};
type Doctor = { ok: boolean; checks: { name: string; ok: boolean; required: boolean; detail: string; fix: string | null }[] };

/** The runtime's name and version, without saying the name twice when the version already starts with it. */
function runtimeName({ name, version }: Health["runtime"]): string {
  if (!name) return "none";
  return version ? (version.startsWith(name) ? version : `${name} ${version}`) : name;
}

export function OverviewPage({ tick }: PageProps) {
  const health = useApi<Health>("/api/health", tick);
  const settings = useApi<{ enabled: boolean; maxRunningVms: number }>("/api/settings/sandbox", tick);
  const vms = useApi<{ vms: { status: string }[] }>("/api/vms", tick);
  const doctor = useApi<Doctor>("/api/doctor", tick);
  const running = vms.data?.vms.filter((vm) => vm.status === "running").length;
  const problems = doctor.data?.checks.filter((check) => !check.ok) ?? [];
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
          {health.data ? `${runtimeName(health.data.runtime)} (${health.data.runtime.available ? "available" : "unavailable"}): ${health.data.runtime.reason}` : "…"}
        </dd>
        <dt>Isolation tiers</dt>
        <dd>
          {health.data?.runtime.tiers ? (
            <ul class="tiers">
              {Object.entries(health.data.runtime.tiers).map(([tier, status]) => (
                <li key={tier}>
                  {tier}: {status.available ? "works here" : "not available"} — {status.reason}
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
        <dd>{health.data ? `${health.data.host.cpus} CPUs, ${health.data.host.memoryMib} MiB memory` : "…"}</dd>
      </dl>
      <h2>Doctor</h2>
      {doctor.data && (problems.length === 0 ? <p>All {doctor.data.checks.length} checks pass.</p> : null)}
      <ul class="checks">
        {problems.map((check) => (
          <li key={check.name}>
            <strong>{check.required ? "Problem" : "Warning"}: {check.name}</strong> — {check.detail}
            {check.fix && <p>Fix: {check.fix}</p>}
          </li>
        ))}
      </ul>
    </>
  );
}
