// A second manager pointed at another manager's runtime dir: before the lock, its
// startup recovery removed the first manager's VM. Real manager processes, a real VM (local runtime).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { chmodSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LOCK_FILE } from "../../app/runtime-dir-lock";
import { createLocalDriver } from "../../runtime/local/index";
import { createClient } from "../../sdk/index";
import { makeTempDir } from "../helpers";
import { runManagerToExit, startManager, type ManagerProcess } from "../manager-process";
import { expectNoLeaksAndCleanUp, prepareLocalRuntime } from "../runtime/local-target";

const O_CLOEXEC = 0o2000000;
const cgroupParent = `ss-lock-${randomBytes(3).toString("hex")}`;
let image: string;
let dataDir: string;
let otherDataDir: string;
let repo: string;
const started: ManagerProcess[] = [];

beforeAll(async () => {
  image = await prepareLocalRuntime();
  dataDir = makeTempDir("ss-lock-");
  otherDataDir = makeTempDir("ss-lock-other-");
  repo = makeTempDir("ss-lock-repo-");
  writeFileSync(join(repo, "f"), "repo file");
}, 600_000);

afterAll(async () => {
  for (const manager of started) if (manager.proc.exitCode === null && manager.proc.signalCode === null) await manager.stop();
  const stateDir = join(`${dataDir}-runtime`, "local");
  const driver = createLocalDriver({ stateDir, rootfsDir: image, cgroupParent });
  for (const vm of await driver.list({})) await driver.remove(vm.name);
  expectNoLeaksAndCleanUp({ driver, image, stateDir, cgroupParent });
  for (const dir of [dataDir, `${dataDir}-runtime`, otherDataDir, `${otherDataDir}-runtime`, repo]) rmSync(dir, { recursive: true, force: true });
}, 120_000);

const runtimeEnv = () => ({ SANDBOX_CGROUP_PARENT: cgroupParent, SANDBOX_RUNTIME: "local", SANDBOX_ROOTFS_DIR: image });

async function start(): Promise<{ manager: ManagerProcess; client: ReturnType<typeof createClient> }> {
  const manager = await startManager(dataDir, runtimeEnv());
  started.push(manager);
  return { manager, client: createClient({ url: manager.url, token: manager.token }) };
}

/** Every process holding `path` open, by pid. */
function holdersOf(path: string): number[] {
  const pids: number[] = [];
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      if (readdirSync(`/proc/${pid}/fd`).some((fd) => readlinkSync(`/proc/${pid}/fd/${fd}`) === path)) pids.push(Number(pid));
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return pids;
}

describe("runtime dir lock", () => {
  test("second manager on the same runtime dir → refuses to start, first manager's VM untouched", async () => {
    const { manager, client } = await start();
    await client.sessions.register({ id: "ses_lock", directory: repo });
    const first = await client.run("ses_lock", { command: "echo kept > ~/mark && cat /proc/1/stat | cut -d' ' -f22", cwd: repo });
    expect(first.exitCode).toBe(0);
    const driver = createLocalDriver({ stateDir: join(manager.runtimeDir, "local"), rootfsDir: image, cgroupParent });
    const before = await driver.list({});
    expect(before.map((vm) => vm.status)).toEqual(["running"]);

    // Another data dir (it knows no session, so its recovery would remove every VM it finds), same runtime dir.
    const second = await runManagerToExit(otherDataDir, { ...runtimeEnv(), SANDBOX_RUNTIME_DIR: manager.runtimeDir });
    // Same VM (same record), still running: the second manager's recovery never ran.
    expect(await driver.list({})).toEqual(before);
    expect(second.exitCode).toBe(78);
    const lines = second.stderr.split("\n").filter((line) => line !== "");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toStartWith("session-sandbox: cannot start: another manager is using the runtime dir");
    expect(lines[0]).toContain(`pid ${manager.proc.pid}, started 20`);
    expect(lines[0]).toContain(`data dir ${dataDir}`);
    expect(lines[0]).toContain("SANDBOX_RUNTIME_DIR");

    // Same PID 1 (start time), its volume intact; the first manager still answers.
    const again = await client.run("ses_lock", { command: "cat ~/mark && cat /proc/1/stat | cut -d' ' -f22", cwd: repo });
    expect(again.stdout).toBe(`kept\n${first.stdout}`);
    expect((await fetch(`${manager.url}/api/health`, { signal: AbortSignal.timeout(1_000) })).status).toBe(200);
    await manager.stop();
  });

  test("another user cannot hold the lock (the file is 0600, an older 0644 one is corrected); a process that is not a manager holding it is named with its pid, user and command", async () => {
    const { manager } = await start();
    const lockPath = join(manager.runtimeDir, LOCK_FILE);
    await manager.stop();
    chmodSync(lockPath, 0o644);
    // What a local user did before: open the file read-only and flock it, so no manager could start.
    const asNobody = (args: string[]) => Bun.spawnSync(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", ...args], { stdout: "pipe", stderr: "pipe" });
    expect(asNobody(["flock", "-n", lockPath, "true"]).exitCode).toBe(0);
    const restarted = await start();
    expect(statSync(lockPath).mode & 0o777).toBe(0o600);
    expect(asNobody(["flock", "-n", lockPath, "true"]).exitCode).not.toBe(0);
    await restarted.manager.stop();
    // A root process that is no manager holds it: refused, naming the real holder (not the file's stale word).
    const program = "import fcntl, sys, time\nf = open(sys.argv[1])\nfcntl.flock(f, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(60)";
    const holder = Bun.spawn(["python3", "-c", program, lockPath], { stdout: "pipe", stderr: "ignore" });
    try {
      const reader = (holder.stdout as ReadableStream<Uint8Array>).getReader();
      let said = "";
      while (!said.includes("\n")) {
        const { value, done } = await reader.read();
        if (done) break;
        said += new TextDecoder().decode(value);
      }
      expect(said).toBe("locked\n");
      const refused = await runManagerToExit(dataDir, runtimeEnv());
      expect(refused.exitCode).toBe(78);
      expect(refused.stderr).toContain(`is locked by pid ${holder.pid} (user root (uid 0): `);
      expect(refused.stderr).toContain("python3 -c import fcntl, sys, time?f = open");
      expect(refused.stderr).toContain("which is not a manager");
    } finally {
      holder.kill("SIGKILL");
      await holder.exited;
    }
  });

  test("manager killed with -9 while its VM runs → the lock goes with it; a restart starts and keeps the VM", async () => {
    const { manager, client } = await start();
    expect((await client.run("ses_lock", { command: "cat ~/mark", cwd: repo })).stdout).toBe("kept\n");
    const lockPath = join(manager.runtimeDir, LOCK_FILE);
    // Only the manager holds the lock file, close-on-exec: crun and the VM's processes never inherit it.
    expect(holdersOf(lockPath)).toEqual([manager.proc.pid]);
    const fd = readdirSync(`/proc/${manager.proc.pid}/fd`).find((entry) => readlinkSync(`/proc/${manager.proc.pid}/fd/${entry}`) === lockPath)!;
    const flags = Number.parseInt(/^flags:\s+(\d+)/m.exec(readFileSync(`/proc/${manager.proc.pid}/fdinfo/${fd}`, "utf8"))![1]!, 8);
    expect(flags & O_CLOEXEC).toBe(O_CLOEXEC);

    await manager.kill9();
    expect(holdersOf(lockPath)).toEqual([]);
    const restarted = await start();
    expect((await restarted.client.run("ses_lock", { command: "cat ~/mark", cwd: repo })).stdout).toBe("kept\n");
    await restarted.manager.stop();
  });
});
