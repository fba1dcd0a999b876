// The docker setting and a root session's override, in-process: which tiers may hold a Docker Engine (the
// gVisor and microvm tiers; the container tier refuses with why and the fix, changing nothing), the checks
// when the isolation moves under it, forks inheriting it, a command of a root that asked for docker in a
// tier that stopped holding it refused before it runs, the settings' default applying only where a
// session's tier can hold it, and the start route's answers.
import { afterEach, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { DockerUnavailableError, RuntimeFailedError } from "../../sdk/index";
import { ALL_TIERS, makeTempDir, makeTestApp, snapshotDatabase, type TestApp } from "../helpers";

let t: TestApp | null = null;
afterEach(() => {
  t?.cleanup();
  t = null;
});

async function start(dataDir?: string): Promise<TestApp> {
  t = makeTestApp({ tiers: ALL_TIERS, dataDir });
  await t.client.sessions.register({ id: "ses_root", directory: "/repo" }).catch(() => undefined);
  return t;
}

const refusal = (promise: Promise<unknown>) => promise.then(() => undefined, (error) => error as DockerUnavailableError);

describe("docker setting and override", () => {
  test("container tier → 400 DOCKER_UNAVAILABLE with why and the fix; nothing changed; gvisor tier → on", async () => {
    const app = await start();
    await app.client.settings.patch({ isolation: "container" });
    const before = snapshotDatabase(app.db);
    const onContainer = await refusal(app.client.sandbox.set("ses_root", { docker: true }));
    expect(onContainer).toBeInstanceOf(DockerUnavailableError);
    expect(onContainer?.status).toBe(400);
    expect(onContainer?.message).toStartWith("docker is not available in isolation container here (container tier): the container tier shares the host's kernel");
    expect(onContainer?.message).toContain("set isolation to gvisor");
    expect(onContainer?.message).toEndWith("; nothing was changed");
    const asDefault = await refusal(app.client.settings.patch({ docker: true }));
    expect(asDefault?.status).toBe(400);
    expect(snapshotDatabase(app.db)).toBe(before);
    expect((await app.client.sandbox.get("ses_root")).docker).toEqual({ override: null, effective: false });
    const onGvisor = await app.client.sandbox.set("ses_root", { docker: true, isolation: "gvisor" });
    expect(onGvisor.docker).toEqual({ override: true, effective: true });
    expect(onGvisor.isolation.effective).toBe("gvisor");
  });

  test("microvm → on; gvisor keeps it; moving the session to the container tier → 400; off and null → back; a fork inherits it", async () => {
    const app = await start();
    expect((await app.client.sandbox.set("ses_root", { isolation: "microvm", docker: true })).docker).toEqual({ override: true, effective: true });
    // auto is microvm where every tier works: the strongest.
    expect((await app.client.sandbox.set("ses_root", { isolation: "auto" })).docker.effective).toBe(true);
    expect((await app.client.sandbox.set("ses_root", { isolation: "gvisor" })).docker.effective).toBe(true);
    expect((await refusal(app.client.sandbox.set("ses_root", { isolation: "container" })))?.code).toBe("DOCKER_UNAVAILABLE");
    await app.client.sessions.register({ id: "ses_fork", forkOf: "ses_root", directory: "/repo" });
    expect((await app.client.sandbox.get("ses_fork")).docker).toEqual({ override: true, effective: true });
    expect((await app.client.sandbox.set("ses_root", { docker: false })).docker).toEqual({ override: false, effective: false });
    // Off, any tier is fine again.
    expect((await app.client.sandbox.set("ses_root", { isolation: "container" })).isolation.effective).toBe("container");
    expect((await app.client.sandbox.set("ses_root", { docker: null })).docker).toEqual({ override: null, effective: false });
    // The default: on with a default isolation that can hold it, then the default isolation cannot move away.
    expect((await app.client.settings.patch({ isolation: "microvm", docker: true })).docker).toBe(true);
    expect((await refusal(app.client.settings.patch({ isolation: "container" })))?.code).toBe("DOCKER_UNAVAILABLE");
  });

  test("on by the settings' default → only where the session's tier holds it: a session in the container tier keeps working, and docker start says why not", async () => {
    const app = await start();
    await app.client.sandbox.set("ses_root", { isolation: "container" });
    expect((await app.client.settings.patch({ isolation: "microvm", docker: true })).docker).toBe(true);
    expect((await app.client.sandbox.get("ses_root")).docker).toEqual({ override: null, effective: true });
    const why = await refusal(app.client.docker.start("ses_root"));
    expect(why?.status).toBe(409);
    expect(why?.message).toStartWith("docker cannot run in this session's isolation (container): the container tier shares the host's kernel");
  });

  test("POST …/docker/start with docker off → 409 naming how to turn it on", async () => {
    const app = await start();
    const off = await refusal(app.client.docker.start("ses_root"));
    expect(off?.status).toBe(409);
    expect(off?.message).toBe('docker is off for session ses_root: turn it on for its root with PUT /api/session-sandbox/ses_root {"docker": true} (or `session-sandbox docker ses_root on`), or the settings\' docker default');
  });

  test("a session with docker whose tier no longer holds it → its command is refused (503) before anything runs", async () => {
    const dataDir = makeTempDir();
    const repo = makeTempDir("ss-docker-repo-");
    // Removed however the test ends: a failed expectation must not leave them in /tmp.
    try {
      const first = await start(dataDir);
      await first.client.sessions.register({ id: "ses_repo", directory: repo });
      await first.client.sandbox.set("ses_repo", { docker: true, isolation: "auto" });
      first.db.close();
      // The next start has neither KVM nor runsc: auto becomes the container tier, which cannot hold Docker.
      t = makeTestApp({ tiers: { ...ALL_TIERS, microvm: { available: false, reason: "/dev/kvm is missing" }, gvisor: { available: false, reason: "runsc is missing" } }, dataDir });
      const error = (await t.client.run("ses_repo", { command: "true", cwd: repo }).catch((e) => e)) as RuntimeFailedError;
      expect(error).toBeInstanceOf(RuntimeFailedError);
      expect(error.status).toBe(503);
      expect(error.message).toStartWith("the session's docker setting cannot be met in the container tier, so the command was not run: the container tier shares the host's kernel");
      expect(error.message).toEndWith("; or switch docker off for it");
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(repo, { recursive: true, force: true });
    }
  });
});
