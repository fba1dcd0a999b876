// Builds a runtime driver from plain config, on whichever thread needs one.
import type { RuntimeDriver } from "../runtime/driver";
import { createLocalDriver } from "../runtime/local/index";
import type { DriverConfig } from "./protocol";

export async function createDriver(config: DriverConfig): Promise<RuntimeDriver> {
  if (config.kind === "local") return createLocalDriver({ stateDir: config.stateDir, rootfsDir: config.rootfsDir, cgroupParent: config.cgroupParent });
  const { MsbDriver } = await import("../runtime/msb/index");
  return new MsbDriver({ msbPath: config.msbPath, msbHome: config.msbHome });
}
