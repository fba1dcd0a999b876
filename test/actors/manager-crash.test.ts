// Crash recovery: SIGKILL the real manager process during boots and during removals, restart it; after
// startup recovery and one sweep, no VM, volume, uid slot or cgroup is left over.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createLocalDriver } from "../../runtime/local/index";
import type { SandboxClient } from "../../sdk/index";
import { makeTempDir } from "../helpers";
import type { ManagerProcess } from "../manager-process";
import { expectNoLeaksAndCleanUp, heldUidRanges, prepareLocalRuntime } from "../runtime/local-target";
import { eventually, makeRepoUnder, startLocalManager } from "./fixture";

let image: string;
let dataDir: string;
let repos: string;
const cgroupParent = `ss-crash-${randomBytes(3).toString("hex")}`;
const running: ManagerProcess[] = [];

beforeAll(async () => {
  image = await prepareLocalRuntime();
  dataDir = makeTempDir("ss-crash-");
  repos = makeTempDir("ss-crash-repos-");
}, 600_000);

afterAll(async () => {
  for (const manager of running) if (manager.proc.exitCode === null) await manager.stop();
  const stateDir = join(`${dataDir}-runtime`, "local");
  const driver = createLocalDriver({ stateDir, rootfsDir: image, cgroupParent });
  for (const vm of await driver.list({})) await driver.remove(vm.name);
  rmSync(repos, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(`${dataDir}-runtime`, { recursive: true, force: true });
}, 120_000);

async function start(): Promise<{ manager: ManagerProcess; client: SandboxClient }> {
  const started = await startLocalManager(dataDir, image, cgroupParent);
  running.push(started.manager);
  return started;
}

const repo = (name: string) => makeRepoUnder(repos, name);

const vmDirs = () => {
  const dir = join(`${dataDir}-runtime`, "local", "vms");
  return existsSync(dir) ? readdirSync(dir) : [];
};

/** After recovery and one sweep: nothing in the runtime's state, volumes, host-wide uid ranges or cgroups. */
async function expectNothingLeft(client: SandboxClient): Promise<void> {
  await client.vms.sweep({ idleForMs: 0 });
  const stateDir = join(`${dataDir}-runtime`, "local");
  const driver = createLocalDriver({ stateDir, rootfsDir: image, cgroupParent });
  expect(await driver.list({})).toEqual([]);
  const listed = (sub: string) => (existsSync(join(stateDir, sub)) ? readdirSync(join(stateDir, sub)) : []);
  expect({ vms: listed("vms"), volumes: listed("volumes"), uidRanges: heldUidRanges(stateDir) }).toEqual({ vms: [], volumes: [], uidRanges: [] });
  // Also removes the (empty) parent cgroups; fails on any VM cgroup left.
  const copy = makeTempDir("ss-crash-check-");
  expectNoLeaksAndCleanUp({ driver: createLocalDriver({ stateDir: copy, rootfsDir: image, cgroupParent }), image, stateDir: copy, cgroupParent });
}

describe("manager crash", () => {
  test("SIGKILL during boots → restart, recovery and one sweep leave nothing", async () => {
    const { manager, client } = await start();
    await client.settings.patch({ maxRunningVms: 10 });
    const ids = Array.from({ length: 6 }, (_, i) => `ses_boot_${i}`);
    for (const id of ids) await client.sessions.register({ id, directory: repo(id) });
    const commands = ids.map((id) => client.run(id, { command: "sleep 5", cwd: join(repos, id) }).catch(() => undefined));
    await eventually(() => vmDirs().length >= 2, 30_000); // some VMs exist, others are mid-boot
    await manager.kill9();
    await Promise.all(commands);

    const restarted = await start();
    await expectNothingLeft(restarted.client);
    await restarted.manager.stop();
  });

  test("SIGKILL during removals → restart removes what was toggled off or deleted; nothing is left", async () => {
    const { manager, client } = await start();
    const ids = Array.from({ length: 6 }, (_, i) => `ses_rm_${i}`);
    for (const id of ids) {
      await client.sessions.register({ id, directory: repo(id) });
      await client.run(id, { command: "echo data > ~/d", cwd: join(repos, id) });
    }
    for (const id of ids.slice(0, 3)) await client.sandbox.set(id, { sandboxed: false });
    for (const id of ids.slice(3)) await client.sessions.delete(id);
    await manager.kill9(); // the removals run in the background: some are mid-way now

    const restarted = await start();
    // Recovery alone (no sweep yet) removes every VM of a toggled-off or deleted session.
    const stateDir = join(`${dataDir}-runtime`, "local");
    expect(await createLocalDriver({ stateDir, rootfsDir: image, cgroupParent }).list({})).toEqual([]);
    await expectNothingLeft(restarted.client);
    await restarted.manager.stop();
  });
});
