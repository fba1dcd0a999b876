// A manager killed with -9 in the middle of a pull (invariant 4): the pull's processes
// die with it, the next start marks the pull failed ("interrupted") and removes its partial directory,
// and the next command pulls again and runs. The registry is real; a loopback proxy in front of it holds
// the layer download so the pull is caught in the middle.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createLocalDriver } from "../../runtime/local/index";
import { createClient } from "../../sdk/index";
import { eventually } from "../actors/fixture";
import { startRegistry, type Registry } from "../fixtures/oci-registry";
import { makeTempDir } from "../helpers";
import { startManager, type ManagerProcess } from "../manager-process";
import { expectNoLeaksAndCleanUp, prepareLocalRuntime } from "../runtime/local-target";

let registry: Registry;
let image: string;
let held = true;
const waiting: (() => void)[] = [];
let proxy: ReturnType<typeof Bun.serve>;
const dataDir = makeTempDir("ss-image-crash-");
const repo = makeTempDir("ss-image-crash-repo-");
const cgroupParent = `ss-image-crash-${randomBytes(3).toString("hex")}`;
let manager: ManagerProcess | undefined;

beforeAll(async () => {
  image = await prepareLocalRuntime();
  registry = await startRegistry();
  await registry.push("crash/img", "v1", "after-the-crash");
  Bun.spawnSync(["git", "init", "-q", repo]);
  // Forwards to the registry, holding layer downloads while `held`.
  proxy = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const url = new URL(request.url);
      if (held && url.pathname.includes("/blobs/") && request.method === "GET") await new Promise<void>((resolve) => waiting.push(resolve));
      const upstream = await fetch(`http://${registry.address}${url.pathname}${url.search}`, { method: request.method, headers: request.headers, redirect: "manual" });
      return new Response(upstream.body, { status: upstream.status, headers: upstream.headers });
    },
  });
}, 900_000);

afterAll(async () => {
  held = false;
  for (const resolve of waiting.splice(0)) resolve();
  await manager?.stop().catch(() => undefined);
  await proxy?.stop(true);
  await registry?.stop();
  const stateDir = join(`${dataDir}-runtime`, "local");
  const driver = createLocalDriver({ stateDir, rootfsDir: image, cgroupParent });
  for (const vm of await driver.list({}).catch(() => [])) await driver.remove(vm.name);
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(`${dataDir}-runtime`, { recursive: true, force: true });
  rmSync(repo, { recursive: true, force: true });
  const scratch = makeTempDir("ss-image-crash-leakcheck-");
  expectNoLeaksAndCleanUp({ driver: createLocalDriver({ stateDir: scratch, rootfsDir: image, cgroupParent }), image, stateDir: scratch, cgroupParent });
}, 120_000);

const env = () => ({ SANDBOX_RUNTIME: "local", SANDBOX_ROOTFS_DIR: image, SANDBOX_CGROUP_PARENT: cgroupParent });
const skopeoRunning = () => Bun.spawnSync(["pgrep", "-f", `skopeo .*127.0.0.1:${proxy.port}/`]).exitCode === 0;

describe("a manager killed during a pull", () => {
  test("kill -9 mid-pull → no pull process survives; the restart marks it failed and removes the partial directory; the next command pulls and runs", async () => {
    manager = await startManager(dataDir, env());
    let client = createClient({ url: manager.url, token: manager.token });
    const reference = `127.0.0.1:${proxy.port}/crash/img:v1`;
    await client.sessions.register({ id: "ses_crash", directory: repo });
    await client.sandbox.set("ses_crash", { image: { kind: "oci", reference } });
    const cache = join(dataDir, "images");
    await eventually(() => existsSync(cache) && readdirSync(cache).some((entry) => entry.endsWith(".partial")) && waiting.length > 0, 30_000).catch(async (error) => {
      throw new Error(`${error.message}: ${JSON.stringify((await client.images.list()).images)} ${existsSync(cache) ? readdirSync(cache) : "no cache"} waiting=${waiting.length}\n${manager!.stderrLines.slice(-10).join("\n")}`);
    });
    expect((await client.images.list()).images.find((each) => each.image === `oci:${reference}`)?.status).toBe("pulling");
    expect(skopeoRunning()).toBe(true);

    await manager.kill9();
    await eventually(() => !skopeoRunning(), 10_000);

    manager = await startManager(dataDir, env());
    client = createClient({ url: manager.url, token: manager.token });
    const after = (await client.images.list()).images.find((each) => each.image === `oci:${reference}`);
    expect(after).toMatchObject({ status: "failed", detail: expect.stringContaining("interrupted") });
    expect(readdirSync(cache).filter((entry) => entry.endsWith(".partial"))).toEqual([]);

    held = false;
    for (const resolve of waiting.splice(0)) resolve();
    const result = await client.run("ses_crash", { command: "cat /etc/image-marker", cwd: repo, timeoutMs: 60_000 });
    expect(result).toMatchObject({ exitCode: 0, stdout: "after-the-crash\n" });
    await client.vms.sweep({ idleForMs: 0 });
  }, 180_000);
});
