// A model of what msb 0.6.18 does with `--net-rule` tokens for one TCP connection, written from its source
// (crates/network/lib/policy: destination.rs addr_classify, types.rs matches_suffix; first match wins,
// default deny). It is a model, not msb: VMs cannot boot here, so msb's own decisions cannot be observed.
// Not modelled: the gateway (`host`, `dns`; targets here are never the gateway) and msb's DNS layer.
import { cidrContains, parseCidr, parseIp, type IpAddress } from "../../egress/ip-address";

/** One connection as msb sees it: the address, the port, and the name the guest resolved to reach it. */
export type MsbConnection = { address: string; port: number; resolvedName?: string };

const v4 = (text: string) => parseCidr(text)!;
const GROUPS: Array<[string, ReturnType<typeof v4>[]]> = [
  ["meta", [v4("169.254.169.254/32")]],
  ["loopback", [v4("127.0.0.0/8"), v4("::1/128")]],
  ["private", [v4("10.0.0.0/8"), v4("172.16.0.0/12"), v4("192.168.0.0/16"), v4("100.64.0.0/10"), v4("fc00::/7")]],
  ["link-local", [v4("169.254.0.0/16"), v4("fe80::/10")]],
  ["multicast", [v4("224.0.0.0/4"), v4("ff00::/8")]],
];

/** msb's addr_classify: unspecified addresses belong to no group; anything else unmatched is public. */
function groupOf(address: IpAddress): string | null {
  if (address.value === 0n) return null;
  for (const [group, ranges] of GROUPS) if (ranges.some((r) => cidrContains(r, address))) return group;
  return "public";
}

function targetMatches(target: string, connection: MsbConnection, address: IpAddress): boolean {
  if (target === "dns" || target === "host") return false;
  if (["public", "private", "loopback", "link-local", "meta", "multicast"].includes(target)) return groupOf(address) === target;
  const name = connection.resolvedName;
  if (target.startsWith("domain=")) return name === target.slice("domain=".length);
  if (target.startsWith("*.")) return name !== undefined && (name === target.slice(2) || name.endsWith(`.${target.slice(2)}`));
  const cidr = parseCidr(target.replace(/^\[|\]$/g, ""));
  if (cidr !== null) return cidrContains(cidr, address);
  return name === target;
}

/** True when the first matching token allows the connection; no match is msb's default deny (--no-net). */
export function msbAllows(tokens: readonly string[], connection: MsbConnection): boolean {
  const address = parseIp(connection.address);
  if (address === null) return false;
  for (const token of tokens) {
    const match = /^(allow|deny)@(.+?)(?::tcp:(\d+)(?:-(\d+))?)?$/.exec(token);
    if (!match) throw new Error(`the model does not know the token ${token}`);
    const [, action, target = "", low, high] = match;
    if (low !== undefined && (connection.port < Number(low) || connection.port > Number(high ?? low))) continue;
    if (targetMatches(target, connection, address)) return action === "allow";
  }
  return false;
}
