// Network policy mapping: the shared allow-list grammar as msb flags per mode, and msb's rule JSON read back.
import { describe, expect, test } from "bun:test";
import { InvalidSpecError } from "../../runtime/msb";
import { buildNetworkArgs, canonicalPolicy, readNetworkPolicy, readRuleToken } from "../../runtime/msb/network-rules";
import floorFixture from "./fixtures/inspect-allowlist-floor-0.6.18.json";
import oldLayoutFixture from "./fixtures/inspect-allowlist-0.6.18.json";

const allowlist = (...allow: string[]) => ({ mode: "allowlist" as const, allow });
const rules = (policy: ReturnType<typeof allowlist>) => buildNetworkArgs(policy).slice(1).map((a) => a.replace(/^--net-rule=/, ""));

describe("allow-list entries", () => {
  test("entries → one canonical spelling (lower case, /32 dropped, ports normalised, IPv6 compressed in brackets)", () => {
    expect(canonicalPolicy(allowlist("Example.COM", "*.GitHub.com", "registry.npmjs.org:443", "10.0.0.0/8:80-90", "192.0.2.7/32", "[2001:DB8:0::/32]", "2001:db8::1", "a.b:22-22"))).toBe(
      "allowlist *.github.com 10.0.0.0/8:80-90 192.0.2.7 [2001:db8::/32] [2001:db8::1] a.b:22 example.com registry.npmjs.org:443",
    );
  });

  // The shared grammar's refusals, and the entries msb cannot enforce as the proxy does.
  const invalid = ["", "*.com", "a.com,b.com", "a b.com", "x@y.com", "10.1.2.3/8", "10.0.0.0/33", "a.com:0", "a.com:70000", "a.com:90-80", "[::1", "300.1.1.1", "-a.com", "localhost", "*.localhost", "loopback", "host:22", "host.sandbox.internal:4873"];
  for (const entry of invalid) {
    test(`"${entry}" → InvalidSpecError`, () => {
      expect(() => buildNetworkArgs(allowlist(entry))).toThrow(InvalidSpecError);
    });
  }

  test("host bits → the error names the network to write", () => {
    expect(() => buildNetworkArgs(allowlist("10.0.0.1/8"))).toThrow(/write 10\.0\.0\.0\/8/);
  });
});

describe("buildNetworkArgs", () => {
  test("none → --no-net (deny both directions)", () => {
    expect(buildNetworkArgs({ mode: "none" })).toEqual(["--no-net"]);
  });

  test("all → --net=all", () => {
    expect(buildNetworkArgs({ mode: "all" })).toEqual(["--net=all"]);
  });

  test("empty allow-list → same as none", () => {
    expect(buildNetworkArgs(allowlist())).toEqual(["--no-net"]);
  });

  test("layout: DNS, gateway closed, metadata floor, entries inside closed ranges, gateway again, the rest of the floor, then the rest", () => {
    const tokens = rules(allowlist("b.com:443", "B.com:443", "10.1.0.0/16", "8.8.8.8", "intranet", "public:443"));
    expect(tokens.slice(0, 2)).toEqual(["allow@dns", "deny@host"]);
    expect(tokens[2]).toBe("deny@169.254.169.254");
    const boundary = tokens.indexOf("deny@host", 2);
    expect(tokens[boundary - 1]).toBe("allow@10.1.0.0/16");
    expect(tokens.slice(boundary + 1)).toContain("deny@10.0.0.0/8");
    expect(tokens.slice(boundary + 1)).toContain("deny@[64:ff9b::a00:0/104]");
    expect(tokens.slice(boundary + 1)).toContain("deny@[2002:a00::/24]");
    expect(tokens.slice(-4)).toEqual(["allow@8.8.8.8", "allow@b.com:tcp:443", "allow@domain=intranet", "allow@public:tcp:443"]);
  });

  test("a keyword opens its ranges just before their deny, on its ports; metadata keeps its own floor", () => {
    const tokens = rules(allowlist("private:5432", "link-local"));
    const deny = tokens.indexOf("deny@10.0.0.0/8");
    expect(tokens[deny - 1]).toBe("allow@10.0.0.0/8:tcp:5432");
    expect(tokens[tokens.indexOf("deny@169.254.0.0/16") - 1]).toBe("allow@169.254.0.0/16");
    expect(tokens.indexOf("deny@169.254.169.254")).toBeLessThan(tokens.indexOf("allow@169.254.0.0/16"));
    expect(tokens).not.toContain("allow@private");
  });
});

describe("readNetworkPolicy", () => {
  test("real msb 0.6.18 JSON of this layout → the entries the spec asked for", () => {
    const { policy, anomalies } = readNetworkPolicy(floorFixture.config.network);
    expect(anomalies).toEqual([]);
    expect(canonicalPolicy(policy)).toBe(
      canonicalPolicy(allowlist("registry.npmjs.org:443", "*.github.com", "10.0.0.0/8:80-90", "192.0.2.7", "[2001:db8::/32]", "private:5432", "metadata", "public:443", "intranet", "0.0.0.0/0")),
    );
  });

  test("real msb JSON of the earlier layout (no floor) → not recognised, read as all", () => {
    const { policy, anomalies } = readNetworkPolicy(oldLayoutFixture.config.network);
    expect(policy).toEqual({ mode: "all" });
    expect(anomalies.length).toBeGreaterThan(0);
  });

  test("one rule dropped from the real JSON → an anomaly, never a narrower reading", () => {
    const network = structuredClone(floorFixture.config.network);
    network.policy.rules.splice(5, 1);
    expect(readNetworkPolicy(network)).toMatchObject({ policy: { mode: "all" } });
  });

  test("deny/deny without rules → none; allow/allow without rules → all; disabled → none", () => {
    const policy = (e: string, i: string) => ({ enabled: true, policy: { default_egress: e, default_ingress: i, rules: [] } });
    expect(readNetworkPolicy(policy("deny", "deny")).policy).toEqual({ mode: "none" });
    expect(readNetworkPolicy(policy("allow", "allow")).policy).toEqual({ mode: "all" });
    expect(readNetworkPolicy({ enabled: false }).policy).toEqual({ mode: "none" });
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
    expect(readRuleToken({ action: "allow", direction: "egress", destination: { domain: "a.com" }, protocols: ["udp"], ports: [{ start: 1, end: 1 }] })).toBeUndefined();
    expect(readRuleToken({ action: "allow", direction: "ingress", destination: { domain: "a.com" }, protocols: [], ports: [] })).toBeUndefined();
  });
});
