// Picks the runtime at startup: probes both drivers, applies SANDBOX_RUNTIME (auto|local|msb), and
// describes the choice for /api/health. With no usable runtime the manager still starts, and every
// sandboxed command is refused with the reason (never run on the host).
import { join } from "node:path";
import type { Capability, RuntimeDriver } from "../runtime/driver";
import { selectRuntime, type RuntimeSelection } from "../runtime/select";
import { createDriver } from "../workers/create-driver";
import type { DriverConfig } from "../workers/protocol";
import type { RuntimeStatus } from "./routes/health";

export type RuntimeSetup = {
  selection: RuntimeSelection;
  /** The chosen driver's config for the actors, or undefined when none is usable. */
  driverConfig: DriverConfig | undefined;
  /** A main-thread instance of the chosen driver, for startup recovery (list). */
  driver: RuntimeDriver | undefined;
  status: RuntimeStatus;
  /** Both drivers' probe results, for the doctor. */
  capabilities: { local: Capability; msb: Capability };
};

export type RuntimeOptions = { runtimeDir: string; rootfsDir: string; runtimeEnv: string | undefined; msbPath?: string; cgroupParent?: string };

export async function setUpRuntime(options: RuntimeOptions): Promise<RuntimeSetup> {
  const configs: Record<"local" | "msb", DriverConfig> = {
    local: { kind: "local", stateDir: join(options.runtimeDir, "local"), rootfsDir: options.rootfsDir, cgroupParent: options.cgroupParent },
    msb: { kind: "msb", msbPath: options.msbPath, msbHome: join(options.runtimeDir, "msb") },
  };
  const drivers = { local: await createDriver(configs.local), msb: await createDriver(configs.msb) };
  const [local, msb] = await Promise.all([drivers.local.probe(), drivers.msb.probe()]);
  const selection = selectRuntime({ env: options.runtimeEnv, probes: { local, msb } });
  const chosen = selection.runtime;
  const version = chosen === "local" ? local.version : chosen === "msb" ? msb.version : null;
  return {
    selection,
    driverConfig: chosen ? configs[chosen] : undefined,
    driver: chosen ? drivers[chosen] : undefined,
    status: { name: chosen ?? null, available: chosen !== undefined, version, reason: selection.reason, notUsed: selection.notUsed },
    capabilities: { local, msb },
  };
}
