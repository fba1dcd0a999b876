// The stand-in msb (a FAKE, see stand-in-msb.ts) against what the REAL msb 0.6.18 printed for the same
// argv (fixtures captured by fixtures/capture-stand-in-0.6.18.ts): stored config, refusals, rules.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { VmSpec } from "../../runtime/driver";
import { buildCreateArgs, buildExecArgs, buildInspectArgs, buildKillTreeArgs, buildListArgs, buildRemoveArgs, buildStopArgs, buildVolumeRemoveArgs } from "../../runtime/msb";
import { buildNetworkArgs } from "../../runtime/msb/network-rules";
import floorFixture from "./fixtures/inspect-allowlist-floor-0.6.18.json";
import storedFixture from "./fixtures/inspect-stored-0.6.18.json";
import repliesFixture from "./fixtures/stand-in-replies-0.6.18.json";
import { sampleSpec } from "./fake-msb-harness";
import { parseCreate, parseExec, parseList, parseNamed } from "./stand-in-args";
import { inspectJson, ruleJson } from "./stand-in-json";
import { makeStandInMsb } from "./stand-in-harness";
import { sh } from "../runtime/exec-capture";

const replies = repliesFixture.replies;
const home = mkdtempSync(join(tmpdir(), "stand-in-msb-argv-"));
afterAll(() => rmSync(home, { recursive: true, force: true }));

/** Runs the stand-in on an argv that fails before any VM is touched (so no rootfs is needed). */
function standIn(args: string[]) {
  const child = Bun.spawnSync([process.execPath, join(import.meta.dir, "stand-in-msb.ts"), ...args], { env: { PATH: process.env.PATH ?? "", MSB_HOME: home } });
  return { exitCode: child.exitCode, stdout: child.stdout.toString(), stderr: child.stderr.toString() };
}

describe("stand-in msb (a fake) vs the real msb 0.6.18", () => {
  test("the argv real msb stored → inspect prints the JSON real msb printed for it, timestamps aside", () => {
    const root = dirname(storedFixture.config.image.Bind.path);
    const args = replies.createBootFails.args.slice(1).map((a) => a.replaceAll("{root}", root).replaceAll("{name}", "capture-vm").replaceAll("{volume}", "capture-vol"));
    const { sandbox, replace } = parseCreate(args);
    expect(replace).toBe(false);
    const printed = inspectJson({ ...sandbox, createdAt: storedFixture.created_at }, "Stopped");
    expect({ ...printed, updated_at: storedFixture.updated_at }).toEqual(storedFixture);
  });

  test("allow-list rules → stored as real msb stored the same tokens (fixtures/inspect-allowlist-floor-0.6.18.json)", () => {
    const allow = ["registry.npmjs.org:443", "*.github.com", "10.0.0.0/8:80-90", "192.0.2.7", "[2001:db8::/32]", "private:5432", "metadata", "public:443", "intranet", "0.0.0.0/0"];
    const tokens = buildNetworkArgs({ mode: "allowlist", allow }).slice(1).map((arg) => arg.slice("--net-rule=".length));
    expect(tokens.map(ruleJson)).toEqual(floorFixture.config.network.policy.rules);
  });

  test("an unknown flag → refused with real msb's text and exit 2", () => {
    expect(standIn(["create", "/rootfs", "--bogus"])).toEqual({ exitCode: 2, stdout: "", stderr: replies.unexpectedCreate.stderr });
    expect(standIn(["exec", "vm", "--bogus", "--", "true"])).toEqual({ exitCode: 2, stdout: "", stderr: replies.unexpectedExec.stderr });
    expect(standIn(["list", "--bogus"])).toEqual({ exitCode: 2, stdout: "", stderr: replies.unexpectedList.stderr });
  });

  test("--cpus=0.5 → refused with real msb's text; a missing sandbox or volume → real msb's not-found texts", () => {
    const rootfs = dirname(storedFixture.config.image.Bind.path);
    const fractional = replies.fractionalCpus.args.map((a) => a.replaceAll("{root}", rootfs).replaceAll("{name}", "capture-missing"));
    expect(standIn(fractional)).toEqual({ exitCode: 2, stdout: "", stderr: replies.fractionalCpus.stderr });
    expect(standIn(buildInspectArgs("capture-missing"))).toEqual({ exitCode: 1, stdout: "", stderr: replies.sandboxNotFound.stderr.replace("{name}", "capture-missing") });
    expect(standIn(buildVolumeRemoveArgs("capture-vol"))).toEqual({ exitCode: 1, stdout: "", stderr: replies.volumeNotFound.stderr.replace("{volume}", "capture-vol") });
  });

  test("every argv the driver builds → accepted by the stand-in's parser, values read back", () => {
    const spec: VmSpec = sampleSpec({ trustDir: "/srv/trust", diskMib: 2048, network: { mode: "all" } });
    expect(parseCreate(buildCreateArgs(spec, { replace: true }).slice(1))).toMatchObject({
      replace: true,
      sandbox: { name: spec.name, image: spec.image, cpus: 2, memoryMib: 1024, tmpSizeMib: 256, volume: spec.volume.name, network: { mode: "all" } },
    });
    expect(parseExec(buildExecArgs(spec.name, { argv: ["sh", "-c", "x"], cwd: "/w", env: { A: "1=2" }, timeoutMs: 1500 }, "id1").slice(1))).toEqual({
      name: spec.name,
      workdir: "/w",
      env: { A: "1=2", SESSION_SANDBOX_EXEC_ID: "id1" },
      timeoutSeconds: 2,
      stream: true,
      argv: ["sh", "-c", "x"],
    });
    expect(parseExec(buildKillTreeArgs(spec.name, "id1").slice(1))).toMatchObject({ timeoutSeconds: 30, stream: false, argv: ["/bin/sh", "-c", expect.any(String), "sh", "SESSION_SANDBOX_EXEC_ID=id1"] });
    expect(parseList(buildListArgs(spec.labels).slice(1))).toEqual({ format: "json", labels: spec.labels });
    expect(parseNamed("stop", buildStopArgs(spec.name).slice(1), [["--timeout=10"]]).name).toBe(spec.name);
    expect(parseNamed("remove", buildRemoveArgs(spec.name).slice(1), [["--force"]]).name).toBe(spec.name);
  });
});

describe("stand-in msb (a fake): network", () => {
  test("allow-list VM → the driver's parser attests msb's stored rules; the guest has no network but loopback", async () => {
    const standInMsb = await makeStandInMsb();
    try {
      const spec: VmSpec = { ...sampleSpec({ name: "stand-in-net", image: standInMsb.rootfs, mounts: [], cpus: 1, memoryMib: 256, tmpSizeMib: 16, volume: { name: "stand-in-net-data" } }), network: { mode: "allowlist", allow: ["registry.npmjs.org:443", "*.github.com"] } };
      await standInMsb.driver.create(spec);
      const info = await standInMsb.driver.inspect(spec.name);
      expect(info?.anomalies).toEqual([]);
      expect(standInMsb.driver.attest(spec, info!)).toEqual({ ok: true });
      expect((await sh(standInMsb.driver, spec.name, "ls /sys/class/net")).stdout).toBe("lo\n");
      await standInMsb.driver.remove(spec.name);
    } finally {
      standInMsb.cleanUp();
    }
  });
});
