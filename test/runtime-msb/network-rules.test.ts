// Network policy mapping: allow-list entry grammar, the msb flags per mode, and msb's rule JSON read back.
import { describe, expect, test } from "bun:test";
import { InvalidSpecError } from "../../runtime/msb";
import { buildNetworkArgs, canonicalAllowEntry, canonicalPolicy, readNetworkPolicy, readRule } from "../../runtime/msb/network-rules";
import allowlistFixture from "./fixtures/inspect-allowlist-0.6.18.json";

describe("allow-list entries", () => {
  test("entries → one canonical spelling (lower case, /32 dropped, ports normalised, IPv6 compressed)", () => {
    expect(
      ["Example.COM", "*.GitHub.com", "registry.npmjs.org:443", "10.0.0.0/8:80-90", "192.0.2.7/32", "[2001:DB8:0::/32]", "[::1]:443", "a.b:22-22"].map(canonicalAllowEntry),
    ).toEqual(["example.com", "*.github.com", "registry.npmjs.org:443", "10.0.0.0/8:80-90", "192.0.2.7", "[2001:db8::/32]", "[::1]:443", "a.b:22"]);
  });

  const invalid = ["", "localhost", "*.com", "a.com,b.com", "a b.com", "x@y.com", "2001:db8::1", "10.1.2.3/8", "10.0.0.0/33", "a.com:0", "a.com:70000", "a.com:90-80", "[::1", "300.1.1.1", "-a.com"];
  for (const entry of invalid) {
    test(`"${entry}" → InvalidSpecError`, () => {
      expect(() => canonicalAllowEntry(entry)).toThrow(InvalidSpecError);
    });
  }
});

describe("buildNetworkArgs", () => {
  test("none → --no-net (deny both directions)", () => {
    expect(buildNetworkArgs({ mode: "none" })).toEqual(["--no-net"]);
  });

  test("all → --net=all", () => {
    expect(buildNetworkArgs({ mode: "all" })).toEqual(["--net=all"]);
  });

  test("empty allow-list → same as none", () => {
    expect(buildNetworkArgs({ mode: "allowlist", allow: [] })).toEqual(["--no-net"]);
  });

  test("allow-list with duplicates → deduplicated, sorted, DNS first, ports as tcp", () => {
    expect(buildNetworkArgs({ mode: "allowlist", allow: ["b.com:443", "B.com:443", "[::1]", "a.com"] })).toEqual([
      "--no-net",
      "--net-rule=allow@dns",
      "--net-rule=allow@[::1]",
      "--net-rule=allow@a.com",
      "--net-rule=allow@b.com:tcp:443",
    ]);
  });
});

describe("readNetworkPolicy", () => {
  test("real msb 0.6.18 allow-list JSON → the entries the spec asked for", () => {
    const { policy, anomalies } = readNetworkPolicy(allowlistFixture.config.network);
    expect(anomalies).toEqual([]);
    expect(canonicalPolicy(policy)).toBe(
      canonicalPolicy({ mode: "allowlist", allow: ["registry.npmjs.org:443", "*.github.com", "10.0.0.0/8:80-90", "192.0.2.7", "[2001:db8::/32]"] }),
    );
  });

  test("deny/deny without rules → none; allow/allow without rules → all; disabled → none", () => {
    const policy = (e: string, i: string) => ({ enabled: true, policy: { default_egress: e, default_ingress: i, rules: [] } });
    expect(readNetworkPolicy(policy("deny", "deny")).policy).toEqual({ mode: "none" });
    expect(readNetworkPolicy(policy("allow", "allow")).policy).toEqual({ mode: "all" });
    expect(readNetworkPolicy({ enabled: false }).policy).toEqual({ mode: "none" });
  });

  test("keywords → msb's destination groups (metadata is msb's meta), and read back the same", () => {
    const policy = { mode: "allowlist" as const, allow: ["private", "metadata", "loopback", "link-local", "public", "host", "api.example.com"] };
    expect(buildNetworkArgs(policy)).toEqual([
      "--no-net",
      "--net-rule=allow@dns",
      "--net-rule=allow@api.example.com",
      "--net-rule=allow@host",
      "--net-rule=allow@link-local",
      "--net-rule=allow@loopback",
      "--net-rule=allow@meta",
      "--net-rule=allow@private",
      "--net-rule=allow@public",
    ]);
    const rules = [
      { action: "allow", direction: "egress", destination: { group: "host" }, ports: [{ start: 53, end: 53 }], protocols: ["udp", "tcp"] },
      // msb 0.6.18's inspect spells two groups differently from its CLI tokens (measured by real-msb-cli).
      ...["private", "metadata", "loopback", "link_local", "public", "host"].map((group) => ({ action: "allow", direction: "egress", destination: { group }, ports: [], protocols: [] })),
      { action: "allow", direction: "egress", destination: { domain: "api.example.com" }, ports: [], protocols: [] },
    ];
    const read = readNetworkPolicy({ enabled: true, policy: { default_egress: "deny", default_ingress: "deny", rules } });
    expect(read.anomalies).toEqual([]);
    expect(canonicalPolicy(read.policy)).toBe(canonicalPolicy(policy));
  });

  test("msb's default public profile (egress deny + allow@public) → not recognised, read as all", () => {
    const rules = [{ action: "allow", direction: "egress", destination: { group: "public" }, ports: [], protocols: [] }];
    const { policy, anomalies } = readNetworkPolicy({ enabled: true, policy: { default_egress: "deny", default_ingress: "allow", rules } });
    expect(policy).toEqual({ mode: "all" });
    expect(anomalies.length).toBeGreaterThan(0);
  });

  test("missing or mistyped fields → anomalies, no crash", () => {
    for (const value of [undefined, null, 42, "x", {}, { policy: { rules: "nope" } }, { policy: { default_egress: 1, rules: [null, 3, {}] } }]) {
      const { anomalies } = readNetworkPolicy(value);
      expect(anomalies.length).toBeGreaterThan(0);
    }
  });

  test("rule with udp ports or an ingress direction → unknown", () => {
    expect(readRule({ action: "allow", direction: "egress", destination: { domain: "a.com" }, protocols: ["udp"], ports: [{ start: 1, end: 1 }] }).kind).toBe("unknown");
    expect(readRule({ action: "allow", direction: "ingress", destination: { domain: "a.com" }, protocols: [], ports: [] }).kind).toBe("unknown");
  });
});
