// NetworkPolicy ↔ msb network flags, and msb's inspect JSON back to a NetworkPolicy, through one
// canonical spelling of allow-list entries so the two directions can be compared for attestation.
import { isIPv4, isIPv6 } from "node:net";
import type { NetworkPolicy } from "../driver";
import { InvalidSpecError } from "./spec-checks";
import { asArray, asNumber, asRecord, asString } from "./json-guards";

/** Always allowed with an allow-list: domain rules only match names the sandbox resolved itself. */
export const DNS_RULE_TOKEN = "allow@dns";

type AllowEntry = { target: string; ports?: string };

/** Our policy keywords → msb's destination groups (msb calls the metadata group "meta"). */
const KEYWORD_GROUPS: Record<string, string> = {
  public: "public",
  private: "private",
  loopback: "loopback",
  "link-local": "link-local",
  metadata: "meta",
  host: "host",
};
/** How `msb inspect` spells the groups back (measured on 0.6.18: `link_local`, `metadata`). */
const GROUP_KEYWORDS: Record<string, string> = {
  public: "public",
  private: "private",
  loopback: "loopback",
  link_local: "link-local",
  metadata: "metadata",
  host: "host",
};

const DOMAIN_LABEL = /^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?$/;

function checkPorts(raw: string, entry: string): string {
  const match = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(raw);
  const low = Number(match?.[1]);
  const high = Number(match?.[2] ?? match?.[1]);
  if (!match || low < 1 || high > 65535 || low > high) throw new InvalidSpecError(`allow entry "${entry}": port "${raw}" must be N or LOW-HIGH within 1-65535`);
  return low === high ? String(low) : `${low}-${high}`;
}

function canonicalDomain(raw: string, entry: string): string {
  const lower = raw.toLowerCase();
  const labels = lower.split(".");
  if (labels.length < 2 || !labels.every((label) => DOMAIN_LABEL.test(label))) {
    throw new InvalidSpecError(`allow entry "${entry}": "${raw}" is not a domain with at least two labels`);
  }
  return lower;
}

/** `a.b.c.d[/len]`; host bits must be zero because msb stores the network, not what was typed. */
function canonicalIPv4(raw: string, entry: string): string {
  const [address = "", lengthText] = raw.split("/");
  const length = lengthText === undefined ? 32 : Number(lengthText);
  if (!isIPv4(address) || !/^\d{1,2}$/.test(lengthText ?? "32") || length > 32 || address.split(".").some((o) => o.length > 1 && o.startsWith("0"))) {
    throw new InvalidSpecError(`allow entry "${entry}": "${raw}" is not an IPv4 address or CIDR`);
  }
  const value = address.split(".").reduce((acc, octet) => acc * 256 + Number(octet), 0);
  const size = 2 ** (32 - length);
  if (value % size !== 0) throw new InvalidSpecError(`allow entry "${entry}": "${raw}" has host bits set; write the network address`);
  return length === 32 ? address : `${address}/${length}`;
}

/** `[addr[/len]]`, canonicalised by the WHATWG URL parser (lower case, zero runs compressed). */
function canonicalIPv6(raw: string, entry: string): string {
  const [address = "", lengthText] = raw.split("/");
  const length = lengthText === undefined ? 128 : Number(lengthText);
  if (!isIPv6(address) || !/^\d{1,3}$/.test(lengthText ?? "128") || length > 128) {
    throw new InvalidSpecError(`allow entry "${entry}": "${raw}" is not an IPv6 address or CIDR`);
  }
  const canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  return length === 128 ? `[${canonical}]` : `[${canonical}/${length}]`;
}

/**
 * Allow-list entry grammar: `TARGET[:PORT[-PORT]]`, TARGET one of `example.com`, `*.example.com`,
 * `10.0.0.0/8`, `192.0.2.7`, `[2001:db8::/32]`, or a keyword (public, private, loopback, link-local,
 * metadata, host) that maps to msb's destination group. A port restricts the entry to TCP.
 */
export function parseAllowEntry(entry: string): AllowEntry {
  if (entry.length === 0 || /[\s,@]/.test(entry)) throw new InvalidSpecError(`allow entry "${entry}" must be non-empty without spaces, "," or "@"`);
  let targetText: string;
  let portText: string | undefined;
  if (entry.startsWith("[")) {
    const close = entry.indexOf("]");
    const rest = entry.slice(close + 1);
    if (close < 0 || (rest !== "" && !rest.startsWith(":"))) throw new InvalidSpecError(`allow entry "${entry}": unterminated IPv6 bracket`);
    targetText = entry.slice(1, close);
    portText = rest === "" ? undefined : rest.slice(1);
    return { target: canonicalIPv6(targetText, entry), ports: portText === undefined ? undefined : checkPorts(portText, entry) };
  }
  const parts = entry.split(":");
  if (parts.length > 2) throw new InvalidSpecError(`allow entry "${entry}": write IPv6 addresses in brackets, e.g. [2001:db8::1]:443`);
  [targetText = "", portText] = parts;
  const ports = portText === undefined ? undefined : checkPorts(portText, entry);
  if (targetText in KEYWORD_GROUPS) return { target: targetText, ports };
  if (targetText.startsWith("*.")) return { target: `*.${canonicalDomain(targetText.slice(2), entry)}`, ports };
  if (/^[\d./]+$/.test(targetText)) return { target: canonicalIPv4(targetText, entry), ports };
  return { target: canonicalDomain(targetText, entry), ports };
}

function entryToString(entry: AllowEntry): string {
  return entry.ports === undefined ? entry.target : `${entry.target}:${entry.ports}`;
}

export function canonicalAllowEntry(entry: string): string {
  return entryToString(parseAllowEntry(entry));
}

/** A policy in one comparable spelling: an empty allow-list is the same as no network. */
export function canonicalPolicy(policy: NetworkPolicy): string {
  if (policy.mode === "all") return "all";
  if (policy.mode === "none" || policy.allow.length === 0) return "none";
  const entries = [...new Set(policy.allow.map(canonicalAllowEntry))].sort();
  return `allowlist ${entries.join(" ")}`;
}

/** The msb create flags for a policy. `--no-net` is msb's deny-both-directions default. */
export function buildNetworkArgs(policy: NetworkPolicy): string[] {
  switch (policy.mode) {
    case "none":
      return ["--no-net"];
    case "all":
      return ["--net=all"];
    case "allowlist": {
      if (policy.allow.length === 0) return ["--no-net"];
      const tokens = policy.allow.map(parseAllowEntry).map((e) => `allow@${KEYWORD_GROUPS[e.target] ?? e.target}${e.ports === undefined ? "" : `:tcp:${e.ports}`}`);
      return ["--no-net", `--net-rule=${DNS_RULE_TOKEN}`, ...[...new Set(tokens)].sort().map((t) => `--net-rule=${t}`)];
    }
    default: {
      const unknown: never = policy;
      throw new InvalidSpecError(`network mode ${JSON.stringify(unknown)} is not supported by the msb driver`);
    }
  }
}

type RuleReading = { kind: "dns" } | { kind: "entry"; entry: string } | { kind: "unknown"; detail: string };

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

/** Reads one msb rule (as `msb inspect` prints it) back into an allow-list entry. */
export function readRule(value: unknown): RuleReading {
  const rule = asRecord(value);
  const destination = asRecord(rule?.destination);
  const detail = JSON.stringify(value);
  if (!rule || !destination || asString(rule.action) !== "allow" || asString(rule.direction) !== "egress") return { kind: "unknown", detail };
  const ports = describePorts(rule);
  // `allow@dns` is stored as the gateway ("host" group) on port 53 over UDP and TCP.
  if (asString(destination.group) === "host" && ports === "tcp,udp:53") return { kind: "dns" };
  // Entries carry no port (any protocol) or exactly one TCP range, as buildNetworkArgs writes them.
  const tcpPort = ports?.match(/^tcp:(\d+(?:-\d+)?)$/)?.[1];
  if (ports !== "" && tcpPort === undefined) return { kind: "unknown", detail };
  let target: string | undefined;
  const cidr = asString(destination.cidr);
  const group = asString(destination.group);
  if (group && group in GROUP_KEYWORDS) target = GROUP_KEYWORDS[group];
  else if (asString(destination.domain)) target = asString(destination.domain);
  else if (asString(destination.domain_suffix)) target = `*.${asString(destination.domain_suffix)}`;
  else if (cidr?.includes(":")) target = `[${cidr.replace(/\/128$/, "")}]`;
  else if (cidr) target = cidr.replace(/\/32$/, "");
  if (target === undefined) return { kind: "unknown", detail };
  return { kind: "entry", entry: tcpPort === undefined ? target : `${target}:${tcpPort}` };
}

/** The policy msb actually holds. Anything unrecognised is reported and read as the widest policy. */
export function readNetworkPolicy(value: unknown): { policy: NetworkPolicy; anomalies: string[] } {
  const network = asRecord(value);
  const policy = asRecord(network?.policy);
  if (network?.enabled === false) return { policy: { mode: "none" }, anomalies: [] };
  const egress = asString(policy?.default_egress);
  const ingress = asString(policy?.default_ingress);
  const rules = (asArray(policy?.rules) ?? []).map(readRule);
  const unknown = rules.flatMap((r) => (r.kind === "unknown" ? [r.detail] : []));
  const entries = rules.flatMap((r) => (r.kind === "entry" ? [r.entry] : []));
  const hasDns = rules.some((r) => r.kind === "dns");
  if (egress === "allow" && ingress === "allow" && rules.length === 0) return { policy: { mode: "all" }, anomalies: [] };
  if (egress === "deny" && ingress === "deny" && rules.length === 0) return { policy: { mode: "none" }, anomalies: [] };
  if (egress === "deny" && ingress === "deny" && unknown.length === 0 && hasDns && entries.length > 0) {
    return { policy: { mode: "allowlist", allow: entries }, anomalies: [] };
  }
  const anomalies = [`network policy not recognised (egress=${egress ?? "?"}, ingress=${ingress ?? "?"}, ${rules.length} rules${hasDns ? "" : ", no DNS rule"})`];
  for (const detail of unknown) anomalies.push(`network rule not recognised: ${detail}`);
  return { policy: { mode: "all" }, anomalies };
}
