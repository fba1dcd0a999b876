// The gvisor driver's probe: each missing piece reported with its fix, VM calls refused meanwhile, and on
// this host (runsc installed, ptrace allowed) nothing missing after a real sandbox started.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createGvisorDriver } from "../../runtime/gvisor/index";
import { expectRefusedUntilFixed } from "./local-target";

describe("gvisor driver probe", () => {
  const stateDir = mkdtempSync(join(tmpdir(), "ss-gvisor-probe-"));
  afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

  test("runsc missing → listed with its fix; ping false; create → UNAVAILABLE naming it", async () => {
    const driver = createGvisorDriver({ stateDir, runscPath: "runsc-that-does-not-exist" });
    const capability = await driver.probe();
    expect(capability.available).toBe(false);
    const problem = capability.problems.find((p) => p.what === "runsc (gVisor) is not installed");
    expect(problem?.fix).toContain("install-runtime-deps.sh"); // it installs trixie's runsc; bookworm's is too old
    await expectRefusedUntilFixed(driver, "gvisor runtime unavailable: runsc (gVisor) is not installed");
  });

  test("this host → available after a real sandbox started; the version names runsc and its platform; nothing left", async () => {
    const driver = createGvisorDriver({ stateDir });
    const capability = await driver.probe();
    expect(capability.problems).toEqual([]);
    expect(capability.version).toMatch(/^gvisor \(runsc \S+, ptrace platform, cgroup /);
    expect(await driver.ping()).toBe(true);
    expect(readdirSync(join(stateDir, "runsc-probe"))).toEqual([]);
  });
});
