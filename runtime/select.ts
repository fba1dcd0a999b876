// Chooses the runtime driver from SANDBOX_RUNTIME and the drivers' probe results, and says why the
// others are not in use. Pure: probing happens elsewhere, so every case is a plain unit test.
import type { Capability } from "./driver";

export type RuntimeName = "local" | "gvisor" | "msb";
export type RuntimeRequest = "auto" | RuntimeName;

const REQUESTS: readonly RuntimeRequest[] = ["auto", "local", "gvisor", "msb"];
/**
 * What auto tries, in order: a microVM where KVM works, else the embedded container runtime, the default on
 * hosts without KVM. gVisor comes last: it isolates more than a container but is many times slower on
 * system-call-heavy work (docs/isolation-tiers.md), so it is chosen on purpose (SANDBOX_RUNTIME=gvisor, or the
 * isolation setting on a manager that runs the embedded tiers), never by default.
 */
const AUTO_ORDER: readonly RuntimeName[] = ["msb", "local", "gvisor"];

/** Thrown when SANDBOX_RUNTIME holds anything but auto, local, gvisor or msb. */
export class InvalidRuntimeSettingError extends Error {
  readonly code = "INVALID_SANDBOX_RUNTIME";
  constructor(readonly value: string) {
    super(`SANDBOX_RUNTIME must be one of ${REQUESTS.join(", ")} (got ${JSON.stringify(value)}); unset it to mean auto`);
    this.name = "InvalidRuntimeSettingError";
  }
}

export type RuntimeSelection = {
  requested: RuntimeRequest;
  /** The driver to use; undefined when the requested one is unusable (sandboxed commands are then refused, never run on the host). */
  runtime: RuntimeName | undefined;
  /** Why `runtime` was chosen, or why nothing was. */
  reason: string;
  /** For each runtime not in use, why not. */
  notUsed: Partial<Record<RuntimeName, string>>;
};

type RuntimeProbes = Partial<Record<RuntimeName, Capability>>;

/** Unset or empty means auto; surrounding spaces and case are not forgiven, so a typo is an error. */
export function parseRuntimeRequest(value: string | undefined): RuntimeRequest {
  if (value === undefined || value === "") return "auto";
  if ((REQUESTS as readonly string[]).includes(value)) return value as RuntimeRequest;
  throw new InvalidRuntimeSettingError(value);
}

function problemsText(name: RuntimeName, capability: Capability | undefined): string {
  if (!capability) return `${name} was not probed`;
  if (capability.available) return `${name} is available`;
  const problems = capability.problems.map((p) => `${p.what} (fix: ${p.fix})`).join("; ");
  return `${name} is unavailable: ${problems || "its probe gave no reason"}`;
}

function explicit(requested: RuntimeName, probes: RuntimeProbes): RuntimeSelection {
  const capability = probes[requested];
  const notUsed = Object.fromEntries(AUTO_ORDER.filter((name) => name !== requested).map((name) => [name, `not selected: SANDBOX_RUNTIME=${requested}`]));
  if (capability?.available) {
    return { requested, runtime: requested, reason: `SANDBOX_RUNTIME=${requested}: ${capability.version}`, notUsed };
  }
  // An explicit choice never falls back to another runtime: the operator asked for this isolation.
  return { requested, runtime: undefined, reason: `SANDBOX_RUNTIME=${requested}, but ${problemsText(requested, capability)}`, notUsed };
}

/** Why auto left an available runtime aside. */
function laterReason(name: RuntimeName, chosen: RuntimeName): string {
  if (name === "gvisor" && chosen === "local") return "available: sessions can choose it (isolation gvisor or auto); SANDBOX_RUNTIME=gvisor makes it the default";
  return `available, but auto prefers ${chosen}`;
}

export function selectRuntime(input: { env: string | undefined; probes: RuntimeProbes }): RuntimeSelection {
  const requested = parseRuntimeRequest(input.env);
  if (requested !== "auto") return explicit(requested, input.probes);
  const chosen = AUTO_ORDER.find((name) => input.probes[name]?.available);
  const later = chosen ? AUTO_ORDER.slice(AUTO_ORDER.indexOf(chosen) + 1) : [];
  const earlier = chosen ? AUTO_ORDER.slice(0, AUTO_ORDER.indexOf(chosen)) : AUTO_ORDER;
  const notUsed: Partial<Record<RuntimeName, string>> = {};
  for (const name of earlier) notUsed[name] = problemsText(name, input.probes[name]);
  for (const name of later) notUsed[name] = input.probes[name]?.available ? laterReason(name, chosen!) : problemsText(name, input.probes[name]);
  if (!chosen) return { requested, runtime: undefined, reason: `auto: no runtime is usable: ${earlier.map((name) => notUsed[name]).join("; ")}`, notUsed };
  const why = earlier.map((name) => notUsed[name]);
  const version = input.probes[chosen]!.version;
  return { requested, runtime: chosen, reason: `auto: ${[...why, chosen === "msb" ? `msb is available (${version})` : `using ${chosen} (${version})`].join("; ")}`, notUsed };
}
