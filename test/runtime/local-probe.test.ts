// The local driver's probe: each missing piece reported with its fix, and VM calls refused meanwhile.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLocalDriver } from "../../runtime/local/index";
import { expectRefusedUntilFixed } from "./local-target";

describe("local driver probe", () => {
  const stateDir = mkdtempSync(join(tmpdir(), "ss-probe-"));
  afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

  test("crun, tini and rootfs missing → each listed with its fix command; create → UNAVAILABLE", async () => {
    const driver = createLocalDriver({
      stateDir,
      rootfsDir: join(stateDir, "no-rootfs"),
      crunPath: "crun-that-does-not-exist",
      tiniPath: join(stateDir, "no-tini"),
    });
    const capability = await driver.probe();
    expect(capability.available).toBe(false);
    const byWhat = Object.fromEntries(capability.problems.map((p) => [p.what, p.fix]));
    expect(byWhat["crun is not installed"]).toContain("install-runtime-deps.sh");
    expect(Object.entries(byWhat).find(([what]) => what.startsWith("tini-static missing"))?.[1]).toContain("install-runtime-deps.sh");
    expect(Object.entries(byWhat).find(([what]) => what.startsWith("root filesystem not built"))?.[1]).toContain("build-rootfs.sh");
    await expectRefusedUntilFixed(driver, "crun is not installed");
  });

  test("a probe handed over from another thread (the manager's, in an actor's init) → the first VM call uses it instead of probing; after its refusal the driver probes for itself", async () => {
    const handed = { available: false, version: "local (handed over)", problems: [{ what: "handed-over problem", fix: "none" }] };
    // The handed-over findings are refused exactly as the driver's own would be (this host has no such problem).
    const driver = createLocalDriver({ stateDir, probed: handed });
    expect(await driver.cleanUpIncomplete!().catch((e) => e)).toMatchObject({ code: "UNAVAILABLE", message: expect.stringContaining("handed-over problem") });
    // Fail closed only once: the next call probes this host, which lacks nothing.
    expect(await driver.cleanUpIncomplete!()).toEqual([]);
  });

  test("nothing missing on this host → available, version names crun and the cgroup layout", async () => {
    const driver = createLocalDriver({ stateDir });
    const capability = await driver.probe();
    expect(capability.problems).toEqual([]);
    expect(capability.version).toMatch(/^local \(crun \d+\.\d+(\.\d+)?, cgroup /);
    expect(capability.version).toEndWith(", commands by the in-VM exec agent");
    const off = await createLocalDriver({ stateDir, execAgent: false }).probe();
    expect(off.version).toEndWith(", commands by crun exec (SANDBOX_EXEC_AGENT=off)");
  });
});
