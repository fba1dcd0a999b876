// Wiring for the actor/supervisor suites: the real local runtime (installed and built on first use), a
// manager over it in-process, temp git repositories, a manual clock, and a leak check at the end.
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createLocalDriver } from "../../runtime/local/index";
import { createClient, type SandboxClient, type SandboxEvent } from "../../sdk/index";
import { makeTempDir, makeTestApp, type TestApp, type TestAppOptions } from "../helpers";
import { startManager, type ManagerProcess } from "../manager-process";
import { expectNoLeaksAndCleanUp, prepareLocalRuntime } from "../runtime/local-target";

export type ActorFixture = TestApp & {
  clock: { now: number; advance(ms: number): void };
  stateDir: string;
  cgroupParent: string;
  image: string;
  /** A main-thread driver over the same state, to see what the runtime itself says. */
  driver: ReturnType<typeof createLocalDriver>;
  makeRepo(name?: string): string;
  /** Removes every VM, asserts nothing is left (VMs, volumes, cgroups), deletes temp dirs. */
  teardown(): Promise<void>;
};

export async function makeActorFixture(options: Omit<TestAppOptions, "runtime" | "now"> = {}): Promise<ActorFixture> {
  const image = await prepareLocalRuntime();
  const stateDir = makeTempDir("ss-actor-state-");
  const cgroupParent = `ss-actor-test-${randomBytes(3).toString("hex")}`;
  const repos = makeTempDir("ss-actor-repos-");
  const clock = {
    now: Date.now(),
    advance(ms: number) {
      clock.now += ms;
    },
  };
  const app = makeTestApp({ ...options, now: () => clock.now, runtime: { stateDir, cgroupParent, image } });
  const driver = createLocalDriver({ stateDir, rootfsDir: image, cgroupParent });
  let repoCount = 0;
  return {
    ...app,
    clock,
    stateDir,
    cgroupParent,
    image,
    driver,
    makeRepo(name = `repo${++repoCount}`) {
      const dir = join(repos, name);
      mkdirSync(dir, { recursive: true });
      Bun.spawnSync(["git", "init", "-q", dir]);
      writeFileSync(join(dir, "README.md"), `# ${name}\n`);
      return dir;
    },
    async teardown() {
      // A removal the manager started (a deleted session's VM goes in the background) finishes first: two
      // removers of one VM (its actor, and the loop below) would race over its directories.
      await eventually(() => app.supervisor.list().every((record) => record.status !== "removing" && record.status !== "stopping"), 30_000).catch(() => undefined);
      await app.supervisor.sweep(0).catch(() => undefined);
      for (const vm of await driver.list({})) await driver.remove(vm.name);
      app.cleanup();
      rmSync(repos, { recursive: true, force: true });
      expectNoLeaksAndCleanUp({ driver, image, stateDir, cgroupParent });
    },
  };
}

/** Waits (without sleeping blindly) until `check` holds, polling every 20 ms, for at most `timeoutMs`. */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await Bun.sleep(20);
  }
}

/** Every event of the manager from now on, in a list that fills as they come; `stop()` ends the stream. */
export function recordEvents(f: Pick<ActorFixture, "client">): { events: SandboxEvent[]; stop(): void } {
  const events: SandboxEvent[] = [];
  const stop = new AbortController();
  void (async () => {
    for await (const event of f.client.events(stop.signal)) events.push(event);
  })();
  return { events, stop: () => stop.abort() };
}

/** The real manager process over the local runtime, and an SDK client for it; the caller stops it. */
export async function startLocalManager(dataDir: string, image: string, cgroupParent: string): Promise<{ manager: ManagerProcess; client: SandboxClient }> {
  const manager = await startManager(dataDir, { SANDBOX_CGROUP_PARENT: cgroupParent, SANDBOX_RUNTIME: "local", SANDBOX_ROOTFS_DIR: image });
  return { manager, client: createClient({ url: manager.url, token: manager.token }) };
}

/** A repository directory `name` under `repos`, holding one file. */
export function makeRepoUnder(repos: string, name: string): string {
  const dir = join(repos, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "f"), name);
  return dir;
}
