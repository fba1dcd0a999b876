// buildCreateArgs: the exact `msb create` argv for a VmSpec, and the values it refuses to put on a command line.
import { describe, expect, test } from "bun:test";
import { buildCreateArgs, InvalidSpecError, parseInspect } from "../../runtime/msb";
import noneFixture from "./fixtures/inspect-none-0.6.18.json";
import { inspectJsonFor, sampleSpec } from "./fake-msb-harness";

describe("buildCreateArgs", () => {
  test("full spec → image, name, resources, identical-path mounts, tmpfs, volume, sorted labels, no network", () => {
    const spec = sampleSpec({ labels: { b: "2", a: "x=y" } });
    expect(buildCreateArgs(spec)).toEqual([
      "create",
      "/srv/rootfs",
      "--name=ocm-session-0123456789ab",
      "--cpus=2",
      "--memory=1024M",
      "--mount-dir=/work/repo:/work/repo",
      "--mount-dir=/work/shared:/work/shared:ro",
      "--tmpfs=/tmp:256M",
      "--mount-named=ocm-vol-0123456789ab:/home/agent",
      "--label=a=x=y",
      "--label=b=2",
      "--no-net",
      "--quiet",
    ]);
  });

  test("diskMib → recorded as a label (msb 0.6.18 does not enforce it) that inspect reads back as diskMib", () => {
    const args = buildCreateArgs(sampleSpec({ diskMib: 2048 }));
    expect(args).toContain("--label=session-sandbox.disk-mib=2048");
    const inspected = structuredClone(noneFixture) as { name: string; config: { labels: Record<string, string> } };
    inspected.config.labels["session-sandbox.disk-mib"] = "2048";
    const { spec, anomalies } = parseInspect(inspected, inspected.name);
    expect(spec.diskMib).toBe(2048);
    expect(spec.labels).not.toHaveProperty("session-sandbox.disk-mib");
    expect(anomalies.filter((a) => a.includes("disk"))).toEqual([]);
  });

  test("trustDir → read-only at /run/session-sandbox, its bundle read-only over the system store; inspect reads it back", () => {
    const spec = sampleSpec({ trustDir: "/var/lib/ss/ca-bundles/0123abcd" });
    const args = buildCreateArgs(spec);
    const trust = ["--mount-dir=/var/lib/ss/ca-bundles/0123abcd:/run/session-sandbox:ro", "--mount-file=/var/lib/ss/ca-bundles/0123abcd/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro"];
    expect(args.slice(args.indexOf("--mount-dir=/work/shared:/work/shared:ro") + 1, args.indexOf("--tmpfs=/tmp:256M"))).toEqual(trust);
    const info = parseInspect(JSON.parse(inspectJsonFor(spec)), spec.name);
    expect(info.anomalies).toEqual([]);
    expect(info.spec.trustDir).toBe(spec.trustDir);
    expect(info.spec.mounts).toEqual(spec.mounts);
  });

  test("a guarded repository → mounted from its repository view at the identical guest path; inspect reads the guest path back, with no anomaly", () => {
    const base = sampleSpec();
    const repo = { hostPath: "/work/repo", guard: { keep: [] } };
    const spec = { ...base, mounts: [repo] };
    const view = "/var/lib/session-sandbox/msb/repo-views/ocm-session-0123456789ab/0";
    expect(buildCreateArgs(spec, { sources: new Map([[repo, view]]) })).toContain(`--mount-dir=${view}:/work/repo`);
    const json = JSON.parse(inspectJsonFor(spec));
    json.config.mounts = json.config.mounts.map((m: { host?: string }) => (m.host === "/work/repo" ? { ...m, host: view } : m));
    const info = parseInspect(json, spec.name);
    expect(info.anomalies).toEqual([]);
    expect(info.spec.mounts).toEqual([{ hostPath: "/work/repo" }]);
  });

  test("replace option → --replace appended", () => {
    expect(buildCreateArgs(sampleSpec(), { replace: true }).at(-1)).toBe("--replace");
  });

  test("network all → --net=all instead of --no-net", () => {
    const args = buildCreateArgs(sampleSpec({ network: { mode: "all" } }));
    expect(args).toContain("--net=all");
    expect(args).not.toContain("--no-net");
  });

  test("network allowlist → deny-all, DNS, the proxy's closed ranges denied, then one sorted rule per entry", () => {
    const args = buildCreateArgs(sampleSpec({ network: { mode: "allowlist", allow: ["registry.npmjs.org:443", "*.GitHub.com"] } }));
    const net = args.filter((a) => a.startsWith("--n"));
    expect(net.slice(0, 4)).toEqual(["--name=ocm-session-0123456789ab", "--no-net", "--net-rule=allow@dns", "--net-rule=deny@host"]);
    expect(net).toContain("--net-rule=deny@10.0.0.0/8");
    expect(net.slice(-2)).toEqual(["--net-rule=allow@*.github.com", "--net-rule=allow@registry.npmjs.org:tcp:443"]);
  });

  test("same spec twice → same argv (pure)", () => {
    expect(buildCreateArgs(sampleSpec())).toEqual(buildCreateArgs(sampleSpec()));
  });

  const refusals: [string, Parameters<typeof sampleSpec>[0]][] = [
    ["name with a slash", { name: "a/b" }],
    ["name starting with a dash", { name: "-rf" }],
    ["name over 63 characters", { name: "a".repeat(64) }],
    ["image starting with a dash", { image: "--privileged" }],
    ["image with a space", { image: "a b" }],
    ["zero cpus", { cpus: 0 }],
    ["fractional memory", { memoryMib: 1.5 }],
    ["zero tmpfs", { tmpSizeMib: 0 }],
    ["relative mount path", { mounts: [{ hostPath: "work/repo" }] }],
    ["mount path with a colon", { mounts: [{ hostPath: "/work/a:b" }] }],
    ["mount path with a comma", { mounts: [{ hostPath: "/work/a,ro" }] }],
    ["mount path not normalised", { mounts: [{ hostPath: "/work/../etc" }] }],
    ["mount path with a trailing slash", { mounts: [{ hostPath: "/work/repo/" }] }],
    ["mount at /tmp", { mounts: [{ hostPath: "/tmp" }] }],
    ["mount at /home/agent", { mounts: [{ hostPath: "/home/agent" }] }],
    ["a session mount at the system store", { mounts: [{ hostPath: "/etc/ssl/certs/ca-certificates.crt", kind: "file" }] }],
    ["a session mount at the trust directory", { mounts: [{ hostPath: "/run/session-sandbox" }] }],
    ["a trust directory with a colon", { trustDir: "/var/a:b" }],
    ["a relative trust directory", { trustDir: "ca-bundles/x" }],
    ["the same mount twice", { mounts: [{ hostPath: "/work/repo" }, { hostPath: "/work/repo", readOnly: true }] }],
    ["volume name with a slash", { volume: { name: "../v" } }],
    ["label key with a space", { labels: { "a b": "c" } }],
    ["label value with a newline", { labels: { a: "b\nc" } }],
    ["allow entry with a comma", { network: { mode: "allowlist", allow: ["a.com,b.com"] } }],
  ];
  for (const [what, overrides] of refusals) {
    test(`${what} → InvalidSpecError`, () => {
      expect(() => buildCreateArgs(sampleSpec(overrides))).toThrow(InvalidSpecError);
    });
  }
});
