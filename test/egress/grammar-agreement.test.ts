// Property: an allow entry is accepted or refused identically by the API, the proxy's compile
// and the msb rule builder; every token the builder writes passes the REAL msb parser; and for accepted
// policies the proxy's decision matches what the msb rules mean (a model of msb's matcher: msb-rule-model.ts).
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { TIERS } from "../../runtime/tiers/index";
import { checkNetworkPolicy } from "../../app/services/network-policy";
import { formatAllowEntry, NETWORK_KEYWORDS, parseAllowEntry } from "../../egress/allow-entry";
import { CLOSED_RANGES } from "../../egress/address-ranges";
import { formatIp, parseIp } from "../../egress/ip-address";
import { checkAddress, checkName, compilePolicy, type Policy } from "../../egress/policy";
import type { NetworkPolicy } from "../../egress/network-policy";
import { buildNetworkArgs, msbEntryProblem } from "../../runtime/msb/network-rules";
import { msbAllows } from "./msb-rule-model";
import { realMsb } from "../runtime-msb/real-msb";

const SEED = 15;
const allowlist = (...allow: string[]): NetworkPolicy => ({
  mode: "allowlist",
  allow,
});
const accepts = (f: () => unknown) => {
  try {
    f();
    return true;
  } catch {
    return false;
  }
};

// ---- generated entries: valid and near-valid ----
const ports = fc.constantFrom("", "", "", ":0", ":1", ":22", ":443", ":65535", ":65536", ":0443", ":80-90", ":90-80", ":22-22", ":1-65535", ":", ":x", ":80-");
const label = fc.oneof(
  fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,6}[a-z0-9])?$/),
  fc.constantFrom("xn--bcher-kva", "bücher", "a_b", "-a", "a-", "*", "a*", "", "EXAMPLE", "Sub", "localhost", "sandbox", "internal"),
);
const domain = fc
  .tuple(fc.constantFrom("", "", "*.", "**.", "*", ".", "a.*."), fc.array(label, { minLength: 1, maxLength: 4 }), fc.constantFrom("", "", "."))
  .map(([wild, labels, dot]) => `${wild}${labels.join(".")}${dot}`);
const octet = fc.oneof(fc.integer({ min: 0, max: 255 }).map(String), fc.constantFrom("256", "300", "010", "00"));
const closed = fc.constantFrom(...CLOSED_RANGES);
/** Inside a closed range, at its network address (valid) or with host bits (refused), any prefix. */
const aroundClosed = fc.tuple(closed, fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }), fc.integer({ min: -4, max: 8 }), fc.boolean()).map(([range, noise, delta, aligned]) => {
  const bits = range.cidr.family === 4 ? 32 : 128;
  const prefix = Math.max(0, Math.min(bits, range.cidr.prefix + delta));
  const hostMask = (1n << BigInt(bits - prefix)) - 1n;
  const value = aligned ? range.cidr.value & ~hostMask : (range.cidr.value & ~hostMask) | (noise & hostMask);
  const text = `${formatIp({ family: range.cidr.family, value })}/${prefix}`;
  return range.cidr.family === 6 ? text : text;
});
const ipv4 = fc.tuple(fc.array(octet, { minLength: 4, maxLength: 4 }), fc.constantFrom("", "", "/0", "/8", "/24", "/32", "/33", "/-1", "/")).map(([o, p]) => `${o.join(".")}${p}`);
const ipv6Text = fc.oneof(
  fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }).map((value) => formatIp({ family: 6, value })),
  fc.constantFrom(
    "::1",
    "::",
    "2001:db8::1",
    "2001:DB8::/32",
    "fe80::1%eth0",
    "::ffff:10.0.0.0/104",
    "::ffff:10.0.0.1",
    "64:ff9b::a9fe:a9fe",
    "2002:a00::/24",
    "1:2:3:4:5:6:7:8:9",
    "2001:db8:::1",
    "[::1",
  ),
);
const ipv6 = fc
  .tuple(ipv6Text, fc.constantFrom("", "/32", "/128", "/129", "/64"), fc.boolean())
  .map(([address, prefix, bracket]) => (bracket ? `[${address}${prefix}]` : `${address}${prefix}`));
const keyword = fc.constantFrom(...NETWORK_KEYWORDS, "PUBLIC", "Private", "link_local", "meta", "host.sandbox.internal", "localhost", "*.localhost", "metadata.google.internal");
const junk = fc.oneof(fc.constantFrom("", " ", "a b.com", "https://x.com", "x@y.com", "a,b.com", "*", "ünïcødé.com", " 10.0.0.0/8 ", "\t"), fc.string({ maxLength: 12 }));
const entry = fc.oneof(
  fc.tuple(keyword, ports).map(([k, p]) => `${k}${p}`),
  fc.tuple(domain, ports).map(([d, p]) => `${d}${p}`),
  fc.tuple(fc.oneof(ipv4, aroundClosed), ports).map(([a, p]) => (a.includes(":") ? `[${a}]${p}` : `${a}${p}`)),
  fc.tuple(ipv6, ports).map(([a, p]) => `${a}${p}`),
  junk,
);

describe("one grammar: API, proxy, msb builder", () => {
  test("generated entries → the API (local, msb), the proxy's compile and the msb builder accept or refuse alike", () => {
    const counts = {
      entries: 0,
      accepted: 0,
      refusedByGrammar: 0,
      refusedForMsbOnly: 0,
    };
    fc.assert(
      fc.property(entry, (text) => {
        const policy = allowlist(text);
        const grammar = parseAllowEntry(text).ok;
        const apiLocal = accepts(() => checkNetworkPolicy(policy, TIERS.container));
        const proxy = accepts(() => compilePolicy(policy));
        const apiMsb = accepts(() => checkNetworkPolicy(policy, TIERS.microvm));
        const builder = accepts(() => buildNetworkArgs(policy));
        expect({ text, apiLocal, proxy }).toEqual({
          text,
          apiLocal: grammar,
          proxy: grammar,
        });
        expect({ text, apiMsb }).toEqual({ text, apiMsb: builder });
        counts.entries++;
        if (!grammar) counts.refusedByGrammar++;
        else if (!apiMsb) {
          counts.refusedForMsbOnly++;
          // The same reason on both sides: the API names the entry, the back end and the fix.
          const parsed = parseAllowEntry(text);
          const problem = parsed.ok ? msbEntryProblem(parsed.value) : null;
          expect(problem).not.toBeNull();
          expect(() => checkNetworkPolicy(policy, TIERS.microvm)).toThrow(problem!);
          expect(() => buildNetworkArgs(policy)).toThrow(problem!);
        } else {
          counts.accepted++;
          const canonical = formatAllowEntry(
            (
              parseAllowEntry(text) as {
                ok: true;
                value: Parameters<typeof formatAllowEntry>[0];
              }
            ).value,
          );
          const again = parseAllowEntry(canonical);
          expect(again.ok && formatAllowEntry(again.value)).toBe(canonical);
        }
      }),
      { seed: SEED, numRuns: 4000 },
    );
    console.log(`grammar agreement: ${JSON.stringify(counts)}`);
    expect(counts.accepted).toBeGreaterThan(400);
    expect(counts.refusedByGrammar).toBeGreaterThan(400);
    expect(counts.refusedForMsbOnly).toBeGreaterThan(20);
  });
});

// ---- the real msb parser ----
// Where microVMs cannot boot, the real binary with /dev/kvm masked (real-msb.ts): the same parser and the
// same name left taken, but a boot that fails at once instead of keeping the host's kernel busy for seconds.
const real = await realMsb();
const binary = real.path;
const msbHome = mkdtempSync(join(tmpdir(), "msb-grammar-home-"));
const rootfs = mkdtempSync(join(tmpdir(), "msb-grammar-rootfs-"));
const env = {
  PATH: process.env.PATH ?? "",
  HOME: process.env.HOME ?? "",
  MSB_HOME: msbHome,
  NO_COLOR: "1",
};
const msb = (args: string[]) => {
  const child = Bun.spawnSync([binary ?? "msb", ...args], {
    env,
    stdin: "ignore",
  });
  return { exitCode: child.exitCode, stderr: child.stderr.toString() };
};
const GHOST = "grammar-ghost";
/** msb #1550: a create whose boot fails leaves its name taken, so a later create parses all its flags and then says so. */
const parsedAll = (stderr: string) => stderr.includes(`sandbox '${GHOST}' already exists`);
const ghostSkip = !binary ? " — skipped: no msb binary" : real.bootWorks ? " — skipped: VMs boot here, so there is no failed create to park a name on" : "";

afterAll(() => {
  if (binary) msb(["rm", GHOST]);
  for (const dir of [msbHome, rootfs]) rmSync(dir, { recursive: true, force: true });
  real.cleanUp();
});

describe("the real msb parser", () => {
  test.skipIf(ghostSkip !== "")(
    `every token the builder writes for generated entries → accepted by the real msb ${ghostSkip}`,
    () => {
      msb(["create", rootfs, `--name=${GHOST}`, "--no-net", "--quiet"]); // boot fails here; the name stays taken
      expect(parsedAll(msb(["create", rootfs, `--name=${GHOST}`, "--no-net", "--quiet"]).stderr)).toBe(true);
      // Teeth: a token msb refuses fails before the name check.
      expect(parsedAll(msb(["create", rootfs, `--name=${GHOST}`, "--no-net", "--net-rule=allow@example.com:tcp:65536", "--quiet"]).stderr)).toBe(false);
      const accepted = fc.sample(entry, { seed: SEED, numRuns: 3000 }).filter((text) => accepts(() => buildNetworkArgs(allowlist(text))));
      const rules = [...new Set(accepted.flatMap((text) => buildNetworkArgs(allowlist(text)).slice(1)))];
      const refused: string[] = [];
      for (let i = 0; i < rules.length; i += 200) {
        const batch = rules.slice(i, i + 200);
        if (parsedAll(msb(["create", rootfs, `--name=${GHOST}`, "--no-net", ...batch, "--quiet"]).stderr)) continue;
        refused.push(...batch.filter((rule) => !parsedAll(msb(["create", rootfs, `--name=${GHOST}`, "--no-net", rule, "--quiet"]).stderr)));
      }
      console.log(`real msb parser: ${accepted.length} accepted entries, ${rules.length} distinct --net-rule flags, ${refused.length} refused`);
      expect(refused).toEqual([]);
      expect(accepted.length).toBeGreaterThan(300);
    },
    120_000,
  );
});

// ---- decisions: the proxy against the msb rules ----
const msbEntry = fc.oneof(
  fc.tuple(fc.constantFrom("public", "private", "link-local", "metadata"), fc.constantFrom("", "", ":443", ":80-90", ":5432")).map(([k, p]) => `${k}${p}`),
  fc.tuple(fc.constantFrom("a.example", "*.x.example", "*.b.example", "intranet", "metadata.google.internal"), fc.constantFrom("", ":443", ":80-90")).map(([d, p]) => `${d}${p}`),
  fc
    .tuple(
      fc.constantFrom("10.0.0.0/8", "10.1.0.0/16", "169.254.0.0/16", "0.0.0.0/0", "8.8.8.8", "192.0.2.7", "[fc00::/7]", "[::/0]", "[2002::/16]", "169.254.169.254", "100.0.0.0/8"),
      fc.constantFrom("", ":443"),
    )
    .map(([a, p]) => `${a}${p}`),
);
/** An address anywhere interesting: inside each closed range, its NAT64/6to4/mapped spellings, or public. */
const address = fc
  .oneof(
    fc.tuple(closed, fc.bigInt({ min: 0n, max: (1n << 128n) - 1n })).map(([range, noise]) => {
      const bits = range.cidr.family === 4 ? 32 : 128;
      return {
        family: range.cidr.family,
        value: range.cidr.value | (noise & ((1n << BigInt(bits - range.cidr.prefix)) - 1n)),
      };
    }),
    fc.constantFrom("8.8.8.8", "93.184.216.34", "2606:4700::1111", "11.1.1.1").map((text) => parseIp(text)!),
  )
  .chain((ip) => {
    const text = formatIp(ip);
    if (ip.family === 6) return fc.constant(text);
    const hex = `${(ip.value >> 16n).toString(16)}:${(ip.value & 0xffffn).toString(16)}`;
    return fc.constantFrom(text, text, `::ffff:${text}`, `64:ff9b::${hex}`, `2002:${hex}::1`);
  });
const names = ["a.example", "example", "x.example", "deep.x.b.example", "b.example", "badexample", "intranet", "other.test", "metadata.google.internal"];

describe("decisions agree", () => {
  test("accepted policies × generated targets → the proxy allows exactly what the msb rules allow (IP literals; names once past the proxy's name stage)", () => {
    const counts: Counts = { literal: 0, named: 0, nameStageOnly: 0, allowed: 0 };
    fc.assert(
      agreement(counts, (tokens) => tokens),
      { seed: SEED, numRuns: 6000 },
    );
    console.log(`decision agreement: ${JSON.stringify(counts)}`);
    expect(counts.literal).toBeGreaterThan(1000);
    expect(counts.named).toBeGreaterThan(300);
    expect(counts.allowed).toBeGreaterThan(300);
  });

  test("the check has teeth: msb's own groups instead of the floor (the earlier builder) → a disagreement found", () => {
    const counts: Counts = { literal: 0, named: 0, nameStageOnly: 0, allowed: 0 };
    const groupsOnly = (tokens: string[]) =>
      tokens
        .filter((t) => !t.startsWith("deny@"))
        .map((t) =>
          t.replace(
            /^allow@(10\.0\.0\.0\/8|169\.254\.0\.0\/16|169\.254\.169\.254)(:|$)/,
            (_m, cidr: string, end: string) =>
              `allow@${({ "10.0.0.0/8": "private", "169.254.0.0/16": "link-local", "169.254.169.254": "meta" } as Record<string, string>)[cidr]}${end}`,
          ),
        );
    expect(fc.check(agreement(counts, groupsOnly), { seed: SEED, numRuns: 6000 }).failed).toBe(true);
  });
});

type Counts = { literal: number; named: number; nameStageOnly: number; allowed: number };

/** The decision property; `rewrite` lets the teeth test swap in a weaker rule list. */
function agreement(counts: Counts, rewrite: (tokens: string[]) => string[]) {
  return fc.property(
    fc.array(msbEntry, { minLength: 1, maxLength: 4 }),
    address,
    fc.constantFrom(22, 80, 85, 443, 5432, 8443),
    fc.option(fc.constantFrom(...names), { nil: undefined }),
    (allow, addressText, port, name) => {
      const policy: Policy = { mode: "allowlist", allow };
      const tokens = rewrite(
        buildNetworkArgs(policy)
          .slice(1)
          .map((a) => a.replace(/^--net-rule=/, "")),
      );
      const compiled = compilePolicy(policy);
      const canonical = formatIp(parseIp(addressText)!);
      const target = { host: name ?? canonical, port };
      const msbAllowed = msbAllows(tokens, { address: addressText, port, resolvedName: name });
      const stage = checkName(compiled, target);
      if (stage.kind === "denied") {
        // The proxy refuses unlisted names before any DNS query (a query can carry data out); msb
        // answers DNS and judges the address. So here the proxy may only be the stricter one.
        if (msbAllowed) counts.nameStageOnly++;
        return;
      }
      const proxyAllowed = checkAddress(compiled, target, stage.nameRule, addressText).allowed;
      expect({ allow, target, addressText, proxyAllowed }).toEqual({ allow, target, addressText, proxyAllowed: msbAllowed });
      if (name === undefined) counts.literal++;
      else counts.named++;
      if (proxyAllowed) counts.allowed++;
    },
  );
}
