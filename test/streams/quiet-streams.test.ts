// Invariant 8 over real HTTP: a command that prints nothing for 15 s, and an event
// stream with nothing to say for 15 s, outlive Bun's 10 s idle timeout — through curl and the SDK — and
// the exec stream carries heartbeats that the SDK skips. The real manager process, the real runtime.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createLocalDriver } from "../../runtime/local/index";
import { createClient, type SandboxEvent } from "../../sdk/index";
import { eventually } from "../actors/fixture";
import { makeTempDir } from "../helpers";
import { startManager, type ManagerProcess } from "../manager-process";
import { expectNoLeaksAndCleanUp, prepareLocalRuntime } from "../runtime/local-target";

const QUIET_S = 15;
let image: string;
let dataDir: string;
let repo: string;
let manager: ManagerProcess;
const cgroupParent = `ss-quiet-${randomBytes(3).toString("hex")}`;

beforeAll(async () => {
  image = await prepareLocalRuntime();
  dataDir = makeTempDir("ss-quiet-");
  repo = join(makeTempDir("ss-quiet-repos-"), "project");
  mkdirSync(repo);
  writeFileSync(join(repo, "README.md"), "quiet\n");
  manager = await startManager(dataDir, { SANDBOX_CGROUP_PARENT: cgroupParent, SANDBOX_RUNTIME: "local", SANDBOX_ROOTFS_DIR: image });
  const client = createClient({ url: manager.url, token: manager.token });
  await client.sessions.register({ id: "ses_quiet_curl", directory: repo });
  await client.sessions.register({ id: "ses_quiet_sdk", directory: repo });
}, 600_000);

afterAll(async () => {
  await manager?.stop();
  const stateDir = join(`${dataDir}-runtime`, "local");
  const driver = createLocalDriver({ stateDir, rootfsDir: image, cgroupParent });
  for (const vm of await driver.list({})) await driver.remove(vm.name);
  rmSync(join(repo, ".."), { recursive: true, force: true });
  expectNoLeaksAndCleanUp({ driver, image, stateDir, cgroupParent });
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(`${dataDir}-runtime`, { recursive: true, force: true });
}, 120_000);

describe("quiet streams", () => {
  test(`a command silent for ${QUIET_S} s → completes through curl and the SDK, with heartbeats; an event stream quiet for ${QUIET_S} s stays open`, async () => {
    const command = `sleep ${QUIET_S}; echo done`;
    const curl = Bun.spawn(
      ["curl", "-sS", "-N", "--max-time", "120", "-H", `authorization: Bearer ${manager.token}`, "-H", "content-type: application/json",
        "-d", JSON.stringify({ command, cwd: repo }), `${manager.url}/api/sessions/ses_quiet_curl/exec`],
      { stdout: "pipe", stderr: "pipe" },
    );
    const client = createClient({ url: manager.url, token: manager.token });
    const sdk = client.run("ses_quiet_sdk", { command, cwd: repo });
    // The event stream: opened now, it must still be open (and then deliver) after the quiet period.
    const stop = new AbortController();
    const seen: SandboxEvent[] = [];
    const reading = (async () => {
      for await (const event of client.events(stop.signal)) seen.push(event);
    })();
    const [curlOut, curlCode, sdkResult] = await Promise.all([new Response(curl.stdout).text(), curl.exited, sdk]);

    expect(curlCode).toBe(0);
    const lines = curlOut.trim().split("\n").map((line) => JSON.parse(line) as { type: string; data?: string });
    expect(lines[0]!.type).toBe("started");
    expect(lines.filter((line) => line.type === "heartbeat").length).toBeGreaterThanOrEqual(1);
    expect(Buffer.from(lines.find((line) => line.type === "stdout")!.data!, "base64").toString()).toBe("done\n");
    expect(lines.at(-1)).toMatchObject({ type: "exit", exitCode: 0, timedOut: false, cancelled: false });
    expect(sdkResult).toMatchObject({ exitCode: 0, stdout: "done\n", cancelled: false });

    // The event stream outlived the quiet period (its last event came at the commands' start): it now
    // delivers the events of a VM booted after it.
    await client.sessions.register({ id: "ses_quiet_after", directory: repo });
    const after = await client.run("ses_quiet_after", { command: "true", cwd: repo });
    await eventually(() => seen.some((event) => event.type === "vm" && event.vmName === after.vmName && event.status === "running"));
    stop.abort();
    await reading;
  }, 120_000);
});
