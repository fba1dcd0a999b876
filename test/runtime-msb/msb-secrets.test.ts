// Secrets the msb way (`--secret ENV@HOSTS`, the value only in the env of msb calls that may boot the VM):
// the argv, the env handed to a FAKE msb (no microVM boots here), and the REAL msb 0.6.18's parser,
// stored config and its refusal to start without the value.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { attest, buildCreateArgs, InvalidSpecError, MsbDriver, parseInspect } from "../../runtime/msb";
import { microvmSecretsOf } from "../../runtime/driver";
import { buildSecretArgs, readSecrets, secretEnvOf } from "../../runtime/msb/secret-args";
import secretsFixture from "./fixtures/inspect-secrets-0.6.18.json";
import { inspectJsonFor, makeFakeMsb, removeFakeMsbs, sampleSpec } from "./fake-msb-harness";
import { realMsb } from "./real-msb";

const VALUE = "value-that-must-stay-on-the-host-0123";
const secrets = [
  { env: "SANDBOX_SECRET_B", hosts: ["api.example.com:443", "*.example.org"], value: VALUE },
  { env: "SANDBOX_SECRET_A", hosts: ["github.com"], value: "other-value-0123456789" },
];

describe("secret args", () => {
  test("secrets → one sorted --secret=ENV@HOSTS each, ports dropped (msb matches names), never a value", () => {
    const args = buildCreateArgs(sampleSpec({ tierPart: { kind: "microvm", secrets } }));
    expect(args.filter((a) => a.startsWith("--secret"))).toEqual(["--secret=SANDBOX_SECRET_A@github.com", "--secret=SANDBOX_SECRET_B@*.example.org,api.example.com"]);
    expect(args.join(" ")).not.toContain(VALUE);
    expect(secretEnvOf(sampleSpec({ tierPart: { kind: "microvm", secrets } }))).toEqual({ SANDBOX_SECRET_A: "other-value-0123456789", SANDBOX_SECRET_B: VALUE });
  });

  test("a bad env name, a twice-listed secret, a host msb refuses → InvalidSpecError", () => {
    for (const bad of [[{ env: "lower", hosts: ["a.com"], value: "x" }], [secrets[0]!, secrets[0]!], [{ env: "S", hosts: ["a.com,b.com"], value: "x" }], [{ env: "S", hosts: [], value: "x" }]]) {
      expect(() => buildSecretArgs(sampleSpec({ tierPart: { kind: "microvm", secrets: bad } }))).toThrow(InvalidSpecError);
    }
  });

  test("real msb 0.6.18 inspect JSON → names and hosts read back (no value stored); attest compares them", () => {
    expect(readSecrets(secretsFixture.config.network)).toEqual([
      { env: "SANDBOX_SECRET_A", hosts: ["api.example.com", "*.example.org"], value: "" },
      { env: "GIT_X", hosts: ["github.com"], value: "" },
    ]);
    // The fixture's network rules were written by hand, not in the builder's layout: only secrets are compared.
    const info = { ...parseInspect(secretsFixture, "sec1"), anomalies: [] };
    const spec = { ...info.spec, tierPart: { kind: "microvm" as const, secrets: [{ env: "GIT_X", hosts: ["github.com"], value: "v" }, { env: "SANDBOX_SECRET_A", hosts: ["*.example.org", "api.example.com:443"], value: "w" }] } };
    expect(attest(spec, info)).toEqual({ ok: true });
    expect(attest({ ...spec, tierPart: { kind: "microvm", secrets: [] } }, info)).toMatchObject({ ok: false, mismatches: [expect.stringContaining("secrets:")] });
  });
});

afterAll(removeFakeMsbs);

describe("fake msb: the value reaches msb's env only, on every call that may boot", () => {
  test("create, start and exec of a VM with secrets → each call's env has the values; argv never; another VM → none", async () => {
    const fake = makeFakeMsb();
    const spec = sampleSpec({ tierPart: { kind: "microvm", secrets } });
    const other = sampleSpec({ name: "ocm-session-other0000000" });
    fake.setScenario({ create: [{}], start: [{}], exec: [{ stdout: "ok" }], inspect: [{ stdout: inspectJsonFor(spec) }, { stdout: inspectJsonFor(other) }] });
    const driver = fake.driver();
    await driver.create(spec);
    await driver.start(spec.name);
    await driver.exec(spec.name, { argv: ["true"], cwd: "/", env: {}, timeoutMs: 5000 }, { stdout() {}, stderr() {} });
    await driver.create(other);
    const calls = fake.calls();
    for (const key of ["create", "start", "exec"]) {
      const call = calls.find((c) => c.key === key);
      expect(call?.env).toMatchObject({ SANDBOX_SECRET_A: "other-value-0123456789", SANDBOX_SECRET_B: VALUE });
      expect(call?.args.join(" ")).not.toContain(VALUE);
    }
    expect(calls.at(-2)?.key).toBe("create");
    expect(Object.keys(calls.filter((c) => c.key === "create")[1]!.env).filter((k) => k.startsWith("SANDBOX_SECRET_"))).toEqual([]);
  });
});

// ---- the real msb ----
// Where no microVM boots, boots fail at once instead of keeping the kernel busy (real-msb.ts).
const real = await realMsb();
const binary = real.path;
const bootWorks = real.bootWorks;
const skip = !binary ? " — skipped: no msb binary" : bootWorks ? " — skipped: VMs boot here, so start would not stop at the boot failure" : "";
const home = mkdtempSync(join(tmpdir(), "msb-secrets-home-"));
const rootfs = mkdtempSync(join(tmpdir(), "msb-secrets-rootfs-"));
afterAll(async () => {
  if (binary) await new MsbDriver({ msbHome: home, msbPath: binary }).remove("ocm-session-secrets01").catch(() => undefined);
  for (const dir of [home, rootfs]) rmSync(dir, { recursive: true, force: true });
  real.cleanUp();
});

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).map((f) => join(dir, f)).filter((p) => statSync(p).isFile());
}

describe("real msb", () => {
  test.skipIf(skip !== "")(`create with --secret → config holds the names and hosts, no value anywhere in MSB_HOME; start needs the value in its env${skip}`, async () => {
    const spec = sampleSpec({ name: "ocm-session-secrets01", image: rootfs, mounts: [], volume: { name: "ocm-vol-secrets01" }, network: { mode: "allowlist", allow: ["api.example.com:443"] }, tierPart: { kind: "microvm", secrets } });
    const env = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", MSB_HOME: home, NO_COLOR: "1" };
    // Setup only: a volume that exists before create makes msb keep the record when the boot fails here.
    expect(Bun.spawnSync([binary!, "volume", "create", spec.volume.name, "--quiet"], { env }).exitCode).toBe(0);
    const driver = new MsbDriver({ msbHome: home, msbPath: binary! });
    expect(await driver.create(spec).catch((e) => e)).toMatchObject({ code: "UNAVAILABLE" });
    const info = await driver.inspect(spec.name);
    expect(microvmSecretsOf(info!.spec).map((s) => s.env)).toEqual(["SANDBOX_SECRET_A", "SANDBOX_SECRET_B"]);
    expect(attest(spec, info!)).toEqual({ ok: true });
    for (const file of filesUnder(home)) expect(readFileSync(file).includes(VALUE)).toBe(false);
    // msb checks the env before it boots: a driver that was never given the spec cannot start it.
    const stranger = await new MsbDriver({ msbHome: home, msbPath: binary! }).start(spec.name).catch((e) => e);
    expect(String(stranger?.message)).toContain("host environment variable SANDBOX_SECRET_A is not set");
    const own = await driver.start(spec.name).catch((e) => e);
    expect(String(own?.message)).not.toContain("is not set");
  }, 120_000);
});
