// Parsing `msb inspect` / `msb list` JSON: real 0.6.18 output, plus shapes it does not promise.
import { describe, expect, test } from "bun:test";
import { parseInspect, parseList } from "../../runtime/msb";
import allFixture from "./fixtures/inspect-all-0.6.18.json";
import oldAllowlistFixture from "./fixtures/inspect-allowlist-0.6.18.json";
import floorFixture from "./fixtures/inspect-allowlist-floor-0.6.18.json";
import noneFixture from "./fixtures/inspect-none-0.6.18.json";
import listFixture from "./fixtures/list-0.6.18.json";

// Two real outputs put together: the sandbox's record, with the network rules today's builder writes
// (the record was captured before the builder wrote the proxy's closed ranges as deny rules).
const allowlistFixture = { ...oldAllowlistFixture, config: { ...oldAllowlistFixture.config, network: floorFixture.config.network } };

describe("parseInspect", () => {
  test("real 0.6.18 output of a driver-built sandbox → the spec it was created from", () => {
    const info = parseInspect(allowlistFixture, "ocm-session-0123456789ab");
    expect(info.anomalies).toEqual([]);
    expect(info.status).toBe("stopped");
    expect(info.createdAt).toBe(Date.parse("2026-11-30T04:52:41.288Z"));
    expect(info.spec).toMatchObject({
      name: "ocm-session-0123456789ab",
      image: "/tmp/msbtry/rootfs",
      cpus: 2,
      memoryMib: 1024,
      mounts: [{ hostPath: "/tmp/msbtry/repo" }, { hostPath: "/tmp/msbtry/ro", readOnly: true }],
      tmpSizeMib: 256,
      volume: { name: "ocm-vol-0123456789ab" },
      labels: { "ocm.owner": "session-sandbox", "ocm.session": "ses_abc" },
    });
  });

  test("real 0.6.18 output with --no-net / --net=all → network none / all", () => {
    expect(parseInspect(noneFixture, "t2").spec.network).toEqual({ mode: "none" });
    expect(parseInspect(allFixture, "t8").spec.network).toEqual({ mode: "all" });
  });

  test("running statuses → running; stopped ones → stopped; unknown → stopped plus an anomaly", () => {
    const status = (s: unknown) => parseInspect({ ...allowlistFixture, status: s }, "ocm-session-0123456789ab");
    expect(["Running", "Draining", "Starting", "Paused"].map((s) => status(s).status)).toEqual(["running", "running", "running", "running"]);
    expect(["Stopped", "Crashed", "Created"].map((s) => status(s).status)).toEqual(["stopped", "stopped", "stopped"]);
    expect(status("Hibernating").anomalies).toEqual(['status not recognised: "Hibernating"']);
  });

  test("extra unknown fields everywhere → ignored", () => {
    const noisy = { ...allowlistFixture, future: { x: 1 }, config: { ...allowlistFixture.config, gpu: true, resources: { ...allowlistFixture.config.resources, numa: 2 } } };
    expect(parseInspect(noisy, "ocm-session-0123456789ab").anomalies).toEqual([]);
  });

  test("garbage of any shape → a VmInfo with anomalies, never a throw", () => {
    for (const value of [null, 42, "x", [], {}, { config: 5 }, { config: { mounts: [1, null, { type: "Bind" }], image: { Nix: {} }, labels: { a: 1 } } }]) {
      const info = parseInspect(value, "box");
      expect(info.name).toBe("box");
      expect(info.anomalies.length).toBeGreaterThan(0);
    }
  });

  test("a bind mount at a different guest path, a noexec flag, an OCI image, pending changes → reported", () => {
    const config = {
      image: { Oci: { reference: "alpine:3.20" } },
      resources: { cpus: 1, memory_mib: 512 },
      mounts: [{ type: "Bind", host: "/a", guest: "/b", options: { noexec: true } }],
      network: { enabled: false },
    };
    const info = parseInspect({ name: "box", status: "Running", config, pending_changes: ["cpus"] }, "box");
    expect(info.spec.image).toBe("alpine:3.20");
    expect(info.anomalies).toEqual([
      "config has 1 pending change(s) not applied to the running VM",
      "mount /b has noexec set",
      "mount /a appears at /b, not at the identical path",
    ]);
  });
  test("trust mounts: a read-only directory and its bundle over the system store → trustDir; anything else → an anomaly, never reused", () => {
    const mount = (host: string, guest: string, readonly = true) => ({ type: "Bind", host, guest, options: { readonly } });
    const config = (mounts: unknown[]) => ({ ...allowlistFixture.config, mounts: [...allowlistFixture.config.mounts, ...mounts] });
    const read = (mounts: unknown[]) => parseInspect({ ...allowlistFixture, config: config(mounts) }, "ocm-session-0123456789ab");
    const both = read([mount("/t", "/run/session-sandbox"), mount("/t/ca-certificates.crt", "/etc/ssl/certs/ca-certificates.crt")]);
    expect(both.anomalies).toEqual([]);
    expect(both.spec.trustDir).toBe("/t");
    for (const odd of [
      [mount("/t", "/run/session-sandbox")],
      [mount("/t/ca-certificates.crt", "/etc/ssl/certs/ca-certificates.crt")],
      [mount("/t", "/run/session-sandbox"), mount("/u/ca-certificates.crt", "/etc/ssl/certs/ca-certificates.crt")],
      [mount("/t", "/run/session-sandbox", false), mount("/t/ca-certificates.crt", "/etc/ssl/certs/ca-certificates.crt")],
    ]) {
      const info = read(odd);
      expect(info.spec.trustDir).toBeUndefined();
      expect(info.anomalies).toEqual([expect.stringMatching(/^trust mounts are not one read-only directory/)]);
    }
  });
});

describe("parseList", () => {
  test("real 0.6.18 list output → names and statuses", () => {
    const { entries, anomalies } = parseList(listFixture);
    expect(anomalies).toEqual([]);
    expect(entries.map((e) => e.name)).toContain("ocm-session-0123456789ab");
  });

  test("non-array or nameless entries → anomalies, the rest kept", () => {
    expect(parseList({ items: [] })).toEqual({ entries: [], anomalies: ["list output is not a JSON array"] });
    const { entries, anomalies } = parseList([{ name: "a", status: "Running" }, { status: "Stopped" }, "b"]);
    expect(entries).toEqual([{ name: "a", status: "running" }]);
    expect(anomalies).toHaveLength(2);
  });
});
