// attest(expected, actual): which differences force a recreate, and which are tolerated.
import { describe, expect, test } from "bun:test";
import type { VmInfo, VmSpec } from "../../runtime/driver";
import { attest } from "../../runtime/msb";
import { sampleSpec } from "./fake-msb-harness";

function info(spec: VmSpec, anomalies: string[] = []): VmInfo & { anomalies: string[] } {
  return { name: spec.name, status: "running", spec, createdAt: 0, anomalies };
}

describe("attest", () => {
  test("identical spec → ok", () => {
    expect(attest(sampleSpec(), info(sampleSpec()))).toEqual({ ok: true });
  });

  test("mount order, allow-list order and spelling → still ok", () => {
    const expected = sampleSpec({ network: { mode: "allowlist", allow: ["a.com", "B.com:443"] } });
    const actual = sampleSpec({ mounts: [...expected.mounts].reverse(), network: { mode: "allowlist", allow: ["b.com:443", "a.com"] } });
    expect(attest(expected, info(actual))).toEqual({ ok: true });
  });

  test("extra labels (msb merges an OCI image's labels) → still ok", () => {
    const actual = sampleSpec({ labels: { ...sampleSpec().labels, "org.opencontainers.image.title": "alpine" } });
    expect(attest(sampleSpec(), info(actual))).toEqual({ ok: true });
  });

  test("empty allow-list against none → ok (same policy)", () => {
    expect(attest(sampleSpec({ network: { mode: "allowlist", allow: [] } }), info(sampleSpec()))).toEqual({ ok: true });
  });

  test("every field differing → one mismatch each", () => {
    const actual: VmSpec = {
      name: "ocm-session-0123456789ab",
      image: "/srv/other",
      cpus: 1,
      memoryMib: 512,
      mounts: [{ hostPath: "/work/repo", readOnly: true }, { hostPath: "/etc" }],
      tmpSizeMib: 64,
      volume: { name: "other-vol" },
      labels: { "ocm.owner": "someone-else" },
      network: { mode: "all" },
    };
    const verdict = attest(sampleSpec(), info(actual));
    expect(verdict).toEqual({
      ok: false,
      mismatches: [
        'image: expected "/srv/rootfs", found "/srv/other"',
        "cpus: expected 2, found 1",
        "memoryMib: expected 1024, found 512",
        "tmpSizeMib: expected 256, found 64",
        'volume: expected "ocm-vol-0123456789ab", found "other-vol"',
        "mount missing: /work/repo (rw)",
        "mount missing: /work/shared (ro)",
        "unexpected mount: /work/repo (ro)",
        "unexpected mount: /etc (rw)",
        'label ocm.owner: expected "session-sandbox", found "someone-else"',
        'label ocm.session: expected "ses_abc", found null',
        'network: expected "none", found "all"',
      ],
    });
  });

  test("another trust directory (a rotated CA) or none → mismatch, so the sandbox is recreated", () => {
    const expected = sampleSpec({ trustDir: "/ca-bundles/new" });
    expect(attest(expected, info(sampleSpec({ trustDir: "/ca-bundles/old" })))).toEqual({ ok: false, mismatches: ['trustDir: expected "/ca-bundles/new", found "/ca-bundles/old"'] });
    expect(attest(expected, info(sampleSpec()))).toEqual({ ok: false, mismatches: ['trustDir: expected "/ca-bundles/new", found undefined'] });
    expect(attest(expected, info(expected))).toEqual({ ok: true });
  });

  test("output the parser could not read → mismatch, never reused", () => {
    expect(attest(sampleSpec(), info(sampleSpec(), ["mount not recognised: 1"]))).toEqual({ ok: false, mismatches: ["unreadable: mount not recognised: 1"] });
  });

  test("another VM's name → mismatch", () => {
    const verdict = attest(sampleSpec(), { ...info(sampleSpec()), name: "ocm-session-ffffffffffff" });
    expect(verdict.ok).toBe(false);
  });
});
