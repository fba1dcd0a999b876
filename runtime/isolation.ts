// The isolation tiers a VM can run in, weakest first, and how a choice (a tier, or auto) becomes the tier
// a command runs in. Pure: which tiers work on this host is probed elsewhere (runtime/select.ts) and
// passed in, so every case is a plain unit test.

/** container: the embedded runtime (crun, shared kernel); gvisor: runsc's user-space kernel; microvm: msb (KVM). */
export const ISOLATION_TIERS = ["container", "gvisor", "microvm"] as const;
export type IsolationTier = (typeof ISOLATION_TIERS)[number];
export type IsolationChoice = "auto" | IsolationTier;
export const ISOLATION_CHOICES: readonly IsolationChoice[] = ["auto", ...ISOLATION_TIERS];

/** The tier each runtime driver provides. */
export const TIER_OF_RUNTIME: Record<"local" | "gvisor" | "msb", IsolationTier> = { local: "container", gvisor: "gvisor", msb: "microvm" };

/** Whether each tier works here; `reason` says why not (with the fix), or what it runs on. */
export type TierStatus = { available: boolean; reason: string };
export type TierAvailability = Record<IsolationTier, TierStatus>;

type TierResolution = { tier: IsolationTier; reason: string } | { tier: undefined; reason: string };

/**
 * auto → the strongest tier that works here. An explicit tier → that tier, or none with the reason: an
 * explicit choice never falls back to a weaker tier (the operator asked for this isolation).
 */
export function resolveTier(choice: IsolationChoice, tiers: TierAvailability): TierResolution {
  if (choice !== "auto") {
    const status = tiers[choice];
    return status.available ? { tier: choice, reason: `isolation ${choice}: ${status.reason}` } : { tier: undefined, reason: `isolation ${choice} is not available here: ${status.reason}` };
  }
  const strongest = [...ISOLATION_TIERS].reverse().find((tier) => tiers[tier].available);
  if (strongest) return { tier: strongest, reason: `isolation auto: ${strongest} is the strongest tier that works here (${tiers[strongest].reason})` };
  const why = ISOLATION_TIERS.map((tier) => `${tier}: ${tiers[tier].reason}`).join("; ");
  return { tier: undefined, reason: `isolation auto: no tier works here (${why})` };
}

export function isIsolationChoice(value: unknown): value is IsolationChoice {
  return typeof value === "string" && (ISOLATION_CHOICES as readonly string[]).includes(value);
}
