// Test wiring for the FAKE msb: a temp dir with an executable `msb` wrapper around fake-msb.ts, a
// scenario to answer from, and the recorded calls. See fake-msb.ts for why a fake is used at all.
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GUEST_SYSTEM_CA_BUNDLE, GUEST_TRUST_DIR, TRUST_BUNDLE_FILE, type VmSpec } from "../../runtime/driver";
import { MsbDriver, type MsbDriverOptions } from "../../runtime/msb";
import type { FakeCall, FakeScenario } from "./fake-msb";

export type FakeMsb = {
  dir: string;
  binary: string;
  setScenario(scenario: FakeScenario): void;
  calls(): FakeCall[];
  driver(options?: MsbDriverOptions): MsbDriver;
  file(name: string): string;
};

const madeDirs: string[] = [];

/** Deletes every fake's temp dir; call from afterAll. */
export function removeFakeMsbs(): void {
  for (const dir of madeDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export function makeFakeMsb(): FakeMsb {
  const dir = mkdtempSync(join(tmpdir(), "fake-msb-"));
  madeDirs.push(dir);
  const binary = join(dir, "msb");
  // The driver gives msb a minimal env, so the wrapper carries the fake's own settings.
  writeFileSync(binary, `#!/bin/sh\nFAKE_MSB_DIR='${dir}' exec '${process.execPath}' '${join(import.meta.dir, "fake-msb.ts")}' "$@"\n`);
  chmodSync(binary, 0o755);
  writeFileSync(join(dir, "scenario.json"), "{}");
  return {
    dir,
    binary,
    setScenario: (scenario) => writeFileSync(join(dir, "scenario.json"), JSON.stringify(scenario)),
    calls: () => {
      const path = join(dir, "calls.jsonl");
      if (!existsSync(path)) return [];
      return readFileSync(path, "utf8").trim().split("\n").filter(Boolean).map((line) => JSON.parse(line) as FakeCall);
    },
    driver: (options = {}) => new MsbDriver({ msbPath: binary, hostEnv: { PATH: process.env.PATH, HOME: process.env.HOME, SECRET_TOKEN: "s3cret" }, ...options }),
    file: (name) => join(dir, name),
  };
}

export function sampleSpec(overrides: Partial<VmSpec> = {}): VmSpec {
  return {
    name: "ocm-session-0123456789ab",
    image: "/srv/rootfs",
    cpus: 2,
    memoryMib: 1024,
    mounts: [{ hostPath: "/work/repo" }, { hostPath: "/work/shared", readOnly: true }],
    tmpSizeMib: 256,
    volume: { name: "ocm-vol-0123456789ab" },
    labels: { "ocm.owner": "session-sandbox", "ocm.session": "ses_abc" },
    network: { mode: "none" },
    ...overrides,
  };
}

/** What `msb inspect --format=json` (0.6.18) prints for a sandbox created from `spec` with network none. */
export function inspectJsonFor(spec: VmSpec, status = "Running"): string {
  const options = (readonly: boolean) => ({ nodev: false, noexec: false, nosuid: false, readonly });
  return JSON.stringify({
    name: spec.name,
    status,
    created_at: "2026-11-30T04:38:49.922129446+00:00",
    pending_changes: [],
    config: {
      name: spec.name,
      image: { Bind: { path: spec.image, follow_root_symlinks: false } },
      resources: { cpus: spec.cpus, memory_mib: spec.memoryMib, max_cpus: spec.cpus, max_memory_mib: spec.memoryMib },
      labels: spec.labels,
      mounts: [
        { type: "Tmpfs", guest: "/tmp", size_mib: spec.tmpSizeMib, options: options(false) },
        { type: "Named", guest: "/home/agent", name: spec.volume.name, options: options(false) },
        ...spec.mounts.map((m) => ({ type: "Bind", host: m.hostPath, guest: m.hostPath, options: options(m.readOnly === true) })),
        ...(spec.trustDir
          ? [
              { type: "Bind", host: spec.trustDir, guest: GUEST_TRUST_DIR, options: options(true) },
              { type: "Bind", host: `${spec.trustDir}/${TRUST_BUNDLE_FILE}`, guest: GUEST_SYSTEM_CA_BUNDLE, options: options(true) },
            ]
          : []),
      ],
      network: { enabled: true, policy: { default_egress: "deny", default_ingress: "deny", rules: [] } },
    },
  });
}

/** A sink that records what the driver forwarded, with an optional hook per chunk. */
export function recordingSink(onChunk?: (stream: "stdout" | "stderr", text: string) => void) {
  const out = { stdout: "", stderr: "" };
  const decoder = new TextDecoder();
  return {
    out,
    sink: {
      stdout: (chunk: Uint8Array) => {
        const text = decoder.decode(chunk);
        out.stdout += text;
        onChunk?.("stdout", text);
      },
      stderr: (chunk: Uint8Array) => {
        const text = decoder.decode(chunk);
        out.stderr += text;
        onChunk?.("stderr", text);
      },
    },
  };
}
