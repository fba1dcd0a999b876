// Where a session's isolation choice runs on this manager: the tiers that work here (app/runtime-setup.ts)
// turn a choice into a tier (runtime/tiers/), or the reason none can meet it. An explicit choice never
// falls back to a weaker tier.
import { resolveTier, type IsolationChoice, type TierAvailability } from "../../runtime/isolation";
import { TIERS, type Tier } from "../../runtime/tiers/index";
import { DockerUnavailableError, IsolationUnavailableError } from "../errors";
import type { Placement } from "./exec-prepare";

export function createPlacement(availability: TierAvailability) {
  function place(choice: IsolationChoice): Placement {
    const resolved = resolveTier(choice, availability);
    return resolved.tier ? { tier: TIERS[resolved.tier], reason: resolved.reason } : { tier: undefined, reason: resolved.reason };
  }
  return {
    place,
    /** The tier a choice runs in here, if any. */
    tierFor: (choice: IsolationChoice): Tier | undefined => place(choice).tier,
    /** Refuses a choice no tier here can meet (a setting or a session asking for it). */
    check(choice: IsolationChoice): void {
      const placement = place(choice);
      if (!placement.tier) throw new IsolationUnavailableError(placement.reason);
    },
    /** Refuses the docker setting where the tier a choice runs in cannot hold a Docker Engine (400, nothing changed). */
    checkDocker(choice: IsolationChoice): void {
      const tier = place(choice).tier;
      if (tier?.dockerRefusal) throw new DockerUnavailableError(400, `docker is not available in isolation ${choice} here (${tier.name} tier): ${tier.dockerRefusal}; nothing was changed`);
    },
  };
}
