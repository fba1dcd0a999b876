// Checks a network policy before it is stored: every allowlist entry must be something the egress proxy
// can match, so a typo is a 400 now rather than a silent "denied" later.
import { isIP } from "node:net";
import type { NetworkPolicy } from "../../runtime/driver";
import { NetworkPolicyInvalidError } from "../errors";

export const NETWORK_KEYWORDS = ["public", "private", "loopback", "link-local", "metadata", "host"] as const;

const LABEL = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
const DOMAIN = new RegExp(`^(\\*\\.)?(${LABEL}\\.)*${LABEL}(:\\d{1,5})?$`, "i");

function validEntry(entry: string): boolean {
  if ((NETWORK_KEYWORDS as readonly string[]).includes(entry)) return true;
  const [address, bits] = entry.split("/");
  if (bits !== undefined) {
    const max = isIP(address ?? "") === 4 ? 32 : isIP(address ?? "") === 6 ? 128 : -1;
    return max > 0 && /^\d{1,3}$/.test(bits) && Number(bits) <= max;
  }
  if (isIP(entry.replace(/^\[|\]$/g, "")) !== 0) return true;
  const port = /:(\d+)$/.exec(entry)?.[1];
  return DOMAIN.test(entry) && (port === undefined || Number(port) <= 65535);
}

export function checkNetworkPolicy(policy: NetworkPolicy): void {
  if (policy.mode !== "allowlist") return;
  const bad = policy.allow.filter((entry) => !validEntry(entry));
  if (bad.length > 0) {
    throw new NetworkPolicyInvalidError(
      `network allowlist entries ${bad.map((e) => JSON.stringify(e)).join(", ")} are not valid: use a domain (api.github.com, *.example.com, optionally :port), an IP or CIDR, or one of ${NETWORK_KEYWORDS.join(", ")}`,
    );
  }
}
