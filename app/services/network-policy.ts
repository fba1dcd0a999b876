// Checks a network policy before it is stored, with the egress proxy's own parser, so the API and the
// proxy always agree: a typo is a 400 now rather than a silent "denied" later.
import type { NetworkPolicy } from "../../runtime/driver";
import { allowlistProblems, NETWORK_KEYWORDS } from "../../egress/index";
import { NetworkPolicyInvalidError } from "../errors";

export function checkNetworkPolicy(policy: NetworkPolicy): void {
  if (policy.mode !== "allowlist") return;
  const problems = allowlistProblems(policy.allow);
  if (problems.length > 0) {
    throw new NetworkPolicyInvalidError(
      `network allowlist entries are not valid: ${problems.join("; ")}. Use a domain (api.github.com, *.example.com, optionally :port), an IP or CIDR, or one of ${NETWORK_KEYWORDS.join(", ")}`,
    );
  }
}
