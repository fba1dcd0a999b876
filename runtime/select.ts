// Chooses the runtime driver from SANDBOX_RUNTIME and the drivers' probe results, and says why the
// others are not in use. Pure: probing happens elsewhere, so every case is a plain unit test.
import type { Capability } from "./driver";

export type RuntimeName = "local" | "gvisor" | "msb";
export type RuntimeRequest = "auto" | RuntimeName;

const REQUESTS: readonly RuntimeRequest[] = ["auto", "local", "gvisor", "msb"];
/** What auto tries, strongest isolation first: a microVM, then gVisor's user-space kernel, then a container. */
const STRONGEST_FIRST: readonly RuntimeName[] = ["msb", "gvisor", "local"];

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

export type RuntimeProbes = Partial<Record<RuntimeName, Capability>>;

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
  const notUsed = Object.fromEntries(STRONGEST_FIRST.filter((name) => name !== requested).map((name) => [name, `not selected: SANDBOX_RUNTIME=${requested}`]));
  if (capability?.available) {
    return { requested, runtime: requested, reason: `SANDBOX_RUNTIME=${requested}: ${capability.version}`, notUsed };
  }
  // An explicit choice never falls back to another runtime: the operator asked for this isolation.
  return { requested, runtime: undefined, reason: `SANDBOX_RUNTIME=${requested}, but ${problemsText(requested, capability)}`, notUsed };
}

export function selectRuntime(input: { env: string | undefined; probes: RuntimeProbes }): RuntimeSelection {
  const requested = parseRuntimeRequest(input.env);
  if (requested !== "auto") return explicit(requested, input.probes);
  const chosen = STRONGEST_FIRST.find((name) => input.probes[name]?.available);
  const weaker = chosen ? STRONGEST_FIRST.slice(STRONGEST_FIRST.indexOf(chosen) + 1) : [];
  const stronger = chosen ? STRONGEST_FIRST.slice(0, STRONGEST_FIRST.indexOf(chosen)) : STRONGEST_FIRST;
  const notUsed: Partial<Record<RuntimeName, string>> = {};
  for (const name of stronger) notUsed[name] = problemsText(name, input.probes[name]);
  for (const name of weaker) notUsed[name] = input.probes[name]?.available ? `available, but auto prefers the stronger isolation of ${chosen}` : problemsText(name, input.probes[name]);
  if (!chosen) return { requested, runtime: undefined, reason: `auto: no runtime is usable: ${stronger.map((name) => notUsed[name]).join("; ")}`, notUsed };
  const why = stronger.map((name) => notUsed[name]);
  const version = input.probes[chosen]!.version;
  return { requested, runtime: chosen, reason: `auto: ${[...why, chosen === "msb" ? `msb is available (${version})` : `using ${chosen} (${version})`].join("; ")}`, notUsed };
}
