// Checks a network policy before it is stored, with the one allowlist grammar the proxy and the msb rule
// builder share, and against what the runtime in use can enforce: a typo or an entry that back end cannot
// honour is a 400 now rather than a silent "denied" (or a failed boot) later.
import type { NetworkPolicy } from "../../egress/network-policy";
import { allowlistProblems, NETWORK_KEYWORDS } from "../../egress/index";
import { msbAllowlistProblems } from "../../runtime/msb/network-rules";
import { NetworkPolicyInvalidError } from "../errors";

/** Throws NetworkPolicyInvalidError naming every bad entry; `runtime` is the driver kind in use, if any. */
export function checkNetworkPolicy(policy: NetworkPolicy, runtime?: string): void {
  if (policy.mode !== "allowlist") return;
  const problems = allowlistProblems(policy.allow);
  if (problems.length > 0) {
    throw new NetworkPolicyInvalidError(
      `network allowlist entries are not valid: ${problems.join("; ")}. Use a domain (api.github.com, *.example.com), an IP or CIDR (10.0.0.0/8, [2001:db8::/32]), or one of ${NETWORK_KEYWORDS.join(", ")}, each optionally with :PORT or :LOW-HIGH`,
    );
  }
  const unenforceable = runtime === "msb" ? msbAllowlistProblems(policy.allow) : [];
  if (unenforceable.length > 0) throw new NetworkPolicyInvalidError(`network allowlist entries the msb runtime in use cannot enforce: ${unenforceable.join("; ")}`);
}
