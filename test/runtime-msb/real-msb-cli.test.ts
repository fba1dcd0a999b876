// The driver against the REAL msb binary (the pinned npm package), in a private MSB_HOME: every built
// argv goes through msb's own parser, and every command that needs no booted VM runs for real.
// Skipped, with the reason in the test names, when no msb binary is installed.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RuntimeError, type VmSpec } from "../../runtime/driver";
import {
  attest,
  buildCreateArgs,
  buildDoctorArgs,
  buildExecArgs,
  buildInspectArgs,
  buildKillTreeArgs,
  buildListArgs,
  buildPingArgs,
  buildRemoveArgs,
  buildStartArgs,
  buildStopArgs,
  buildVolumeRemoveArgs,
  MSB_PINNED_VERSION,
  MsbDriver,
  type MsbTraceEvent,
} from "../../runtime/msb";
import { sampleSpec } from "./fake-msb-harness";
import { realMsb } from "./real-msb";

const home = mkdtempSync(join(tmpdir(), "msb-home-"));
const rootfs = mkdtempSync(join(tmpdir(), "msb-rootfs-"));
const repo = mkdtempSync(join(tmpdir(), "msb-repo-"));
const trustDir = mkdtempSync(join(tmpdir(), "msb-trust-"));
writeFileSync(join(trustDir, "ca-certificates.crt"), "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n");
const trace: MsbTraceEvent[] = [];
// Where no microVM boots, boots fail at once instead of keeping the kernel busy (real-msb.ts).
const real = await realMsb();
const driver = new MsbDriver({ msbHome: home, trace: (event) => trace.push(event), ...(real.path ? { msbPath: real.path } : {}) });
const binary = driver.binary?.path;
const env = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", MSB_HOME: home, MSB_BACKEND: "local", NO_COLOR: "1" };

function msb(args: string[]) {
  const child = Bun.spawnSync([binary ?? "msb", ...args], { env, stdin: "ignore" });
  return { exitCode: child.exitCode, stdout: child.stdout.toString(), stderr: child.stderr.toString() };
}

const present = binary !== undefined && msb(["--version"]).exitCode === 0;
const capability = present ? await driver.probe() : undefined;
const bootWorks = capability?.available === true;
const skipped = present ? "" : " — skipped: no msb binary (run `bun install` for the microsandbox devDependency, or set MSB_PATH)";
const bootSkipped = bootWorks ? " — skipped: VMs boot on this host, so no failed create leaves a ghost" : "";

function spec(suffix: string, overrides: Partial<VmSpec> = {}): VmSpec {
  return sampleSpec({
    name: `ocm-session-test-${suffix}`,
    image: rootfs,
    cpus: 1,
    memoryMib: 256,
    mounts: [{ hostPath: repo }, { hostPath: rootfs, readOnly: true }],
    tmpSizeMib: 64,
    volume: { name: `ocm-vol-test-${suffix}` },
    labels: { "ocm.owner": "session-sandbox-test", "ocm.session": suffix },
    ...overrides,
  });
}

/** Creates through the driver; where VMs cannot boot the config is still stored (its volume pre-existed). */
async function createRecorded(vm: VmSpec): Promise<void> {
  // Setup only: a volume that exists before create makes msb keep the record when boot fails.
  expect(msb(["volume", "create", vm.volume.name, "--quiet"]).exitCode).toBe(0);
  const result = await driver.create(vm).catch((error: unknown) => error);
  if (result instanceof RuntimeError) expect(result.code).toBe("UNAVAILABLE");
  else expect(bootWorks).toBe(true);
}

afterAll(async () => {
  if (present) for (const info of await driver.list({ "ocm.owner": "session-sandbox-test" })) await driver.remove(info.name);
  for (const dir of [home, rootfs, repo, trustDir]) rmSync(dir, { recursive: true, force: true });
  real.cleanUp();
});

describe("real msb binary", () => {
  test.skipIf(!present)(`real msb: --version → the pinned ${MSB_PINNED_VERSION}${skipped}`, () => {
    expect(msb(["--version"]).stdout.trim()).toBe(`msb ${MSB_PINNED_VERSION}`);
  });

  test.skipIf(!present)(`real msb parser: every built argv, with --help before the guest command, is accepted${skipped}`, () => {
    const vm = spec("parse");
    const vectors = [
      buildCreateArgs(vm),
      buildCreateArgs(spec("parse", { network: { mode: "all" } }), { replace: true }),
      buildCreateArgs(spec("parse", { trustDir })),
      buildCreateArgs(spec("parse", { network: { mode: "allowlist", allow: ["a.example.com:443", "*.example.org", "10.0.0.0/8:80-90", "[2001:db8::/32]"] } })),
      buildExecArgs(vm.name, { argv: ["sh", "-c", "echo hi"], cwd: repo, env: { A: "1" }, timeoutMs: 1500 }, "abc123"),
      buildKillTreeArgs(vm.name, "abc123"),
      buildStartArgs(vm.name),
      buildStopArgs(vm.name),
      buildStopArgs(vm.name, { force: true }),
      buildRemoveArgs(vm.name),
      buildVolumeRemoveArgs(vm.volume.name),
      buildListArgs(vm.labels),
      buildInspectArgs(vm.name),
      buildPingArgs(),
      buildDoctorArgs(),
    ];
    for (const argv of vectors) {
      const end = argv.includes("--") ? argv.indexOf("--") : argv.length;
      const out = msb([...argv.slice(0, end), "--help", ...argv.slice(end)]);
      expect({ argv, exitCode: out.exitCode, stderr: out.stderr }).toEqual({ argv, exitCode: 0, stderr: "" });
      expect(out.stdout).toContain(`Usage: msb ${argv[0] === "volume" ? "volume remove" : argv[0]}`);
    }
    // The check has teeth: msb's parser refuses an unknown flag the same way.
    expect(msb(["create", "--bogus", "--help"]).exitCode).toBe(2);
  });

  test.skipIf(!present)(`real msb: exec and kill-tree argv against a missing sandbox → values parsed, NOT_FOUND${skipped}`, async () => {
    // msb parses env, timeout and workdir before it looks the sandbox up, so reaching "not found" proves them.
    const error = await driver.exec("ocm-session-missing", { argv: ["true"], cwd: "/", env: { A: "x=y" }, timeoutMs: 2500 }, { stdout() {}, stderr() {} }).catch((e) => e);
    expect(error).toMatchObject({ name: "RuntimeError", code: "NOT_FOUND" });
    expect(msb(buildKillTreeArgs("ocm-session-missing", "abc123")).stderr.trim()).toBe("error: sandbox not found: ocm-session-missing");
  });

  test.skipIf(!present)(`real msb: stop and remove of a missing sandbox → done; start → NOT_FOUND; inspect → undefined${skipped}`, async () => {
    await driver.stop("ocm-session-missing");
    await driver.remove("ocm-session-missing");
    expect(await driver.inspect("ocm-session-missing")).toBeUndefined();
    expect(await driver.start("ocm-session-missing").catch((e) => e)).toMatchObject({ code: "NOT_FOUND" });
    expect(await driver.ping()).toBe(true);
  });

  test.skipIf(!present)(`real msb: create (allow-list) → inspect → attest matches the spec; list finds it by label${skipped}`, async () => {
    const vm = spec("allow", { network: { mode: "allowlist", allow: ["registry.npmjs.org:443", "*.github.com", "192.0.2.7"] } });
    await createRecorded(vm);
    const info = await driver.inspect(vm.name);
    expect(info?.anomalies).toEqual([]);
    expect(attest(vm, info!)).toEqual({ ok: true });
    expect(attest({ ...vm, cpus: 2 }, info!)).toEqual({ ok: false, mismatches: ["cpus: expected 2, found 1"] });
    expect((await driver.list({ "ocm.session": "allow" })).map((i) => i.name)).toEqual([vm.name]);
    expect(await driver.list({ "ocm.session": "nobody" })).toEqual([]);
  }, 120_000);

  test.skipIf(!present)(`real msb: create with keywords (private, metadata, link-local, public, on ports too) → attest matches${skipped}`, async () => {
    const vm = spec("groups", { network: { mode: "allowlist", allow: ["private:5432", "metadata", "link-local", "public:443", "api.example.com:443", "10.0.0.0/8:80-90", "0.0.0.0/0"] } });
    await createRecorded(vm);
    const info = await driver.inspect(vm.name);
    expect(info?.anomalies).toEqual([]);
    expect(attest(vm, info!)).toEqual({ ok: true });
  }, 120_000);

  test.skipIf(!present)(`real msb: create with a trust directory → msb stores both mounts; attest matches, another directory does not${skipped}`, async () => {
    const vm = spec("ca", { trustDir });
    await createRecorded(vm);
    const info = await driver.inspect(vm.name);
    expect(info?.anomalies).toEqual([]);
    expect(info?.spec.trustDir).toBe(trustDir);
    expect(attest(vm, info!)).toEqual({ ok: true });
    expect(attest({ ...vm, trustDir: "/elsewhere/rotated" }, info!)).toEqual({ ok: false, mismatches: [`trustDir: expected "/elsewhere/rotated", found ${JSON.stringify(trustDir)}`] });
  }, 120_000);

  test.skipIf(!present)(`real msb: create with network all → attest matches${skipped}`, async () => {
    const vm = spec("net-all", { network: { mode: "all" } });
    await createRecorded(vm);
    expect(attest(vm, (await driver.inspect(vm.name))!)).toEqual({ ok: true });
  }, 120_000);

  test.skipIf(!present)(`real msb: create (network none) → attests; stop → done; remove → sandbox and volume gone; again → done${skipped}`, async () => {
    const vm = spec("remove", { network: { mode: "none" } });
    await createRecorded(vm);
    expect(attest(vm, (await driver.inspect(vm.name))!)).toEqual({ ok: true });
    await driver.stop(vm.name);
    await driver.remove(vm.name);
    expect(await driver.inspect(vm.name)).toBeUndefined();
    expect(msb(["volume", "list", "--quiet"]).stdout.split("\n")).not.toContain(vm.volume.name);
    await driver.remove(vm.name);
  }, 120_000);

  test.skipIf(!present || bootWorks)(`real msb: a failed create's ghost ("already exists", not listed) → retried once with --replace${skipped}${bootSkipped}`, async () => {
    // With a volume msb creates itself, a boot failure rolls the record back but leaves the name
    // taken (msb #1550): the next create says "already exists" while list does not show it.
    const vm = spec("ghost");
    expect(await driver.create(vm).catch((e) => e)).toMatchObject({ code: "UNAVAILABLE" });
    expect(msb(buildCreateArgs(vm)).stderr).toContain("sandbox already exists");
    trace.length = 0;
    const error = await driver.create(vm).catch((e) => e);
    expect(error).toMatchObject({ code: "UNAVAILABLE" });
    expect(trace.filter((e) => e.args[0] === "create").map((e) => e.args.at(-1))).toEqual(["--quiet", "--replace"]);
  }, 180_000);

  test.skipIf(!present)(`real msb: probe → version ${MSB_PINNED_VERSION}, available exactly when no problem is listed${skipped}`, async () => {
    const probed = await driver.probe();
    expect(probed.version).toBe(`msb ${MSB_PINNED_VERSION}`);
    expect(probed.available).toBe(probed.problems.length === 0);
    if (!probed.available) console.log(`msb probe on this host: ${probed.problems.map((p) => p.what).join("; ")}`);
  });
});
