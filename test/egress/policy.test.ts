// The egress policy evaluator, table-driven: entry validation, name stage, address stage, rule names.
import { describe, expect, test } from "bun:test";
import { NetworkPolicyInvalidError } from "../../egress/policy-error";
import { parseAllowEntry } from "../../egress/allow-entry";
import { allowlistProblems, checkName, compilePolicy, compilePolicyLenient, evaluate, type Policy } from "../../egress/policy";

const allowlist = (...allow: string[]): Policy => ({ mode: "allowlist", allow });
const HOST_ADDRESSES = ["127.0.0.1", "::1", "192.168.1.5", "fe80::1"];

describe("allowlist entries", () => {
  const valid: Array<[string, string]> = [
    ["api.github.com", "domain"],
    ["API.GitHub.com.", "domain"],
    ["*.example.com", "domain"],
    ["api.github.com:443", "domain"],
    ["localhost", "domain"],
    ["public", "keyword"],
    ["link-local", "keyword"],
    ["host", "keyword"],
    ["10.0.0.5", "address"],
    ["10.0.0.0/8", "address"],
    ["[::1]", "address"],
    ["fd00::/8", "address"],
    ["::ffff:10.0.0.0/104", "address"],
    ["1.2.3.4:443", "address"],
    ["[::1]:443", "address"],
    ["[2001:db8::/32]:8000-8999", "address"],
    ["10.0.0.0/8:80-90", "address"],
    ["public:443", "keyword"],
    ["api.github.com:22-22", "domain"],
  ];
  for (const [entry, kind] of valid) {
    test(`accept ${JSON.stringify(entry)} → ${kind}`, () => {
      const parsed = parseAllowEntry(entry);
      expect(parsed.ok && parsed.value.kind).toBe(kind as never);
    });
  }

  const invalid: Array<[string, RegExp]> = [
    ["", /empty/],
    ["   ", /empty/],
    ["api github.com", /whitespace/],
    ["https://api.github.com", /URL/],
    ["*", /every host/],
    ["api.*.com", /first label/],
    ["*example.com", /first label/],
    ["exa_mple.com", /not a valid domain/],
    ["-bad.com", /not a valid domain/],
    [`${"a".repeat(64)}.com`, /not a valid domain/],
    ["example.com:0", /port/],
    ["example.com:70000", /port/],
    ["example.com/path", /IP address or CIDR/],
    ["*.com", /top-level domain/],
    ["10.0.0.1/8", /host bits are set|host bits set; write 10.0.0.0\/8/],
    ["[10.0.0.1]", /brackets are only for IPv6/],
    ["[::1", /unterminated bracket/],
    ["fe80::1%eth0", /zone/],
    ["a.com:90-80", /backwards/],
    ["a.com:0443", /leading zeros/],
    ["a.com:65536", /above 65535/],
    ["bücher.example", /punycode/],
    ["10.0.0.0/33", /IP address or CIDR/],
    ["300.1.1.1", /IP address or CIDR/],
  ];
  for (const [entry, reason] of invalid) {
    test(`refuse ${JSON.stringify(entry)} → reason ${reason.source}`, () => {
      const parsed = parseAllowEntry(entry);
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.reason).toMatch(reason);
    });
  }

  test("compile a policy with junk → NetworkPolicyInvalidError (400) naming every bad entry", () => {
    const error = (() => {
      try {
        compilePolicy(allowlist("api.github.com", "https://x.com", "*"));
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(NetworkPolicyInvalidError);
    const domain = error as NetworkPolicyInvalidError;
    expect(domain.code).toBe("NETWORK_POLICY_INVALID");
    expect(domain.message).toContain('"https://x.com" is a URL');
    expect(domain.message).toContain('"*" "*" matches every host');
  });

  test("compile a policy of the wrong shape → NetworkPolicyInvalidError", () => {
    expect(() => compilePolicy({ mode: "sometimes" } as unknown as Policy)).toThrow(NetworkPolicyInvalidError);
    expect(() => compilePolicy({ mode: "allowlist", allow: [42] } as unknown as Policy)).toThrow(/strings/);
  });

  test("lenient compile (the proxy's) → bad entries dropped and reported, good ones kept", () => {
    const { compiled, problems } = compilePolicyLenient(allowlist("api.github.com", "10.0.0.1/8", "loopback"));
    expect(problems).toEqual([expect.stringContaining('"10.0.0.1/8"')]);
    expect(compiled.mode === "allowlist" && compiled.entries.map((e) => e.text)).toEqual(["api.github.com", "loopback"]);
  });

  test("more than 256 entries → a problem", () => {
    expect(allowlistProblems(Array.from({ length: 257 }, (_, i) => `h${i}.example.com`))).toEqual([expect.stringContaining("at most 256")]);
  });
});

type Row = { name: string; policy: Policy; host: string; port?: number; addresses?: string[]; allowed: boolean; rule: string };

const rows: Row[] = [
  // mode none / all
  { name: "none denies a public name", policy: { mode: "none" }, host: "example.com", addresses: ["93.184.216.34"], allowed: false, rule: "network none" },
  { name: "none denies loopback", policy: { mode: "none" }, host: "127.0.0.1", allowed: false, rule: "network none" },
  { name: "all allows a public name", policy: { mode: "all" }, host: "example.com", addresses: ["93.184.216.34"], allowed: true, rule: "allow all" },
  { name: "all allows private", policy: { mode: "all" }, host: "10.1.2.3", allowed: true, rule: "allow all" },
  { name: "all allows metadata (documented)", policy: { mode: "all" }, host: "169.254.169.254", allowed: true, rule: "allow all" },
  // domain entries
  { name: "exact domain, public address", policy: allowlist("api.github.com"), host: "api.github.com", addresses: ["140.82.112.6"], allowed: true, rule: "allow api.github.com" },
  { name: "exact domain is case-insensitive", policy: allowlist("API.GitHub.com"), host: "api.github.com", addresses: ["140.82.112.6"], allowed: true, rule: "allow api.github.com" },
  { name: "exact domain does not cover a subdomain", policy: allowlist("github.com"), host: "api.github.com", addresses: ["140.82.112.6"], allowed: false, rule: "no rule matches api.github.com:443" },
  { name: "wildcard matches a subdomain", policy: allowlist("*.example.com"), host: "a.example.com", addresses: ["93.184.216.34"], allowed: true, rule: "allow *.example.com" },
  { name: "wildcard matches a deep subdomain", policy: allowlist("*.example.com"), host: "a.b.example.com", addresses: ["93.184.216.34"], allowed: true, rule: "allow *.example.com" },
  // The apex too, as msb's suffix rules enforce it: one grammar, one meaning on every back end.
  { name: "wildcard matches the apex", policy: allowlist("*.example.com"), host: "example.com", addresses: ["93.184.216.34"], allowed: true, rule: "allow *.example.com" },
  { name: "wildcard does not match a lookalike", policy: allowlist("*.example.com"), host: "badexample.com", addresses: ["93.184.216.34"], allowed: false, rule: "no rule matches badexample.com:443" },
  { name: "domain with port matches that port", policy: allowlist("api.github.com:443"), host: "api.github.com", port: 443, addresses: ["140.82.112.6"], allowed: true, rule: "allow api.github.com:443" },
  { name: "domain with port refuses another port", policy: allowlist("api.github.com:443"), host: "api.github.com", port: 22, addresses: ["140.82.112.6"], allowed: false, rule: "no rule matches api.github.com:22" },
  { name: "unlisted name", policy: allowlist("api.github.com"), host: "example.org", addresses: ["93.184.216.34"], allowed: false, rule: "no rule matches example.org:443" },
  // rebinding: a listed name resolving into a closed range
  { name: "listed name → private address", policy: allowlist("rebind.example.com"), host: "rebind.example.com", addresses: ["10.0.0.1"], allowed: false, rule: "block private 10.0.0.0/8" },
  { name: "listed name → private address, private listed", policy: allowlist("rebind.example.com", "private"), host: "rebind.example.com", addresses: ["10.0.0.1"], allowed: true, rule: "allow private" },
  { name: "listed name → loopback", policy: allowlist("*.example.com"), host: "a.example.com", addresses: ["127.0.0.1"], allowed: false, rule: "block loopback 127.0.0.0/8" },
  { name: "listed name → loopback, loopback listed", policy: allowlist("*.example.com", "loopback"), host: "a.example.com", addresses: ["127.0.0.1"], allowed: true, rule: "allow loopback" },
  { name: "listed name → metadata", policy: allowlist("*.example.com"), host: "a.example.com", addresses: ["169.254.169.254"], allowed: false, rule: "block metadata 169.254.169.254/32" },
  { name: "listed name → IPv4-mapped loopback", policy: allowlist("a.example.com"), host: "a.example.com", addresses: ["::ffff:127.0.0.1"], allowed: false, rule: "block loopback 127.0.0.0/8" },
  { name: "listed name → 0.0.0.0 (reaches host listeners)", policy: allowlist("a.example.com"), host: "a.example.com", addresses: ["0.0.0.0"], allowed: false, rule: "block loopback 0.0.0.0/8" },
  { name: "listed name → NAT64 of metadata", policy: allowlist("a.example.com"), host: "a.example.com", addresses: ["64:ff9b::a9fe:a9fe"], allowed: false, rule: "block metadata 169.254.169.254/32" },
  { name: "listed name → CGNAT", policy: allowlist("a.example.com"), host: "a.example.com", addresses: ["100.64.1.1"], allowed: false, rule: "block private 100.64.0.0/10" },
  { name: "listed name → ULA", policy: allowlist("a.example.com"), host: "a.example.com", addresses: ["fd12::1"], allowed: false, rule: "block private fc00::/7" },
  { name: "listed name → multicast", policy: allowlist("a.example.com", "private"), host: "a.example.com", addresses: ["224.0.0.1"], allowed: false, rule: "block reserved 224.0.0.0/4" },
  { name: "mixed answer: the allowed public address wins", policy: allowlist("a.example.com"), host: "a.example.com", addresses: ["10.0.0.1", "93.184.216.34"], allowed: true, rule: "allow a.example.com" },
  // keywords and IP literals
  { name: "public allows any public name", policy: allowlist("public"), host: "example.org", addresses: ["93.184.216.34"], allowed: true, rule: "allow public" },
  { name: "public does not open private", policy: allowlist("public"), host: "intranet.example", addresses: ["192.168.0.10"], allowed: false, rule: "block private 192.168.0.0/16" },
  { name: "public allows a public IP literal", policy: allowlist("public"), host: "93.184.216.34", allowed: true, rule: "allow public" },
  { name: "IP literal loopback needs a keyword", policy: allowlist("api.github.com"), host: "127.0.0.1", allowed: false, rule: "block loopback 127.0.0.0/8" },
  { name: "loopback opens 127.0.0.1", policy: allowlist("loopback"), host: "127.0.0.1", allowed: true, rule: "allow loopback" },
  { name: "loopback opens ::1", policy: allowlist("loopback"), host: "::1", allowed: true, rule: "allow loopback" },
  { name: "host opens 127.0.0.1", policy: allowlist("host"), host: "127.0.0.1", allowed: true, rule: "allow host" },
  { name: "host opens the host's own LAN address", policy: allowlist("host"), host: "192.168.1.5", allowed: true, rule: "allow host" },
  { name: "host does not open another LAN address", policy: allowlist("host"), host: "192.168.1.6", allowed: false, rule: "block private 192.168.0.0/16" },
  { name: "loopback does not open the host's LAN address", policy: allowlist("loopback"), host: "192.168.1.5", allowed: false, rule: "block private 192.168.0.0/16" },
  { name: "link-local opens fe80::2", policy: allowlist("link-local"), host: "fe80::2", allowed: true, rule: "allow link-local" },
  { name: "link-local does not open metadata", policy: allowlist("link-local"), host: "169.254.169.254", allowed: false, rule: "block metadata 169.254.169.254/32" },
  { name: "private does not open Alibaba metadata", policy: allowlist("private"), host: "100.100.100.200", allowed: false, rule: "block metadata 100.100.100.200/32" },
  { name: "metadata opens 169.254.169.254", policy: allowlist("metadata"), host: "169.254.169.254", allowed: true, rule: "allow metadata" },
  { name: "IPv6 metadata blocked", policy: allowlist("public", "private"), host: "fd00:ec2::254", allowed: false, rule: "block metadata fd00:ec2::254/128" },
  { name: "metadata name blocked before lookup", policy: allowlist("*.google.internal", "public"), host: "metadata.google.internal", allowed: false, rule: "block metadata metadata.google.internal" },
  { name: "metadata name with the keyword", policy: allowlist("metadata"), host: "metadata.google.internal", addresses: ["169.254.169.254"], allowed: false, rule: "no rule matches metadata.google.internal:443" },
  { name: "metadata name with keyword and domain", policy: allowlist("metadata", "metadata.google.internal"), host: "metadata.google.internal", addresses: ["169.254.169.254"], allowed: true, rule: "allow metadata" },
  { name: "private keyword alone does not resolve names", policy: allowlist("private"), host: "git.corp.example", addresses: ["10.1.1.1"], allowed: false, rule: "no rule matches git.corp.example:443" },
  // localhost: fixed loopback addresses, never DNS
  { name: "localhost needs loopback", policy: allowlist("api.github.com"), host: "localhost", allowed: false, rule: "block loopback 127.0.0.0/8" },
  { name: "localhost with loopback", policy: allowlist("loopback"), host: "localhost", allowed: true, rule: "allow loopback" },
  { name: "localhost ignores a hostile resolver", policy: allowlist("localhost", "public"), host: "localhost", addresses: ["93.184.216.34"], allowed: false, rule: "block loopback 127.0.0.0/8" },
  // the host alias: answered by the policy (127.0.0.1), so an exact entry opens just that name and port
  { name: "host alias with port opens that port", policy: allowlist("host.sandbox.internal:4873"), host: "host.sandbox.internal", port: 4873, allowed: true, rule: "allow host.sandbox.internal:4873" },
  { name: "host alias with port refuses another port", policy: allowlist("host.sandbox.internal:4873"), host: "host.sandbox.internal", port: 7878, allowed: false, rule: "no rule matches host.sandbox.internal:7878" },
  { name: "host alias entry does not open 127.0.0.1", policy: allowlist("host.sandbox.internal:4873"), host: "127.0.0.1", port: 4873, allowed: false, rule: "block loopback 127.0.0.0/8" },
  { name: "host alias entry does not open localhost", policy: allowlist("host.sandbox.internal:4873"), host: "localhost", port: 4873, allowed: false, rule: "block loopback 127.0.0.0/8" },
  { name: "host alias ignores a hostile resolver", policy: allowlist("host.sandbox.internal", "public"), host: "host.sandbox.internal", addresses: ["93.184.216.34"], allowed: true, rule: "allow host.sandbox.internal" },
  { name: "host alias by wildcard needs loopback", policy: allowlist("*.sandbox.internal"), host: "host.sandbox.internal", allowed: false, rule: "block loopback 127.0.0.0/8" },
  { name: "host alias by public needs loopback", policy: allowlist("public"), host: "host.sandbox.internal", allowed: false, rule: "block loopback 127.0.0.0/8" },
  { name: "host alias unlisted, loopback listed", policy: allowlist("loopback"), host: "host.sandbox.internal", allowed: false, rule: "no rule matches host.sandbox.internal:443" },
  // address entries
  { name: "IP entry opens that public IP", policy: allowlist("93.184.216.34"), host: "93.184.216.34", allowed: true, rule: "allow 93.184.216.34" },
  { name: "IP entry inside a closed range opens it", policy: allowlist("10.0.0.5"), host: "10.0.0.5", allowed: true, rule: "allow 10.0.0.5" },
  { name: "IP entry opens only itself", policy: allowlist("10.0.0.5"), host: "10.0.0.6", allowed: false, rule: "block private 10.0.0.0/8" },
  { name: "a listed name → a reserved address, its range listed", policy: allowlist("registry.example.com", "203.0.113.0/24"), host: "registry.example.com", addresses: ["203.0.113.80"], allowed: true, rule: "allow 203.0.113.0/24" },
  { name: "a wide CIDR does not open a closed range", policy: allowlist("0.0.0.0/0"), host: "10.0.0.5", allowed: false, rule: "block private 10.0.0.0/8" },
  { name: "a wide CIDR does not open metadata", policy: allowlist("0.0.0.0/0"), host: "169.254.169.254", allowed: false, rule: "block metadata 169.254.169.254/32" },
  { name: "a wide CIDR opens public addresses", policy: allowlist("0.0.0.0/0"), host: "8.8.8.8", allowed: true, rule: "allow 0.0.0.0/0" },
  // ports: on every kind of entry
  { name: "address with port, that port", policy: allowlist("93.184.216.34:443"), host: "93.184.216.34", allowed: true, rule: "allow 93.184.216.34:443" },
  { name: "address with port, another port", policy: allowlist("93.184.216.34:443"), host: "93.184.216.34", port: 80, allowed: false, rule: "no rule matches 93.184.216.34:80" },
  { name: "private CIDR with a port range, inside", policy: allowlist("10.0.0.0/8:80-90"), host: "10.1.2.3", port: 85, allowed: true, rule: "allow 10.0.0.0/8:80-90" },
  { name: "private CIDR with a port range, outside", policy: allowlist("10.0.0.0/8:80-90"), host: "10.1.2.3", port: 91, allowed: false, rule: "block private 10.0.0.0/8" },
  { name: "public:443 on 443", policy: allowlist("public:443"), host: "example.org", addresses: ["93.184.216.34"], allowed: true, rule: "allow public" },
  { name: "public:443 on 80, refused before lookup", policy: allowlist("public:443"), host: "example.org", port: 80, addresses: ["93.184.216.34"], allowed: false, rule: "no rule matches example.org:80" },
  { name: "private:5432 opens that port only", policy: allowlist("private:5432"), host: "10.0.0.9", port: 22, allowed: false, rule: "block private 10.0.0.0/8" },
  { name: "domain with a port range", policy: allowlist("api.example.com:8000-8999"), host: "api.example.com", port: 8443, addresses: ["93.184.216.34"], allowed: true, rule: "allow api.example.com:8000-8999" },
  { name: "mapped IPv6 literal judged as IPv4", policy: allowlist("10.0.0.0/24"), host: "::ffff:10.0.0.7", allowed: true, rule: "allow 10.0.0.0/24" },
];

describe("evaluate", () => {
  for (const row of rows) {
    test(`${row.name} → ${row.allowed ? "allowed" : "denied"} by "${row.rule}"`, () => {
      const target = { host: row.host, port: row.port ?? 443 };
      const { decision } = evaluate(row.policy, target, row.addresses ?? [row.host], { hostAddresses: HOST_ADDRESSES });
      expect({ allowed: decision.allowed, rule: decision.rule }).toEqual({ allowed: row.allowed, rule: row.rule });
      if (!decision.allowed) expect(decision.reason.length).toBeGreaterThan(10);
    });
  }

  test("a denial says how to allow it", () => {
    const unlisted = evaluate(allowlist("api.github.com"), { host: "example.org", port: 443 }, []).decision;
    expect(!unlisted.allowed && unlisted.reason).toContain('add "example.org" to network.allow');
    // Another port, or the host alias (whose name alone would open the manager's API too): the entry names the port.
    const otherPort = evaluate(allowlist("api.github.com"), { host: "example.org", port: 8080 }, []).decision;
    expect(!otherPort.allowed && [otherPort.reason, otherPort.allowEntry]).toEqual(['example.org is not in the allowlist; add "example.org:8080" to network.allow', "example.org:8080"]);
    const alias = evaluate(allowlist("api.github.com"), { host: "host.sandbox.internal", port: 443 }, []).decision;
    expect(!alias.allowed && alias.allowEntry).toBe("host.sandbox.internal:443");
    const rebound = evaluate(allowlist("a.example.com"), { host: "a.example.com", port: 80 }, ["10.9.8.7"]).decision;
    expect(!rebound.allowed && rebound.reason).toBe('a.example.com resolves to 10.9.8.7, which is in the private range 10.0.0.0/8; add the keyword "private" to network.allow to reach it');
    // No keyword opens a reserved range (a registry mirror behind TEST-NET, say): the reason names the entry that does.
    const reserved = evaluate(allowlist("registry.example.com"), { host: "registry.example.com", port: 443 }, ["203.0.113.80"]).decision;
    expect(!reserved.allowed && reserved.reason).toBe('registry.example.com resolves to 203.0.113.80, which is in the reserved range 203.0.113.0/24; no keyword opens it, an address entry within it does: add "203.0.113.0/24" (or the one address) to network.allow');
  });

  test("an unlisted name is refused before lookup → no lookup needed", () => {
    expect(checkName(compilePolicy(allowlist("api.github.com", "loopback")), { host: "exfil-data.attacker.example", port: 443 }).kind).toBe("denied");
    expect(checkName(compilePolicy(allowlist("public")), { host: "anything.example", port: 443 }).kind).toBe("lookup");
  });

  test("allowedAddresses keeps only allowed addresses, in resolver order", () => {
    const result = evaluate(allowlist("a.example.com"), { host: "a.example.com", port: 443 }, ["10.0.0.1", "93.184.216.34", "127.0.0.1", "2606:2800:220:1::1"]);
    expect(result.allowedAddresses).toEqual(["93.184.216.34", "2606:2800:220:1::1"]);
  });

  test("a resolver answer that is not an address → denied", () => {
    const { decision } = evaluate(allowlist("a.example.com"), { host: "a.example.com", port: 443 }, ["not-an-ip"]);
    expect(decision).toMatchObject({ allowed: false, rule: "bad address not-an-ip" });
  });
});
