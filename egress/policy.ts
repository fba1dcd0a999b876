// The egress policy evaluator: pure (policy, target, addresses) → decision naming the rule, in two stages.
import type { NetworkPolicy } from "./network-policy";
import { NetworkPolicyInvalidError } from "./policy-error";
import { classifyAddress, isMetadataName, type AddressCategory, type RangeMatch } from "./address-ranges";
import { domainEntryMatches, parseAllowEntry, portAllowed, type AllowEntry, type NetworkKeyword } from "./allow-entry";
import { cidrContains, cidrWithin, formatIp, parseIp } from "./ip-address";

export type Policy = NetworkPolicy;

/** `allowEntry`: for a target no entry names, the one entry that would let it through (allowEntryFor). */
export type Denial = { allowed: false; rule: string; reason: string; allowEntry?: string };
export type Decision = { allowed: true; rule: string } | Denial;

/** `host` is lowercase without a trailing dot; an IPv6 literal has no brackets. */
export type EgressTarget = { host: string; port: number };

export type PolicyContext = { hostAddresses?: readonly string[] };

export type CompiledPolicy =
  | { mode: "none" }
  | { mode: "all" }
  | { mode: "allowlist"; entries: AllowEntry[] };

type Allowlist = Extract<CompiledPolicy, { mode: "allowlist" }>;
type AddressEntry = Extract<AllowEntry, { kind: "address" }>;

/** Whether the policy lists `keyword` with `port` among its ports. */
function hasKeyword(policy: Allowlist, keyword: NetworkKeyword, port: number): boolean {
  return policy.entries.some((e) => e.kind === "keyword" && e.keyword === keyword && portAllowed(e.ports, port));
}

/** The first domain entry naming `host` (exactly, or by wildcard) on `port`. */
function domainEntry(policy: Allowlist, target: EgressTarget, exactOnly = false): AllowEntry | undefined {
  return policy.entries.find((e) => e.kind === "domain" && !(exactOnly && e.domain.wildcard) && domainEntryMatches(e.domain, target.host) && portAllowed(e.ports, target.port));
}

/** The result of the name stage: refuse now, or look the name up and judge each address. */
/** `addresses` is set when the name's addresses are known without DNS (localhost). */
export type NameCheck = { kind: "denied"; decision: Denial } | { kind: "lookup"; nameRule: string | null; addresses?: readonly string[] };

// RFC 6761: localhost and *.localhost are loopback; they are answered here, never sent to DNS.
const LOCALHOST_ADDRESSES = ["127.0.0.1", "::1"] as const;

/** The name by which a guest reaches the manager's host; answered here (its loopback), never sent to DNS. */
export const HOST_ALIAS = "host.sandbox.internal";
const HOST_ALIAS_ADDRESS = "127.0.0.1";

function isLocalhostName(host: string): boolean {
  return host === "localhost" || host.endsWith(".localhost");
}

export const MAX_ALLOW_ENTRIES = 256;

/** Every problem in an allowlist, one readable line each; empty when all entries are valid. */
export function allowlistProblems(allow: readonly string[]): string[] {
  const problems = allow.flatMap((entry) => {
    const parsed = parseAllowEntry(entry);
    return parsed.ok ? [] : [`${JSON.stringify(entry)} ${parsed.reason}`];
  });
  if (allow.length > MAX_ALLOW_ENTRIES) problems.push(`the allowlist has ${allow.length} entries; at most ${MAX_ALLOW_ENTRIES} are accepted`);
  return problems;
}

/** Validates and compiles; throws NetworkPolicyInvalidError (a 400) naming every bad entry. */
export function compilePolicy(policy: Policy): CompiledPolicy {
  const { compiled, problems } = compilePolicyLenient(policy);
  if (problems.length > 0) throw new NetworkPolicyInvalidError(`invalid network allowlist: ${problems.join("; ")}`);
  return compiled;
}

/**
 * For the proxy: bad entries are dropped and reported instead of refusing the whole policy. Dropping an
 * entry can only deny more. A policy of the wrong shape still throws (and the proxy then allows nothing).
 */
export function compilePolicyLenient(policy: Policy): { compiled: CompiledPolicy; problems: string[] } {
  const mode = (policy as { mode?: unknown } | null)?.mode;
  if (mode === "none" || mode === "all") return { compiled: { mode }, problems: [] };
  const allow = (policy as { allow?: unknown }).allow;
  if (mode !== "allowlist" || !Array.isArray(allow)) {
    throw new NetworkPolicyInvalidError(`network policy must be {mode: "none"}, {mode: "all"} or {mode: "allowlist", allow: [...]}`);
  }
  if (!allow.every((e): e is string => typeof e === "string")) throw new NetworkPolicyInvalidError("network allowlist entries must be strings");
  const problems = allowlistProblems(allow);
  const entries = allow.slice(0, MAX_ALLOW_ENTRIES).flatMap((e) => {
    const parsed = parseAllowEntry(e);
    return parsed.ok ? [parsed.value] : [];
  });
  return { compiled: { mode: "allowlist", entries }, problems };
}

export function formatTarget(target: EgressTarget): string {
  return target.host.includes(":") ? `[${target.host}]:${target.port}` : `${target.host}:${target.port}`;
}

/**
 * The narrowest entry that lets `target` through by name: the name alone for the web's ports (as people
 * write them: `api.github.com`), else with its port; the host alias always with its port, since the alias
 * alone opens every port of the host, the manager's API among them.
 */
export function allowEntryFor(target: EgressTarget): string {
  const webPort = target.port === 80 || target.port === 443;
  return webPort && target.host !== HOST_ALIAS ? target.host : formatTarget(target);
}

/** `why` is told the entry that would let the target through, so the reason and `allowEntry` agree. */
function noRule(target: EgressTarget, why: (entry: string) => string): Denial {
  const allowEntry = allowEntryFor(target);
  return { allowed: false, rule: `no rule matches ${formatTarget(target)}`, reason: why(allowEntry), allowEntry };
}

/**
 * Stage 1, before any lookup: a name no entry could allow is refused without a DNS query (which could
 * itself carry data out). An IP literal skips domain matching and is judged in stage 2 alone.
 */
export function checkName(policy: CompiledPolicy, target: EgressTarget): NameCheck {
  if (policy.mode === "none") {
    return { kind: "denied", decision: { allowed: false, rule: "network none", reason: 'this session has no network access (policy mode "none")' } };
  }
  if (policy.mode === "all") return { kind: "lookup", nameRule: "allow all" };
  if (parseIp(target.host) !== null) return { kind: "lookup", nameRule: null };
  if (isMetadataName(target.host) && !hasKeyword(policy, "metadata", target.port)) {
    const reason = `${target.host} is an instance metadata service; only the keyword "metadata" opens it`;
    return { kind: "denied", decision: { allowed: false, rule: `block metadata ${target.host}`, reason } };
  }
  const domain = domainEntry(policy, target);
  if (isLocalhostName(target.host)) return { kind: "lookup", nameRule: domain ? `allow ${domain.text}` : null, addresses: LOCALHOST_ADDRESSES };
  const fixed = target.host === HOST_ALIAS ? { addresses: [HOST_ALIAS_ADDRESS] } : {};
  if (domain) return { kind: "lookup", nameRule: `allow ${domain.text}`, ...fixed };
  // Only `public` makes an unlisted name worth a lookup. Other keywords apply to IP literals and to the
  // addresses of listed names: resolving every name would let the guest leak data through DNS queries.
  if (hasKeyword(policy, "public", target.port)) return { kind: "lookup", nameRule: null, ...fixed };
  return { kind: "denied", decision: noRule(target, (entry) => `${target.host} is not in the allowlist; add "${entry}" to network.allow`) };
}

const KEYWORD_FOR: Record<AddressCategory, string | null> = {
  metadata: '"metadata"',
  loopback: '"loopback" (or "host")',
  host: '"host"',
  "link-local": '"link-local"',
  private: '"private"',
  reserved: null,
};

/** Stage 2, for one resolved (or literal) address, given what stage 1 allowed by name. */
export function checkAddress(policy: CompiledPolicy, target: EgressTarget, nameRule: string | null, addressText: string, ctx: PolicyContext = {}): Decision {
  if (policy.mode === "none") return { allowed: false, rule: "network none", reason: 'this session has no network access (policy mode "none")' };
  if (policy.mode === "all") return { allowed: true, rule: "allow all" };
  const address = parseIp(addressText);
  if (address === null) return { allowed: false, rule: `bad address ${addressText}`, reason: `the resolver returned ${JSON.stringify(addressText)}, which is not an IP address` };
  const shown = formatIp(address);
  const via = parseIp(target.host) !== null ? shown : `${target.host} resolves to ${shown}, which`;
  const alias = hostAliasEntry(policy, target, shown);
  if (alias) return { allowed: true, rule: `allow ${alias.text}` };
  const matches = classifyAddress(address, ctx.hostAddresses);
  const addressEntries = policy.entries.filter((e): e is AddressEntry => e.kind === "address" && cidrContains(e.cidr, address) && portAllowed(e.ports, target.port));
  if (matches.length === 0) {
    if (nameRule !== null) return { allowed: true, rule: nameRule };
    if (hasKeyword(policy, "public", target.port)) return { allowed: true, rule: "allow public" };
    const entry = addressEntries[0];
    if (entry) return { allowed: true, rule: `allow ${entry.text}` };
    return noRule(target, (entry) => `${via} is a public address that no entry allows; add "${entry}" or the keyword "public" to network.allow`);
  }
  return openedBySensitive(policy, target.port, addressEntries, matches) ?? blockedBy(matches, via);
}

/**
 * An entry naming the host alias exactly (no wildcard) opens the one address this module gives that name,
 * on the entry's port only: no DNS answer is involved, so there is nothing to rebind. This lets a policy
 * open one service on the host (`host.sandbox.internal:4873`) without the keyword `loopback`, which opens
 * every port of the host's loopback, the manager's own API included.
 */
function hostAliasEntry(policy: Allowlist, target: EgressTarget, address: string): AllowEntry | undefined {
  if (target.host !== HOST_ALIAS || address !== HOST_ALIAS_ADDRESS) return undefined;
  return domainEntry(policy, target, true);
}

/**
 * Only keywords (or an address entry no wider than the range) open a closed range; a domain match never
 * does, which is what defeats DNS rebinding. Metadata is exclusive: "link-local" does not open 169.254.169.254.
 */
function openedBySensitive(policy: Allowlist, port: number, addressEntries: AddressEntry[], matches: RangeMatch[]): Decision | null {
  const opening = matches.some((m) => m.category === "metadata") ? matches.filter((m) => m.category === "metadata") : matches;
  const keyword = opening.find((m) => m.category !== "reserved" && hasKeyword(policy, m.category as NetworkKeyword, port));
  if (keyword) return { allowed: true, rule: `allow ${keyword.category}` };
  const entry = addressEntries.find((e) => opening.some((m) => cidrWithin(e.cidr, m.cidr)));
  return entry ? { allowed: true, rule: `allow ${entry.text}` } : null;
}

function blockedBy(matches: RangeMatch[], via: string): Denial {
  const primary = matches[0] as RangeMatch;
  const keyword = KEYWORD_FOR[primary.category];
  const fix = keyword === null ? `no keyword opens it, an address entry within it does: add "${primary.range}" (or the one address) to network.allow` : `add the keyword ${keyword} to network.allow to reach it`;
  return { allowed: false, rule: `block ${primary.category} ${primary.range}`, reason: `${via} is in the ${primary.category} range ${primary.range}; ${fix}` };
}

/**
 * Both stages at once. The decision is the first allowed address's, or else the first denial; callers
 * connect only to `allowedAddresses`, in order, and never look the name up again. `addresses` is what
 * the resolver returned (ignored for localhost names, which have fixed addresses).
 */
export function evaluate(policy: Policy | CompiledPolicy, target: EgressTarget, addresses: readonly string[], ctx: PolicyContext = {}): { decision: Decision; allowedAddresses: string[] } {
  const compiled = "entries" in policy || policy.mode !== "allowlist" ? (policy as CompiledPolicy) : compilePolicy(policy);
  const name = checkName(compiled, target);
  if (name.kind === "denied") return { decision: name.decision, allowedAddresses: [] };
  const decisions = (name.addresses ?? addresses).map((a) => ({ address: a, decision: checkAddress(compiled, target, name.nameRule, a, ctx) }));
  const allowed = decisions.filter((d) => d.decision.allowed);
  const first = allowed[0] ?? decisions[0];
  if (!first) return { decision: { allowed: false, rule: `no address for ${formatTarget(target)}`, reason: `${target.host} has no address` }, allowedAddresses: [] };
  return { decision: first.decision, allowedAddresses: allowed.map((d) => d.address) };
}
