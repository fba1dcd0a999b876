// Picks the runtime at startup: probes every driver (local = crun, gvisor = runsc, msb = microVMs),
// applies SANDBOX_RUNTIME (auto|local|gvisor|msb), and says which isolation tiers this manager can run and
// why not the others, for /api/health, the doctor and the isolation setting. With no usable runtime the
// manager still starts, and every sandboxed command is refused with the reason (never run on the host).
import { join } from "node:path";
import type { Capability, RuntimeDriver } from "../runtime/driver";
import { TIER_OF_RUNTIME, type IsolationChoice, type TierAvailability, type TierStatus } from "../runtime/isolation";
import { selectRuntime, type RuntimeName, type RuntimeSelection } from "../runtime/select";
import { createDriver } from "../workers/create-driver";
import { withStartupFindings, type DriverConfig, type SingleDriverConfig } from "../workers/protocol";
import type { RuntimeStatus } from "./routes/health";

type RuntimeSetup = {
  selection: RuntimeSelection;
  /** The actors' driver config (tiered over the embedded tiers that work, or msb), or undefined when none is usable. */
  driverConfig: DriverConfig | undefined;
  /** A main-thread instance of that driver, for startup recovery (list). */
  driver: RuntimeDriver | undefined;
  status: RuntimeStatus;
  /** Every driver's probe result, for the doctor. */
  capabilities: Record<RuntimeName, Capability>;
  /** Which isolation tiers this manager runs, and why not the others. */
  tiers: TierAvailability;
  /** The isolation setting's default: the tier of the runtime in use. */
  defaultIsolation: IsolationChoice;
};

type RuntimeOptions = { runtimeDir: string; rootfsDir: string; runtimeEnv: string | undefined; microvmRuntimePath?: string; cgroupParent?: string; execAgent?: boolean };

function probeText(capability: Capability): string {
  if (capability.available) return capability.version;
  return capability.problems.map((p) => `${p.what} (fix: ${p.fix})`).join("; ") || "its probe gave no reason";
}

/**
 * One manager runs one image family: the embedded tiers (container, gvisor) boot root filesystems and
 * share the image cache; msb boots OCI images and keeps its own volumes. So the tiers on offer are the
 * embedded ones that work, or microvm alone when msb is the runtime in use.
 * Exported so the tests cover each runtime and probe outcome directly.
 */
export function tierAvailability(chosen: RuntimeName | undefined, probes: Record<RuntimeName, Capability>): TierAvailability {
  const microvmManager = chosen === "msb";
  const status = (runtime: RuntimeName): TierStatus => {
    const probe = probes[runtime];
    if (!probe.available) return { available: false, reason: probeText(probe) };
    if (chosen === undefined) return { available: false, reason: "no runtime is in use on this manager" };
    if (microvmManager !== (runtime === "msb")) {
      const fix = runtime === "msb" ? "start the manager with SANDBOX_RUNTIME=msb" : "start the manager with SANDBOX_RUNTIME=local or gvisor";
      return { available: false, reason: `${runtime} works here, but this manager runs ${microvmManager ? "microVMs, which boot OCI images" : "the embedded tiers, which boot root filesystems"} (fix: ${fix})` };
    }
    return { available: true, reason: probe.version };
  };
  return { container: status("local"), gvisor: status("gvisor"), microvm: status("msb") };
}

/**
 * The isolation setting's default: the tier of the runtime in use (container on a host without KVM, as
 * SANDBOX_RUNTIME=auto picks it), so the default is what the operator configured; `auto` (the strongest
 * tier that works) and the other tiers are choices an operator or a session makes.
 */
function defaultIsolationOf(selection: RuntimeSelection): IsolationChoice {
  if (selection.runtime) return TIER_OF_RUNTIME[selection.runtime];
  return selection.requested === "auto" ? "auto" : TIER_OF_RUNTIME[selection.requested];
}

export async function setUpRuntime(options: RuntimeOptions): Promise<RuntimeSetup> {
  const configs: { local: SingleDriverConfig; gvisor: SingleDriverConfig; msb: SingleDriverConfig } = {
    local: { kind: "local", stateDir: join(options.runtimeDir, "local"), rootfsDir: options.rootfsDir, cgroupParent: options.cgroupParent, execAgent: options.execAgent },
    gvisor: { kind: "gvisor", stateDir: join(options.runtimeDir, "gvisor"), rootfsDir: options.rootfsDir, cgroupParent: options.cgroupParent },
    msb: { kind: "msb", msbPath: options.microvmRuntimePath, msbHome: join(options.runtimeDir, "msb") },
  };
  const [local, gvisor, msb] = await Promise.all([configs.local, configs.gvisor, configs.msb].map(async (config) => (await createDriver(config)).probe()));
  const capabilities = { local: local!, gvisor: gvisor!, msb: msb! };
  const selection = selectRuntime({ env: options.runtimeEnv, probes: capabilities });
  const chosen = selection.runtime;
  const tiers = tierAvailability(chosen, capabilities);
  let driverConfig: DriverConfig | undefined;
  if (chosen === "msb") driverConfig = configs.msb;
  else if (chosen) {
    const embedded: Partial<Record<"container" | "gvisor", SingleDriverConfig>> = {};
    // Each actor Worker gets the probe's findings and the seccomp program with its config instead of redoing them.
    if (tiers.container.available) embedded.container = withStartupFindings(configs.local, capabilities.local);
    if (tiers.gvisor.available) embedded.gvisor = withStartupFindings(configs.gvisor, capabilities.gvisor);
    driverConfig = { kind: "tiered", defaultTier: TIER_OF_RUNTIME[chosen], tiers: embedded };
  }
  return {
    selection,
    driverConfig,
    driver: driverConfig && (await createDriver(driverConfig)),
    status: { name: chosen ?? null, available: chosen !== undefined, version: chosen ? capabilities[chosen].version : null, reason: selection.reason, notUsed: selection.notUsed, tiers },
    capabilities,
    tiers,
    defaultIsolation: defaultIsolationOf(selection),
  };
}
