// Checks a network policy before it is stored, with the one allowlist grammar every tier's network
// shares, and against what the tier the session runs in can enforce: a typo or an entry that tier cannot
// honour is a 400 now rather than a silent "denied" (or a failed boot) later.
import type { NetworkPolicy } from "../../egress/network-policy";
import { allowlistProblems, NETWORK_KEYWORDS } from "../../egress/index";
import type { Tier } from "../../runtime/tiers/index";
import { NetworkPolicyInvalidError } from "../errors";

/** Throws NetworkPolicyInvalidError naming every bad entry; `tier`: the one the policy's session runs in, if known. */
export function checkNetworkPolicy(policy: NetworkPolicy, tier?: Tier): void {
  if (policy.mode !== "allowlist") return;
  const problems = allowlistProblems(policy.allow);
  if (problems.length > 0) {
    throw new NetworkPolicyInvalidError(
      `network allowlist entries are not valid: ${problems.join("; ")}. Use a domain (api.github.com, *.example.com), an IP or CIDR (10.0.0.0/8, [2001:db8::/32]), or one of ${NETWORK_KEYWORDS.join(", ")}, each optionally with :PORT or :LOW-HIGH`,
    );
  }
  const unenforceable = tier?.networkProblems(policy.allow) ?? [];
  if (unenforceable.length > 0) throw new NetworkPolicyInvalidError(`network allowlist entries the ${tier!.runtime} runtime in use cannot enforce: ${unenforceable.join("; ")}`);
}
