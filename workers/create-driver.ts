// Builds a runtime driver from plain config, on whichever thread needs one. Every actor Worker evaluates
// what this file imports, so it imports the drivers statically: a dynamic import() costs each Worker
// more memory than the same modules imported statically (docs/performance.md, "Manager memory per live
// actor"); msb, used by no embedded-tier actor, is the one driver loaded on demand.
import type { RuntimeDriver } from "../runtime/driver";
import { createGvisorDriver } from "../runtime/gvisor/index";
import type { IsolationTier } from "../runtime/isolation";
import { createLocalDriver } from "../runtime/local/index";
import { createTieredDriver, type TierDrivers } from "../runtime/tiered";
import type { DriverConfig, SingleDriverConfig } from "./protocol";

async function createSingleDriver(config: SingleDriverConfig): Promise<RuntimeDriver> {
  if (config.kind === "local") return createLocalDriver({ stateDir: config.stateDir, rootfsDir: config.rootfsDir, cgroupParent: config.cgroupParent, probed: config.probed, seccompProgram: config.seccompProgram, execAgent: config.execAgent });
  if (config.kind === "gvisor") return createGvisorDriver({ stateDir: config.stateDir, rootfsDir: config.rootfsDir, cgroupParent: config.cgroupParent, probed: config.probed, seccompProgram: config.seccompProgram });
  const { MsbDriver } = await import("../runtime/msb/index");
  return new MsbDriver({ msbPath: config.msbPath, msbHome: config.msbHome, ...(config.viewsDir ? { viewsDir: config.viewsDir } : {}) });
}

export async function createDriver(config: DriverConfig): Promise<RuntimeDriver> {
  if (config.kind !== "tiered") return createSingleDriver(config);
  const drivers: TierDrivers = {};
  for (const [tier, tierConfig] of Object.entries(config.tiers) as [IsolationTier, SingleDriverConfig][]) drivers[tier] = await createSingleDriver(tierConfig);
  return createTieredDriver(drivers, config.defaultTier);
}
