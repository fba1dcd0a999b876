// The one allowlist grammar: an entry (keyword, domain pattern, IP or CIDR, each with optional ports) parsed
// once into structured data that the API check, the proxy and the msb rule builder all read.
import { cidrHasHostBits, formatCidr, parseCidr, type Cidr } from "./ip-address";
import { formatPorts, parsePorts, type PortRange } from "./ports";

export { portAllowed, type PortRange } from "./ports";

export const NETWORK_KEYWORDS = ["public", "private", "loopback", "link-local", "metadata", "host"] as const;
export type NetworkKeyword = (typeof NETWORK_KEYWORDS)[number];

/** A secret's host: `api.github.com`, `*.example.com` (any subdomain, not the apex), optionally `:port`. */
export type DomainPattern = { wildcard: boolean; name: string; port: number | null };

/** `text` is the entry as written (trimmed, lower case), for rule names; `ports` null means every port. */
export type AllowEntry = { text: string; ports: PortRange | null } & (
  | { kind: "keyword"; keyword: NetworkKeyword }
  | { kind: "domain"; domain: { wildcard: boolean; name: string } }
  | { kind: "address"; cidr: Cidr }
);

export type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const EXPECTED = `use a domain (api.github.com, *.example.com), an IP address or CIDR (10.0.0.0/8, [2001:db8::/32]), or one of ${NETWORK_KEYWORDS.join(", ")}; any of them optionally with :PORT or :LOW-HIGH`;

/** Lowercases, drops one trailing dot; the same normalization targets get, so comparisons are plain. */
export function normalizeHostName(host: string): string {
  return host.toLowerCase().replace(/\.$/, "");
}

function parseDomainName(host: string): Parsed<{ wildcard: boolean; name: string }> {
  if (host === "*") return { ok: false, reason: `"*" matches every host; use mode "all", or the keyword "public" for every public address` };
  const wildcard = host.startsWith("*.");
  const name = normalizeHostName(wildcard ? host.slice(2) : host);
  if (name.includes("*")) return { ok: false, reason: "a wildcard is allowed only as the whole first label, as in *.example.com" };
  if (name.length === 0 || name.length > 253 || !name.split(".").every((label) => LABEL.test(label))) {
    return { ok: false, reason: `is not a valid domain name (non-ASCII names are written in punycode, xn--…); ${EXPECTED}` };
  }
  return { ok: true, value: { wildcard, name } };
}

/** A secret's host pattern (see DomainPattern); allowlist entries use parseAllowEntry. */
export function parseDomainPattern(raw: string): Parsed<DomainPattern> {
  const text = raw.toLowerCase();
  const colon = text.lastIndexOf(":");
  let port: number | null = null;
  if (colon !== -1) {
    const portText = text.slice(colon + 1);
    if (!/^\d{1,5}$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535) {
      return { ok: false, reason: `port ${JSON.stringify(portText)} is not 1-65535` };
    }
    port = Number(portText);
  }
  const domain = parseDomainName(colon === -1 ? text : text.slice(0, colon));
  return domain.ok ? { ok: true, value: { ...domain.value, port } } : domain;
}

/** Splits `TARGET[:PORTS]`; an IPv6 target takes a port only inside brackets (`[2001:db8::1]:443`). */
function splitPorts(text: string): Parsed<{ target: string; bracketed: boolean; portText: string | null }> {
  if (text.startsWith("[")) {
    const close = text.indexOf("]");
    const rest = close === -1 ? "" : text.slice(close + 1);
    if (close === -1 || (rest !== "" && !rest.startsWith(":"))) return { ok: false, reason: "has an unterminated bracket; write [2001:db8::1] or [2001:db8::1]:443" };
    return { ok: true, value: { target: text.slice(1, close), bracketed: true, portText: rest === "" ? null : rest.slice(1) } };
  }
  const colons = (text.match(/:/g) ?? []).length;
  if (colons > 1) return { ok: true, value: { target: text, bracketed: false, portText: null } };
  const colon = text.indexOf(":");
  return { ok: true, value: { target: colon === -1 ? text : text.slice(0, colon), bracketed: false, portText: colon === -1 ? null : text.slice(colon + 1) } };
}

function parseAddress(target: string, bracketed: boolean): Parsed<Cidr> {
  const isV6 = target.includes(":");
  if (bracketed && !isV6) return { ok: false, reason: "brackets are only for IPv6 addresses, as in [2001:db8::1]:443" };
  if (target.includes("%")) return { ok: false, reason: "has an IPv6 zone (%…); zones are not part of an allowlist address" };
  const cidr = parseCidr(target);
  if (cidr === null) {
    const hint = isV6 && !bracketed ? "; an IPv6 address with a port goes in brackets, as [2001:db8::1]:443" : "";
    return { ok: false, reason: `is not a valid IP address or CIDR${hint}; ${EXPECTED}` };
  }
  if (cidrHasHostBits(target)) {
    const network = formatCidr(cidr);
    return { ok: false, reason: `has host bits set; write ${isV6 ? `[${network}]` : network} for the network, or the address alone for one host` };
  }
  return { ok: true, value: cidr };
}

export function parseAllowEntry(raw: string): Parsed<AllowEntry> {
  const text = raw.trim().toLowerCase();
  if (text.length === 0) return { ok: false, reason: "is empty" };
  if (/\s/.test(text)) return { ok: false, reason: "contains whitespace; give one host per entry" };
  if (text.includes("://")) return { ok: false, reason: 'is a URL; give the host name only, e.g. "api.github.com"' };
  const split = splitPorts(text);
  if (!split.ok) return split;
  const { target, bracketed, portText } = split.value;
  let ports: PortRange | null = null;
  if (portText !== null) {
    const parsedPorts = parsePorts(portText);
    if (!parsedPorts.ok) return parsedPorts;
    ports = parsedPorts.value;
  }
  if ((NETWORK_KEYWORDS as readonly string[]).includes(target)) return { ok: true, value: { kind: "keyword", text, ports, keyword: target as NetworkKeyword } };
  // A slash, a colon (IPv6) or only digits and dots: an address; anything else is a domain.
  if (bracketed || target.includes("/") || target.includes(":") || /^[\d.]+$/.test(target)) {
    const cidr = parseAddress(target, bracketed);
    return cidr.ok ? { ok: true, value: { kind: "address", text, ports, cidr: cidr.value } } : cidr;
  }
  const domain = parseDomainName(target);
  if (!domain.ok) return domain;
  // msb refuses these too ("would match every domain under that TLD"): one label after `*.` is a whole TLD.
  if (domain.value.wildcard && !domain.value.name.includes(".")) {
    return { ok: false, reason: `matches every name under the top-level domain .${domain.value.name}; list the domains, or use the keyword "public"` };
  }
  return { ok: true, value: { kind: "domain", text, ports, domain: domain.value } };
}

/** A secret's host pattern against a normalized host: a wildcard covers subdomains, not the apex. */
export function domainMatches(pattern: DomainPattern, host: string, port: number): boolean {
  if (pattern.port !== null && pattern.port !== port) return false;
  return pattern.wildcard ? host.endsWith(`.${pattern.name}`) : host === pattern.name;
}

/**
 * An allowlist domain against a normalized host name. `*.example.com` covers example.com itself and every
 * subdomain: that is what msb's suffix rules enforce, and one grammar must mean one thing on every back end.
 */
export function domainEntryMatches(domain: { wildcard: boolean; name: string }, host: string): boolean {
  return host === domain.name || (domain.wildcard && host.endsWith(`.${domain.name}`));
}

/** One canonical spelling: `example.com:443`, `*.example.com`, `10.0.0.0/8:80-90`, `192.0.2.7`, `[2001:db8::/32]`. */
export function formatAllowEntry(entry: AllowEntry): string {
  const ports = entry.ports === null ? "" : `:${formatPorts(entry.ports)}`;
  switch (entry.kind) {
    case "keyword":
      return `${entry.keyword}${ports}`;
    case "domain":
      return `${entry.domain.wildcard ? "*." : ""}${entry.domain.name}${ports}`;
    case "address":
      return `${formatAddressTarget(entry.cidr)}${ports}`;
  }
}

/** `10.0.0.0/8`, `192.0.2.7` (a whole /32 is the address), `[2001:db8::/32]`, `[::1]`. */
export function formatAddressTarget(cidr: Cidr): string {
  const full = cidr.prefix === (cidr.family === 4 ? 32 : 128);
  const text = full ? formatCidr(cidr).replace(/\/\d+$/, "") : formatCidr(cidr);
  return cidr.family === 6 ? `[${text}]` : text;
}
