// A VM whose writes stay in its memory (VmSpec.scratchWrites, what an image build runs in): on the gVisor
// tier the guest writes its root, its mounts and its volume, reads its writes back, and the host's files
// stay as they were; after a restart the writes are gone. The container tier refuses it with the fix. So with
// a command as another guest user (a build's USER): gVisor runs it, the container tier refuses it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { VmSpec } from "../../runtime/driver";
import { makeTempDir } from "../helpers";
import { sh } from "./exec-capture";
import { expectNoGvisorLeaksAndCleanUp, makeGvisorFixture } from "./gvisor-target";
import { expectNoLeaksAndCleanUp, makeLocalFixture, type LocalFixture } from "./local-target";

const spec = (fixture: LocalFixture, name: string, mounts: VmSpec["mounts"]): VmSpec => ({
  name, image: fixture.image, cpus: 1, memoryMib: 256, mounts, tmpSizeMib: 16, volume: { name: `${name}-data` }, labels: {}, network: { mode: "none" }, scratchWrites: true,
});

describe("scratch writes (gVisor)", () => {
  let fixture: LocalFixture;
  let context: string;
  beforeAll(async () => {
    fixture = await makeGvisorFixture();
    context = makeTempDir("ss-scratch-ctx-");
    writeFileSync(join(context, "kept.txt"), "host\n");
  }, 600_000);
  afterAll(async () => {
    for (const vm of await fixture.driver.list({})) await fixture.driver.remove(vm.name);
    rmSync(context, { recursive: true, force: true });
    expectNoGvisorLeaksAndCleanUp(fixture);
  }, 120_000);

  test("the guest writes /etc, /usr, a read-only mount and its home, and reads them back → the host's image, mount and volume are unchanged; a restart forgets them", async () => {
    const name = `scratch-${process.pid}`;
    const imageBefore = readdirSync(join(fixture.image, "etc")).sort();
    await fixture.driver.create(spec(fixture, name, [{ hostPath: context, readOnly: true }]));
    const script = [
      "echo guest > /etc/scratch-probe",
      "echo guest > /usr/scratch-probe",
      `echo guest > ${context}/kept.txt && echo guest > ${context}/new.txt`,
      "echo guest > $HOME/scratch-probe",
      `cat /etc/scratch-probe /usr/scratch-probe ${context}/kept.txt ${context}/new.txt $HOME/scratch-probe`,
    ].join(" && ");
    expect(await sh(fixture.driver, name, script)).toMatchObject({ exitCode: 0, stdout: "guest\n".repeat(5) });
    expect(readdirSync(join(fixture.image, "etc")).sort()).toEqual(imageBefore);
    expect(existsSync(join(fixture.image, "usr/scratch-probe"))).toBe(false);
    expect(readFileSync(join(context, "kept.txt"), "utf8")).toBe("host\n");
    expect(readdirSync(context)).toEqual(["kept.txt"]);
    await fixture.driver.stop(name);
    await fixture.driver.start(name);
    expect((await sh(fixture.driver, name, "cat /etc/scratch-probe $HOME/scratch-probe 2>/dev/null; echo end")).stdout).toBe("end\n");
    const sink = { stdout: () => {}, stderr: () => {} };
    await expect(fixture.driver.exec(name, { argv: ["true"], cwd: "/", user: { uid: 65536, gid: 0 } }, sink)).rejects.toThrow(/guest user 65536:0 is outside the VM's ids \(0–65535\)/);
    await fixture.driver.remove(name);
  }, 180_000);
});

describe("scratch writes (container tier)", () => {
  let fixture: LocalFixture;
  beforeAll(async () => {
    fixture = await makeLocalFixture();
  }, 600_000);
  afterAll(() => expectNoLeaksAndCleanUp(fixture));

  test("asked for → refused with the reason and the fix, nothing created", async () => {
    await expect(fixture.driver.create(spec(fixture, `scratch-local-${process.pid}`, []))).rejects.toThrow(/container tier cannot keep .* use the gVisor tier \(isolation: gvisor\)/);
    expect(await fixture.driver.list({})).toEqual([]);
  }, 60_000);

  test("a docker VM asked of the container tier itself (past the app's refusal) → refused with the reason and the fix, nothing created", async () => {
    const docker = { ...spec(fixture, `docker-local-${process.pid}`, []), scratchWrites: false, docker: true };
    await expect(fixture.driver.create(docker)).rejects.toThrow(/asks for a Docker Engine, .* the container tier refuses on the host's kernel: use the gVisor tier \(isolation: gvisor\)/);
    expect(await fixture.driver.list({})).toEqual([]);
  }, 60_000);

  test("a command as another guest user → refused with the reason (builds run on gVisor), nothing run", async () => {
    const name = `user-local-${process.pid}`;
    await fixture.driver.create({ ...spec(fixture, name, []), scratchWrites: false });
    const sink = { stdout: () => {}, stderr: () => {} };
    await expect(fixture.driver.exec(name, { argv: ["touch", "/tmp/ran"], cwd: "/", user: { uid: 1000, gid: 1000 } }, sink)).rejects.toThrow(/another guest user runs only on the gVisor tier/);
    expect((await sh(fixture.driver, name, "ls /tmp/ran 2>/dev/null; echo end")).stdout).toBe("end\n");
    await fixture.driver.remove(name);
  }, 60_000);
});
