// One allowlist entry (keyword, domain pattern[:port], IP or CIDR): parsing, validation reasons, domain matching.
import { parseCidr, type Cidr } from "./ip-address";

export const NETWORK_KEYWORDS = ["public", "private", "loopback", "link-local", "metadata", "host"] as const;
export type NetworkKeyword = (typeof NETWORK_KEYWORDS)[number];

/** `api.github.com`, `*.example.com` (any subdomain, not the apex), either optionally with `:port`. */
export type DomainPattern = { wildcard: boolean; name: string; port: number | null };

export type AllowEntry =
  | { kind: "keyword"; text: string; keyword: NetworkKeyword }
  | { kind: "domain"; text: string; pattern: DomainPattern }
  | { kind: "address"; text: string; cidr: Cidr };

export type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const EXPECTED = `use a domain (api.github.com, *.example.com, optionally :port), an IP address or CIDR, or one of ${NETWORK_KEYWORDS.join(", ")}`;

/** Lowercases, drops one trailing dot; the same normalization targets get, so comparisons are plain. */
export function normalizeHostName(host: string): string {
  return host.toLowerCase().replace(/\.$/, "");
}

export function parseDomainPattern(raw: string): Parsed<DomainPattern> {
  const text = raw.toLowerCase();
  const colon = text.lastIndexOf(":");
  let port: number | null = null;
  let host = text;
  if (colon !== -1) {
    const portText = text.slice(colon + 1);
    if (!/^\d{1,5}$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535) {
      return { ok: false, reason: `port ${JSON.stringify(portText)} is not 1-65535` };
    }
    port = Number(portText);
    host = text.slice(0, colon);
  }
  if (host === "*") return { ok: false, reason: `"*" matches every host; use mode "all", or the keyword "public" for every public address` };
  const wildcard = host.startsWith("*.");
  const name = normalizeHostName(wildcard ? host.slice(2) : host);
  if (name.includes("*")) return { ok: false, reason: "a wildcard is allowed only as the whole first label, as in *.example.com" };
  if (name.length === 0 || name.length > 253 || !name.split(".").every((label) => LABEL.test(label))) {
    return { ok: false, reason: `is not a valid domain name; ${EXPECTED}` };
  }
  return { ok: true, value: { wildcard, name, port } };
}

export function parseAllowEntry(raw: string): Parsed<AllowEntry> {
  const text = raw.trim().toLowerCase();
  if (text.length === 0) return { ok: false, reason: "is empty" };
  if (/\s/.test(text)) return { ok: false, reason: "contains whitespace; give one host per entry" };
  if (text.includes("://")) return { ok: false, reason: 'is a URL; give the host name only, e.g. "api.github.com"' };
  if ((NETWORK_KEYWORDS as readonly string[]).includes(text)) {
    return { ok: true, value: { kind: "keyword", text, keyword: text as NetworkKeyword } };
  }
  // Anything with a colon beyond a single ":port", or a slash, or only digits and dots is an address.
  const looksLikeAddress = text.includes("/") || text.startsWith("[") || (text.match(/:/g) ?? []).length > 1 || /^[\d.]+(:\d*)?$/.test(text);
  if (looksLikeAddress) {
    // Brackets only around a whole IPv6 address: "[::1]:443" must not read as the address ::1:443.
    const bare = text.startsWith("[") ? (text.endsWith("]") && !text.includes("/") ? text.slice(1, -1) : "") : text;
    const cidr = parseCidr(bare);
    if (cidr === null) return { ok: false, reason: `is not a valid IP address or CIDR (ports are only supported on domain entries); ${EXPECTED}` };
    return { ok: true, value: { kind: "address", text, cidr } };
  }
  const pattern = parseDomainPattern(text);
  return pattern.ok ? { ok: true, value: { kind: "domain", text, pattern: pattern.value } } : pattern;
}

/** `host` must already be normalized (see normalizeHostName). */
export function domainMatches(pattern: DomainPattern, host: string, port: number): boolean {
  if (pattern.port !== null && pattern.port !== port) return false;
  return pattern.wildcard ? host.endsWith(`.${pattern.name}`) : host === pattern.name;
}
