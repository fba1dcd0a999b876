// Property: a domain-only allowlist never lets a connection reach a closed (private/loopback/metadata) address.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { classifyAddress } from "../../egress/address-ranges";
import { formatIp, parseCidr, parseIp } from "../../egress/ip-address";
import { evaluate, type Policy } from "../../egress/policy";

const CLOSED_RANGES = [
  "169.254.169.254/32",
  "169.254.170.2/32",
  "100.100.100.200/32",
  "fd00:ec2::254/128",
  "127.0.0.0/8",
  "0.0.0.0/8",
  "::1/128",
  "::/128",
  "169.254.0.0/16",
  "fe80::/10",
  "10.0.0.0/8",
  "172.16.0.0/12",
  "192.168.0.0/16",
  "100.64.0.0/10",
  "fc00::/7",
];

/** A random address inside one closed range, as an IPv4 or IPv6 bigint. */
const closedAddress = fc.constantFrom(...CLOSED_RANGES).chain((text) => {
  const cidr = parseCidr(text);
  if (cidr === null) throw new Error(text);
  const bits = cidr.family === 4 ? 32 : 128;
  const hostBits = bits - cidr.prefix;
  return fc.bigInt({ min: 0n, max: (1n << BigInt(hostBits)) - 1n }).map((low) => ({ family: cidr.family, value: cidr.value | low }));
});

const hex32 = (v: bigint) => `${((v >> 16n) & 0xffffn).toString(16)}:${(v & 0xffffn).toString(16)}`;

/** The many ways a resolver (or a hostile DNS server) can spell one address. */
const spelled = closedAddress.chain((address) => {
  const canonical = formatIp(address);
  if (address.family === 6) {
    const full = Array.from({ length: 8 }, (_, i) => ((address.value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16).padStart(4, "0")).join(":");
    return fc.constantFrom(canonical, full, full.toUpperCase(), canonical.toUpperCase());
  }
  return fc.constantFrom(canonical, `::ffff:${canonical}`, `::ffff:${hex32(address.value)}`, `64:ff9b::${hex32(address.value)}`, `2002:${hex32(address.value)}::1`, `0:0:0:0:0:ffff:${canonical}`);
});

const publicAddress = fc.constantFrom("93.184.216.34", "140.82.112.6", "2606:2800:220:1:248:1893:25c8:1946", "8.8.8.8");

/** A domain-only allowlist and a host name one of its entries matches. */
const listedTarget = fc
  .record({ domains: fc.array(fc.domain(), { minLength: 1, maxLength: 5 }), wildcard: fc.boolean(), withPublic: fc.boolean(), sub: fc.stringMatching(/^[a-z0-9]{1,10}$/), pick: fc.nat() })
  .map(({ domains, wildcard, withPublic, sub, pick }) => {
    const chosen = domains[pick % domains.length] as string;
    const entries = domains.map((d) => (wildcard ? `*.${d}` : d));
    const policy: Policy = { mode: "allowlist", allow: withPublic ? [...entries, "public"] : entries };
    return { policy, host: (wildcard ? `${sub}.${chosen}` : chosen).toLowerCase() };
  });

describe("policy property", () => {
  test("domain-only allowlist + resolver answering closed addresses → never an allowed closed address", () => {
    let allowedRuns = 0;
    fc.assert(
      fc.property(listedTarget, fc.array(fc.oneof(spelled, publicAddress), { minLength: 1, maxLength: 6 }), fc.integer({ min: 1, max: 65535 }), ({ policy, host }, addresses, port) => {
        const { decision, allowedAddresses } = evaluate(policy, { host, port }, addresses);
        for (const allowed of allowedAddresses) {
          const parsed = parseIp(allowed);
          expect(parsed).not.toBeNull();
          expect(classifyAddress(parsed as NonNullable<typeof parsed>)).toEqual([]);
        }
        if (allowedAddresses.length === 0) expect(decision.allowed).toBe(false);
        else allowedRuns++;
      }),
      { numRuns: 2000 },
    );
    // Not vacuous: the public addresses in the mix were let through in many runs.
    expect(allowedRuns).toBeGreaterThan(500);
  });

  test("a closed address as an IP literal target under a domain-only allowlist → denied", () => {
    fc.assert(
      fc.property(listedTarget, spelled, ({ policy }, address) => {
        const host = formatIp(parseIp(address) as NonNullable<ReturnType<typeof parseIp>>);
        expect(evaluate(policy, { host, port: 80 }, [host]).decision.allowed).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  test("every spelling of a closed address is classified as closed", () => {
    fc.assert(
      fc.property(spelled, (address) => {
        const parsed = parseIp(address);
        expect(parsed).not.toBeNull();
        expect(classifyAddress(parsed as NonNullable<typeof parsed>).length).toBeGreaterThan(0);
      }),
      { numRuns: 2000 },
    );
  });
});
