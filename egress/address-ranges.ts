// The address ranges an allowlist keeps closed unless a keyword names them, and the classifier for them.
import { cidrContains, embeddedIpv4, formatIp, parseCidr, parseIp, type Cidr, type IpAddress } from "./ip-address";

/** `reserved` has no keyword: multicast, broadcast, documentation and similar never answer TCP usefully. */
export type AddressCategory = "metadata" | "loopback" | "host" | "link-local" | "private" | "reserved";

export type RangeMatch = { category: AddressCategory; range: string; cidr: Cidr };

// Order matters: the first match is the one a denial names, so the most specific category comes first
// (169.254.169.254 is link-local too, but "metadata" is the useful thing to say).
const TABLE: Array<[AddressCategory, string[]]> = [
  [
    "metadata",
    [
      "169.254.169.254/32", // AWS, GCP, Azure, OpenStack, Oracle, DigitalOcean instance metadata
      "169.254.170.2/32", // AWS ECS task metadata and credentials
      "169.254.170.23/32", // AWS EKS Pod Identity agent
      "100.100.100.200/32", // Alibaba Cloud metadata
      "192.0.0.192/32", // Oracle Cloud metadata (alternate)
      "fd00:ec2::254/128", // AWS IMDS over IPv6
      "fd00:ec2::23/128", // AWS EKS Pod Identity agent over IPv6
    ],
  ],
  // 0.0.0.0 and :: reach the host's own listeners on Linux, so they count as loopback.
  ["loopback", ["127.0.0.0/8", "0.0.0.0/8", "::1/128", "::/128"]],
  ["link-local", ["169.254.0.0/16", "fe80::/10"]],
  [
    "private",
    [
      "10.0.0.0/8",
      "172.16.0.0/12",
      "192.168.0.0/16",
      "100.64.0.0/10", // carrier-grade NAT, also Tailscale
      "198.18.0.0/15", // benchmarking; some fake-IP DNS setups hand these out
      "192.0.0.0/24", // IETF protocol assignments
      "fc00::/7", // unique local
      "fec0::/10", // deprecated site-local
      "64:ff9b:1::/48", // local-use NAT64
    ],
  ],
  [
    "reserved",
    [
      "224.0.0.0/4", // multicast
      "240.0.0.0/4", // reserved, includes 255.255.255.255
      "192.0.2.0/24",
      "198.51.100.0/24",
      "203.0.113.0/24", // documentation
      "ff00::/8", // multicast
      "2001:db8::/32", // documentation
      "100::/64", // discard-only
      "::/96", // deprecated IPv4-compatible
    ],
  ],
];

/** Every closed range in table order (metadata first); the msb rule builder turns them into deny rules. */
export const CLOSED_RANGES: readonly RangeMatch[] = TABLE.flatMap(([category, ranges]) =>
  ranges.map((range) => {
    const cidr = parseCidr(range);
    if (cidr === null) throw new Error(`bad built-in range ${range}`);
    return { category, range, cidr };
  }),
);

/**
 * Every closed range `address` falls in, most specific category first; empty means a public address.
 * Loopback ranges are also `host`; so is any address in `hostAddresses` (the host's own interfaces).
 * NAT64 and 6to4 addresses are judged by the IPv4 address they carry as well, so `64:ff9b::a9fe:a9fe`
 * is metadata.
 */
export function classifyAddress(address: IpAddress, hostAddresses: readonly string[] = []): RangeMatch[] {
  const matches = CLOSED_RANGES.filter((r) => cidrContains(r.cidr, address));
  const inner = embeddedIpv4(address);
  if (inner !== null) matches.push(...classifyAddress(inner).filter((m) => m.category !== "host"));
  const loopback = matches.find((m) => m.category === "loopback");
  if (loopback) matches.push({ ...loopback, category: "host" });
  else if (hostAddresses.some((h) => sameAddress(parseIp(h), address))) {
    const prefix = address.family === 4 ? 32 : 128;
    matches.push({ category: "host", range: `${formatIp(address)}/${prefix}`, cidr: { ...address, prefix } });
  }
  return sortByCategory(matches);
}

const ORDER: AddressCategory[] = ["metadata", "loopback", "link-local", "private", "host", "reserved"];

function sortByCategory(matches: RangeMatch[]): RangeMatch[] {
  return matches.sort((a, b) => ORDER.indexOf(a.category) - ORDER.indexOf(b.category));
}

function sameAddress(a: IpAddress | null, b: IpAddress): boolean {
  return a !== null && a.family === b.family && a.value === b.value;
}

/** Host names that reach instance metadata services; blocked by name before any lookup. */
const METADATA_NAMES = ["metadata.google.internal", "metadata.goog", "metadata", "instance-data", "instance-data.ec2.internal"];

export function isMetadataName(host: string): boolean {
  return METADATA_NAMES.some((name) => host === name || host.endsWith(`.${name}`));
}
