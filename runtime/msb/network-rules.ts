// NetworkPolicy → msb network flags, and msb's inspect JSON back to a NetworkPolicy for attestation. The
// entries come from the one allowlist grammar (egress/allow-entry), so msb enforces what the proxy would.
import type { NetworkPolicy } from "../../egress/network-policy";
import { formatAllowEntry, parseAllowEntry, type AllowEntry, type NetworkKeyword } from "../../egress/allow-entry";
import { CLOSED_RANGES, type AddressCategory } from "../../egress/address-ranges";
import { cidrWithin } from "../../egress/ip-address";
import { HOST_ALIAS } from "../../egress/policy";
import { formatPorts } from "../../egress/ports";
import { METADATA_FLOOR, OTHER_FLOOR, type FloorRange } from "./network-floor";
import { readRuleToken } from "./network-rule-json";
import { InvalidSpecError } from "./spec-checks";
import { asArray, asRecord, asString } from "./json-guards";

export { readRuleToken } from "./network-rule-json";

/** Always allowed with an allow-list: domain rules only match names the sandbox resolved itself. */
const DNS_RULE_TOKEN = "allow@dns";
/**
 * msb's `host` group is the VM's gateway, where its DNS answers: nothing else there is opened (a `private`
 * rule would otherwise cover the gateway's address). Written twice: at the top, and again between the
 * address entries inside closed ranges and the rest of the floor, where it marks the boundary for reading back.
 */
const HOST_DENY_TOKEN = "deny@host";

/** The keyword that opens each category, where msb can open it (loopback and host: see msbEntryProblem). */
const KEYWORD_OF: Partial<Record<AddressCategory, NetworkKeyword>> = { metadata: "metadata", "link-local": "link-local", private: "private" };

/**
 * Why msb cannot enforce an entry as the proxy does, with the fix; null when it can.
 * Exported so a test holds it to the proxy's grammar.
 */
export function msbEntryProblem(entry: AllowEntry): string | null {
  if (entry.kind === "keyword" && (entry.keyword === "loopback" || entry.keyword === "host")) {
    return `the keyword "${entry.keyword}" opens this host's own services through the local runtime's proxy; under msb a VM's loopback is the VM itself and msb's "host" is only the VM's gateway, so msb cannot open them: remove it, or run the local runtime (SANDBOX_RUNTIME=local)`;
  }
  if (entry.kind === "domain" && (entry.domain.name === "localhost" || entry.domain.name.endsWith(".localhost"))) {
    return "localhost is the VM itself under msb, so no rule can open or close it: remove the entry";
  }
  if (entry.kind === "domain" && entry.domain.name === HOST_ALIAS) {
    return `${HOST_ALIAS} is the manager's host as the local runtime's proxy answers it; msb VMs have no such name and cannot reach the host's services: remove it, or run the local runtime (SANDBOX_RUNTIME=local)`;
  }
  return null;
}

/** Parses every entry with the shared grammar and refuses what msb cannot enforce, naming each problem. */
function parseMsbEntries(allow: readonly string[]): AllowEntry[] {
  return allow.map((text) => {
    const parsed = parseAllowEntry(text);
    if (!parsed.ok) throw new InvalidSpecError(`allow entry ${JSON.stringify(text)} ${parsed.reason}`);
    const problem = msbEntryProblem(parsed.value);
    if (problem !== null) throw new InvalidSpecError(`allow entry ${JSON.stringify(text)}: ${problem}`);
    return parsed.value;
  });
}

/** Every entry msb cannot enforce, one line each naming the entry, why and the fix (bad entries are left to the grammar). */
export function msbAllowlistProblems(allow: readonly string[]): string[] {
  return allow.flatMap((text) => {
    const parsed = parseAllowEntry(text);
    const problem = parsed.ok ? msbEntryProblem(parsed.value) : null;
    return problem === null ? [] : [`${JSON.stringify(text)}: ${problem}`];
  });
}

function portsSuffix(entry: AllowEntry): string {
  return entry.ports === null ? "" : `:tcp:${formatPorts(entry.ports)}`;
}

/** msb's target for a public keyword, domain or address entry (`domain=` for single-label names). */
function entryToken(entry: AllowEntry): string {
  const canonical = formatAllowEntry({ ...entry, ports: null });
  const target = entry.kind === "domain" && !entry.domain.wildcard && !entry.domain.name.includes(".") ? `domain=${canonical}` : canonical;
  return `allow@${target}${portsSuffix(entry)}`;
}

function uniqueSorted(tokens: string[]): string[] {
  return [...new Set(tokens)].sort();
}

function floorTokens(floor: readonly FloorRange[], entries: readonly AllowEntry[]): string[] {
  return floor.flatMap((range) => {
    const keyword = KEYWORD_OF[range.category];
    const opening = entries.filter((e) => e.kind === "keyword" && e.keyword === keyword);
    return [...uniqueSorted(opening.map((e) => `allow@${range.target}${portsSuffix(e)}`)), `deny@${range.target}`];
  });
}

const insideClosedRange = (entry: AllowEntry) => entry.kind === "address" && CLOSED_RANGES.some((r) => cidrWithin(entry.cidr, r.cidr));

/**
 * The ordered rule tokens (msb: first match wins) that give the proxy's decisions: an address entry inside
 * a closed range opens that range part (after metadata, which stays exclusive); a wider address entry, a
 * domain or `public` opens only what no closed range holds, because the floor denies those first.
 */
function buildAllowlistTokens(entries: readonly AllowEntry[]): string[] {
  const inside = entries.filter(insideClosedRange);
  const rest = entries.filter((e) => !insideClosedRange(e) && e.kind !== "keyword");
  const publicKeyword = entries.filter((e) => e.kind === "keyword" && e.keyword === "public");
  return [
    DNS_RULE_TOKEN,
    HOST_DENY_TOKEN,
    ...floorTokens(METADATA_FLOOR, entries),
    ...uniqueSorted(inside.map(entryToken)),
    HOST_DENY_TOKEN,
    ...floorTokens(OTHER_FLOOR, entries),
    ...uniqueSorted([...publicKeyword, ...rest].map(entryToken)),
  ];
}

/** A policy in one comparable spelling: an empty allow-list is the same as no network. */
export function canonicalPolicy(policy: NetworkPolicy): string {
  if (policy.mode === "all") return "all";
  if (policy.mode === "none" || policy.allow.length === 0) return "none";
  return `allowlist ${uniqueSorted(parseMsbEntries(policy.allow).map(formatAllowEntry)).join(" ")}`;
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
      return ["--no-net", ...buildAllowlistTokens(parseMsbEntries(policy.allow)).map((t) => `--net-rule=${t}`)];
    }
    default: {
      const unknown: never = policy;
      throw new InvalidSpecError(`network mode ${JSON.stringify(unknown)} is not supported by the msb driver`);
    }
  }
}

/** `allow@TARGET[:tcp:PORTS]` → the entry it was written from (`domain=` and `:tcp` dropped). */
function tokenEntry(token: string): string | undefined {
  const match = /^allow@(?:domain=)?(.+?)(?::tcp:(\d+(?:-\d+)?))?$/.exec(token);
  return match ? `${match[1]}${match[2] === undefined ? "" : `:${match[2]}`}` : undefined;
}

/** The entries the builder's layout implies; the caller rebuilds from them and compares token by token. */
function entriesFromTokens(tokens: readonly string[]): string[] | undefined {
  const boundary = tokens.indexOf(HOST_DENY_TOKEN, 2);
  const metadataEnd = tokens.indexOf(`deny@${METADATA_FLOOR.at(-1)?.target}`);
  const floorEnd = tokens.indexOf(`deny@${OTHER_FLOOR.at(-1)?.target}`);
  if (tokens[0] !== DNS_RULE_TOKEN || tokens[1] !== HOST_DENY_TOKEN || boundary < 0 || metadataEnd < 0 || floorEnd < boundary) return undefined;
  const keywords = Object.entries(KEYWORD_OF).flatMap(([category, keyword]) => {
    const first = [...METADATA_FLOOR, ...OTHER_FLOOR].find((r) => r.category === category);
    const found: string[] = [];
    for (let i = tokens.indexOf(`deny@${first?.target}`) - 1; i > 0 && tokens[i]?.startsWith(`allow@${first?.target}`); i--) {
      const ports = tokens[i]?.slice(`allow@${first?.target}`.length).replace(/^:tcp:/, ":");
      found.push(`${keyword}${ports}`);
    }
    return found;
  });
  const listed = [...tokens.slice(metadataEnd + 1, boundary), ...tokens.slice(floorEnd + 1)].map(tokenEntry);
  return listed.includes(undefined) ? undefined : [...keywords, ...(listed as string[])];
}

function sameTokens(allow: readonly string[], tokens: readonly string[]): boolean {
  try {
    const rebuilt = buildAllowlistTokens(parseMsbEntries(allow));
    return rebuilt.length === tokens.length && rebuilt.every((t, i) => t === tokens[i]);
  } catch {
    return false;
  }
}

/** The policy msb actually holds. Anything unrecognised is reported and read as the widest policy. */
export function readNetworkPolicy(value: unknown): { policy: NetworkPolicy; anomalies: string[] } {
  const network = asRecord(value);
  const policy = asRecord(network?.policy);
  if (network?.enabled === false) return { policy: { mode: "none" }, anomalies: [] };
  const egress = asString(policy?.default_egress);
  const ingress = asString(policy?.default_ingress);
  const rules = (asArray(policy?.rules) ?? []).map((rule) => ({ rule, token: readRuleToken(rule) }));
  if (egress === "allow" && ingress === "allow" && rules.length === 0) return { policy: { mode: "all" }, anomalies: [] };
  if (egress === "deny" && ingress === "deny" && rules.length === 0) return { policy: { mode: "none" }, anomalies: [] };
  const unknown = rules.filter((r) => r.token === undefined).map((r) => `network rule not recognised: ${JSON.stringify(r.rule)}`);
  const tokens = rules.map((r) => r.token ?? "");
  const allow = unknown.length === 0 ? entriesFromTokens(tokens) : undefined;
  if (egress === "deny" && ingress === "deny" && allow !== undefined && allow.length > 0 && sameTokens(allow, tokens)) {
    return { policy: { mode: "allowlist", allow }, anomalies: [] };
  }
  const anomalies = [`network policy not recognised (egress=${egress ?? "?"}, ingress=${ingress ?? "?"}, ${rules.length} rules, not the layout this driver writes)`];
  return { policy: { mode: "all" }, anomalies: [...anomalies, ...unknown] };
}
