// One rule of `msb inspect`'s network policy JSON back to the `--net-rule` token it was written as.
import { formatAddressTarget } from "../../egress/allow-entry";
import { parseCidr } from "../../egress/ip-address";
import { asArray, asNumber, asRecord, asString } from "./json-guards";

/** How `msb inspect` spells the groups (measured on 0.6.18: `link_local`, `metadata`) → the CLI tokens. */
const GROUP_TOKENS: Record<string, string> = {
  public: "public",
  private: "private",
  loopback: "loopback",
  link_local: "link-local",
  metadata: "meta",
  multicast: "multicast",
  host: "host",
};

/** A rule's protocols and port ranges as `proto,proto:low-high`, "" for any; undefined if unreadable. */
function describePorts(rule: Record<string, unknown>): string | undefined {
  const protocols = (asArray(rule.protocols) ?? []).map(asString);
  const ranges = (asArray(rule.ports) ?? []).map((item) => {
    const start = asNumber(asRecord(item)?.start);
    const end = asNumber(asRecord(item)?.end);
    return start === undefined || end === undefined ? undefined : start === end ? String(start) : `${start}-${end}`;
  });
  if (protocols.includes(undefined) || ranges.includes(undefined)) return undefined;
  if (protocols.length === 0 && ranges.length === 0) return "";
  return `${protocols.sort().join(",")}:${ranges.join(",")}`;
}

function targetOf(destination: Record<string, unknown>): string | undefined {
  const group = asString(destination.group);
  if (group !== undefined) return GROUP_TOKENS[group];
  const domain = asString(destination.domain);
  if (domain !== undefined) return domain.includes(".") ? domain : `domain=${domain}`;
  const suffix = asString(destination.domain_suffix);
  if (suffix !== undefined) return `*.${suffix}`;
  const cidr = parseCidr(asString(destination.cidr) ?? "");
  return cidr === null ? undefined : formatAddressTarget(cidr);
}

/** `allow@dns`, `deny@10.0.0.0/8`, `allow@example.com:tcp:443`; undefined for a rule this driver never writes. */
export function readRuleToken(value: unknown): string | undefined {
  const rule = asRecord(value);
  const destination = asRecord(rule?.destination);
  const action = asString(rule?.action);
  if (!rule || !destination || (action !== "allow" && action !== "deny") || asString(rule.direction) !== "egress") return undefined;
  const ports = describePorts(rule);
  // `allow@dns` is stored as the gateway ("host" group) on port 53 over UDP and TCP.
  if (action === "allow" && asString(destination.group) === "host" && ports === "tcp,udp:53") return "allow@dns";
  // Entries carry no port (any protocol) or exactly one TCP range, as the builder writes them.
  const tcpPorts = ports?.match(/^tcp:(\d+(?:-\d+)?)$/)?.[1];
  if (ports !== "" && tcpPorts === undefined) return undefined;
  const target = targetOf(destination);
  if (target === undefined) return undefined;
  return `${action}@${target}${tcpPorts === undefined ? "" : `:tcp:${tcpPorts}`}`;
}
