// A graceful shutdown stops the VMs: SIGTERM to the real manager process stops every VM
// it runs with the reason "shutdown" (the agent's background processes end with it), keeps the volumes,
// and the next start adopts the stopped VMs and starts them on their next command.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createLocalDriver } from "../../runtime/local/index";
import type { SandboxClient } from "../../sdk/index";
import { makeTempDir } from "../helpers";
import type { ManagerProcess } from "../manager-process";
import { expectNoLeaksAndCleanUp, prepareLocalRuntime } from "../runtime/local-target";
import { eventually, makeRepoUnder, startLocalManager } from "./fixture";

let image: string;
let dataDir: string;
let repos: string;
const cgroupParent = `ss-shutdown-${randomBytes(3).toString("hex")}`;
const running: ManagerProcess[] = [];
/** A sleep no other test runs, so pgrep finds only this file's guest processes. */
const marker = `sleep ${900_000 + Math.floor(Math.random() * 90_000)}`;

beforeAll(async () => {
  image = await prepareLocalRuntime();
  dataDir = makeTempDir("ss-shutdown-");
  repos = makeTempDir("ss-shutdown-repos-");
}, 600_000);

afterAll(async () => {
  for (const manager of running) if (manager.proc.exitCode === null) await manager.kill9();
  const driver = localDriver();
  for (const vm of await driver.list({})) await driver.remove(vm.name);
  rmSync(repos, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
  // Asserts no cgroup, VM dir, volume, uid range or disk is left, and removes the parent cgroups.
  expectNoLeaksAndCleanUp({ driver, image, stateDir: join(`${dataDir}-runtime`, "local"), cgroupParent });
  rmSync(`${dataDir}-runtime`, { recursive: true, force: true });
}, 120_000);

function localDriver() {
  return createLocalDriver({ stateDir: join(`${dataDir}-runtime`, "local"), rootfsDir: image, cgroupParent });
}

async function start(): Promise<{ manager: ManagerProcess; client: SandboxClient }> {
  const started = await startLocalManager(dataDir, image, cgroupParent);
  running.push(started.manager);
  return started;
}

const repo = (name: string) => makeRepoUnder(repos, name);

/** Host processes whose command line is exactly the marker: the guests' background sleeps. */
async function guestSleeps(): Promise<string> {
  const found = Bun.spawnSync(["pgrep", "-fx", marker]);
  return found.stdout.toString().trim();
}

describe("graceful shutdown", () => {
  test("SIGTERM → every VM stopped with reason shutdown, background processes gone, volumes kept; the next start adopts them", async () => {
    const { manager, client } = await start();
    const ids = ["ses_shut_a", "ses_shut_b"];
    for (const id of ids) {
      await client.sessions.register({ id, directory: repo(id) });
      const setup = await client.run(id, { command: `echo kept-${id} > ~/k; ${marker} >/dev/null 2>&1 &`, cwd: join(repos, id) });
      expect(setup.exitCode).toBe(0);
    }
    expect(await guestSleeps()).not.toBe("");
    // A command still running when the signal comes: it is cancelled with its VM, and its client hears so.
    const long = client.run(ids[0]!, { command: "sleep 300", cwd: join(repos, ids[0]!) }).then(
      (result) => ({ ended: "result" as const, result }),
      (error: Error) => ({ ended: "error" as const, error }),
    );
    await eventually(async () => (await client.vms.list()).vms.some((vm) => vm.runningExecs > 0));

    await manager.stop();
    expect(manager.proc.exitCode).toBe(0);
    const outcome = await long;
    if (outcome.ended === "result") expect(outcome.result.cancelled || outcome.result.exitCode !== 0).toBe(true);
    const shutDown = manager.stderrLines.map((line) => JSON.parse(line) as { message: string; stopped?: string[]; failed?: string[] }).find((line) => line.message === "shut down");
    expect(shutDown?.failed).toEqual([]);
    expect(shutDown?.stopped).toHaveLength(2);

    // Stopped, not removed: the runtime still holds both VMs and their volumes; no guest process is left.
    const vms = await localDriver().list({});
    expect(vms.map((vm) => vm.status)).toEqual(["stopped", "stopped"]);
    expect(await guestSleeps()).toBe("");

    const restarted = await start();
    for (const id of ids) {
      const view = await restarted.client.sandbox.get(id);
      expect(view.lastStop?.reason).toBe("shutdown");
    }
    // Adopted as stopped, started by the next command, with the volume's data.
    expect((await restarted.client.vms.list()).vms.map((vm) => vm.status).sort()).toEqual(["stopped", "stopped"]);
    const again = await restarted.client.run(ids[1]!, { command: "cat ~/k", cwd: join(repos, ids[1]!) });
    expect(again.stdout).toBe(`kept-${ids[1]}\n`);
    expect((await restarted.client.vms.list()).vms.find((vm) => vm.rootSessionID === ids[1])?.status).toBe("running");
    await restarted.manager.stop();
    expect(restarted.manager.proc.exitCode).toBe(0);
  });

  test("SIGTERM right after a delete → the removal finishes before the manager exits: no VM, volume or mount left", async () => {
    const { manager, client } = await start();
    const id = "ses_shut_rm";
    await client.sessions.register({ id, directory: repo(id) });
    await client.run(id, { command: "echo data > ~/d", cwd: join(repos, id) });
    const vmName = (await client.sandbox.get(id)).vmName;
    await client.sessions.delete(id); // the removal runs in the background
    await manager.stop();
    expect(manager.proc.exitCode).toBe(0);
    expect((await localDriver().list({})).map((vm) => vm.name)).not.toContain(vmName);
    expect(await localDriver().listVolumes!()).not.toContain(vmName);
    expect(readFileSync("/proc/self/mountinfo", "utf8")).not.toContain(vmName);
  });

  test("SIGTERM while a VM boots → the boot finishes first, then the VM is stopped; nothing keeps running", async () => {
    const { manager, client } = await start();
    const id = "ses_shut_boot";
    await client.sessions.register({ id, directory: repo(id) });
    const command = client.run(id, { command: `${marker} >/dev/null 2>&1 & echo started`, cwd: join(repos, id) }).catch(() => undefined);
    await eventually(async () => (await client.vms.list()).vms.some((vm) => vm.rootSessionID === id));
    await manager.stop();
    await command;
    expect(manager.proc.exitCode).toBe(0);
    for (const vm of await localDriver().list({})) expect(vm.status).toBe("stopped");
    expect(await guestSleeps()).toBe("");
  });
});
