// The three isolation tiers, and the one place that says which runtime runs which.
import type { IsolationTier } from "../isolation";
import type { RuntimeName } from "../select";
import { embeddedTier } from "./embedded";
import { microvmTier } from "./microvm";
import type { Tier } from "./tier";

export type { Forwarding, ImageFamily, Tier, WayOut, WayOutRequest } from "./tier";
export { OCI_FAMILY_BUILDS_NO_RECIPES } from "./tier";

export const TIERS: Readonly<Record<IsolationTier, Tier>> = {
  container: embeddedTier("container", "local"),
  gvisor: embeddedTier("gvisor", "gvisor"),
  microvm: microvmTier,
};

export function tierOfRuntime(runtime: RuntimeName): Tier {
  return Object.values(TIERS).find((tier) => tier.runtime === runtime)!;
}
