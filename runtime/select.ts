// Chooses the runtime driver from SANDBOX_RUNTIME and the drivers' probe results, and says why the
// other one is not in use. Pure: probing happens elsewhere, so every case is a plain unit test.
import type { Capability } from "./driver";

export type RuntimeName = "local" | "msb";
export type RuntimeRequest = "auto" | RuntimeName;

const REQUESTS: readonly RuntimeRequest[] = ["auto", "local", "msb"];

/** Thrown when SANDBOX_RUNTIME holds anything but auto, local or msb. */
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

function other(name: RuntimeName): RuntimeName {
  return name === "msb" ? "local" : "msb";
}

function explicit(requested: RuntimeName, probes: RuntimeProbes): RuntimeSelection {
  const capability = probes[requested];
  const notUsed = { [other(requested)]: `not selected: SANDBOX_RUNTIME=${requested}` };
  if (capability?.available) {
    return { requested, runtime: requested, reason: `SANDBOX_RUNTIME=${requested}: ${capability.version}`, notUsed };
  }
  // An explicit choice never falls back to the other runtime: the operator asked for this isolation.
  return { requested, runtime: undefined, reason: `SANDBOX_RUNTIME=${requested}, but ${problemsText(requested, capability)}`, notUsed };
}

export function selectRuntime(input: { env: string | undefined; probes: RuntimeProbes }): RuntimeSelection {
  const requested = parseRuntimeRequest(input.env);
  if (requested !== "auto") return explicit(requested, input.probes);
  const { msb, local } = input.probes;
  if (msb?.available) {
    return {
      requested,
      runtime: "msb",
      reason: `auto: msb is available (${msb.version})`,
      notUsed: { local: local?.available ? "available, but auto prefers msb when /dev/kvm and msb work" : problemsText("local", local) },
    };
  }
  const msbWhy = problemsText("msb", msb);
  if (local?.available) return { requested, runtime: "local", reason: `auto: ${msbWhy}; using local (${local.version})`, notUsed: { msb: msbWhy } };
  return { requested, runtime: undefined, reason: `auto: no runtime is usable: ${msbWhy}; ${problemsText("local", local)}`, notUsed: { msb: msbWhy, local: problemsText("local", local) } };
}
