// IP address and CIDR parsing for the egress policy: strict text forms only, IPv4-mapped IPv6 folded to IPv4.

/** An address as a number: 32 bits for IPv4, 128 for IPv6. */
export type IpAddress = { family: 4 | 6; value: bigint };
export type Cidr = { family: 4 | 6; value: bigint; prefix: number };

const BITS = { 4: 32, 6: 128 } as const;

/**
 * Strict dotted quad. Shorthand ("127.1"), hex and leading-zero octets are refused on purpose: they are
 * not literals here, so they go through the resolver and the resolved address is what gets checked.
 */
export function parseIpv4(text: string): bigint | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  let value = 0n;
  for (const part of parts) {
    if (!/^(0|[1-9]\d{0,2})$/.test(part) || Number(part) > 255) return null;
    value = (value << 8n) | BigInt(part);
  }
  return value;
}

/** IPv6 text (with `::`, an optional dotted IPv4 tail and an optional `%zone`) → 128-bit value. */
function parseIpv6(text: string): bigint | null {
  const zoneless = text.replace(/%[A-Za-z0-9_.-]+$/, "");
  if (!/^[0-9A-Fa-f:.]+$/.test(zoneless)) return null;
  const halves = zoneless.split("::");
  if (halves.length > 2) return null;
  const words = (half: string): number[] | null => {
    if (half === "") return [];
    const out: number[] = [];
    const groups = half.split(":");
    for (const [i, group] of groups.entries()) {
      if (i === groups.length - 1 && group.includes(".")) {
        const v4 = parseIpv4(group);
        if (v4 === null) return null;
        out.push(Number(v4 >> 16n), Number(v4 & 0xffffn));
      } else if (/^[0-9A-Fa-f]{1,4}$/.test(group)) out.push(parseInt(group, 16));
      else return null;
    }
    return out;
  };
  const head = words(halves[0] ?? "");
  const tail = halves.length === 2 ? words(halves[1] ?? "") : [];
  if (head === null || tail === null) return null;
  // A dotted tail is only valid at the very end of the address.
  if (halves.length === 2 && (halves[0] ?? "").includes(".")) return null;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const all = [...head, ...new Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail];
  return all.reduce((acc, word) => (acc << 16n) | BigInt(word), 0n);
}

// Top 96 bits of ::ffff:0:0/96 (IPv4-mapped) and 64:ff9b::/96 (NAT64 well-known prefix).
const MAPPED_TOP96 = 0xffffn;
const NAT64_TOP96 = 0x64ff9bn << 64n;

/** Parses an IP literal (IPv6 optionally in brackets). `::ffff:a.b.c.d` becomes IPv4 `a.b.c.d`. */
export function parseIp(text: string): IpAddress | null {
  const v4 = parseIpv4(text);
  if (v4 !== null) return { family: 4, value: v4 };
  const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  const v6 = parseIpv6(bare);
  if (v6 === null) return null;
  if (v6 >> 32n === MAPPED_TOP96) return { family: 4, value: v6 & 0xffffffffn };
  return { family: 6, value: v6 };
}

/** `10.0.0.0/8`, `fd00::/8`, or a bare address (a /32 or /128). Host bits are masked off. */
export function parseCidr(text: string): Cidr | null {
  const slash = text.indexOf("/");
  const address = parseIp(slash === -1 ? text : text.slice(0, slash));
  if (address === null) return null;
  const bits = BITS[address.family];
  let prefix: number = bits;
  if (slash !== -1) {
    const prefixText = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(prefixText)) return null;
    prefix = Number(prefixText);
    // A mapped IPv6 CIDR (::ffff:10.0.0.0/104) is written in IPv6 bits; bring it to IPv4 bits.
    if (address.family === 4 && text.includes(":")) prefix -= 96;
    if (prefix < 0 || prefix > bits) return null;
  }
  return { family: address.family, value: mask(address.value, bits, prefix), prefix };
}

/** True when `text` parses as a CIDR whose address has bits set beyond its prefix (`10.0.0.1/8`). */
export function cidrHasHostBits(text: string): boolean {
  const cidr = parseCidr(text);
  const slash = text.indexOf("/");
  const address = parseIp(slash === -1 ? text : text.slice(0, slash));
  return cidr !== null && address !== null && address.value !== cidr.value;
}

function mask(value: bigint, bits: number, prefix: number): bigint {
  const hostBits = BigInt(bits - prefix);
  return (value >> hostBits) << hostBits;
}

export function cidrContains(cidr: Cidr, address: IpAddress): boolean {
  if (cidr.family !== address.family) return false;
  return mask(address.value, BITS[cidr.family], cidr.prefix) === cidr.value;
}

/** True when every address of `inner` is inside `outer`. */
export function cidrWithin(inner: Cidr, outer: Cidr): boolean {
  return inner.family === outer.family && inner.prefix >= outer.prefix && cidrContains(outer, inner);
}

/** Canonical text: dotted quad, or RFC 5952-style compressed lowercase IPv6. */
export function formatIp(address: IpAddress): string {
  if (address.family === 4) return [24n, 16n, 8n, 0n].map((s) => String((address.value >> s) & 0xffn)).join(".");
  const words = Array.from({ length: 8 }, (_, i) => Number((address.value >> BigInt(112 - 16 * i)) & 0xffffn));
  // Longest run of two or more zero words becomes `::`.
  let best = { start: -1, length: 0 };
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) { i++; continue; }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > best.length && j - i > 1) best = { start: i, length: j - i };
    i = j;
  }
  const hex = words.map((w) => w.toString(16));
  if (best.start === -1) return hex.join(":");
  return `${hex.slice(0, best.start).join(":")}::${hex.slice(best.start + best.length).join(":")}`;
}

export function formatCidr(cidr: Cidr): string {
  return `${formatIp(cidr)}/${cidr.prefix}`;
}

/** The IPv4 address an IPv6 address carries for NAT64 (64:ff9b::/96) or 6to4 (2002::/16), if any. */
export function embeddedIpv4(address: IpAddress): IpAddress | null {
  if (address.family !== 6) return null;
  if (address.value >> 32n === NAT64_TOP96) return { family: 4, value: address.value & 0xffffffffn };
  if (address.value >> 112n === 0x2002n) return { family: 4, value: (address.value >> 80n) & 0xffffffffn };
  return null;
}
