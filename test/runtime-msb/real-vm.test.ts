// A real microVM through the msb driver: create, exec (output, exit code, /tmp and background
// processes persisting, timeout killing the tree), stop, start, remove. Runs only where the msb probe
// says VMs can boot; otherwise every test is skipped and its name carries the probe's reasons.
// test-kind: vm
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { VmSpec } from "../../runtime/driver";
import { MsbDriver } from "../../runtime/msb";
import { recordingSink } from "./fake-msb-harness";

const home = mkdtempSync(join(tmpdir(), "msb-vm-home-"));
const repo = mkdtempSync(join(tmpdir(), "msb-vm-repo-"));
const driver = new MsbDriver({ msbHome: home });
const capability = await driver.probe();
// An OCI reference needs a registry; MSB_TEST_IMAGE may name a local rootfs directory instead.
const image = process.env.MSB_TEST_IMAGE ?? "alpine:3.20";
const why = capability.available ? "" : ` — skipped: ${capability.problems.map((p) => p.what).join("; ")}`;
if (why) console.log(`real-vm suite skipped:${why.slice(" — skipped:".length)}`);

const spec: VmSpec = {
  name: "ocm-session-realvm0001",
  image,
  cpus: 1,
  memoryMib: 512,
  mounts: [{ hostPath: repo }],
  tmpSizeMib: 64,
  volume: { name: "ocm-vol-realvm0001" },
  labels: { "ocm.owner": "session-sandbox-test" },
  network: { mode: "none" },
};

async function sh(script: string, timeoutMs?: number) {
  const { sink, out } = recordingSink();
  const result = await driver.exec(spec.name, { argv: ["sh", "-c", script], cwd: repo, timeoutMs }, sink);
  return { ...result, ...out };
}

afterAll(async () => {
  if (capability.available) await driver.remove(spec.name);
  rmSync(home, { recursive: true, force: true });
  rmSync(repo, { recursive: true, force: true });
});

describe("real VM (msb)", () => {
  test.skipIf(!capability.available)(`real VM: create → running, attested${why}`, async () => {
    const result = await driver.ensure(spec);
    expect(result.action).toBe("created");
    expect(result.info.status).toBe("running");
  }, 300_000);

  test.skipIf(!capability.available)(`real VM: exec → output streamed, guest exit code returned${why}`, async () => {
    const result = await sh("echo out; echo err >&2; exit 7");
    expect(result).toMatchObject({ exitCode: 7, stdout: "out\n", stderr: "err\n", timedOut: false });
  }, 60_000);

  test.skipIf(!capability.available)(`real VM: /tmp file and background process → persist between execs${why}`, async () => {
    // Background output goes to /dev/null so it does not hold the exec's pipes open; the [0] keeps
    // pgrep from matching the sh -c line that runs it.
    await sh("echo kept > /tmp/kept; (sleep 600 >/dev/null 2>&1 &); true");
    const result = await sh("cat /tmp/kept; pgrep -f 'sleep 6[0]0' >/dev/null && echo alive");
    expect(result.stdout).toBe("kept\nalive\n");
  }, 60_000);

  test.skipIf(!capability.available)(`real VM: timeout → the whole process tree is killed${why}`, async () => {
    const result = await sh("(setsid sleep 900 >/dev/null 2>&1 &); sleep 900", 1500);
    expect(result).toMatchObject({ exitCode: 137, timedOut: true });
    expect((await sh("pgrep -f 'sleep 9[0]0' || echo none")).stdout).toBe("none\n");
  }, 90_000);

  test.skipIf(!capability.available)(`real VM: stop → start → volume file kept, /tmp cleared${why}`, async () => {
    await sh("echo data > /home/agent/kept");
    await driver.stop(spec.name);
    expect((await driver.inspect(spec.name))?.status).toBe("stopped");
    await driver.start(spec.name);
    expect((await sh("cat /home/agent/kept; ls /tmp/kept 2>/dev/null || echo gone")).stdout).toBe("data\ngone\n");
  }, 300_000);

  test.skipIf(!capability.available)(`real VM: remove → gone, and removing again is fine${why}`, async () => {
    await driver.remove(spec.name);
    expect(await driver.inspect(spec.name)).toBeUndefined();
    await driver.remove(spec.name);
  }, 120_000);
});
