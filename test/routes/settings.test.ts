import { afterEach, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { freeDiskMib } from "../../app/services/host-limits";
import { ALL_TIERS, makeTempDir, makeTestApp, snapshotDatabase, type TestApp } from "../helpers";

let t: TestApp;
afterEach(() => t.cleanup());

describe("GET /api/settings/sandbox", () => {
  test("fresh → the documented defaults", async () => {
    t = makeTestApp();
    expect(await t.client.settings.get()).toEqual({
      enabled: true,
      defaultForNewSessions: true,
      cpus: 2,
      memoryMib: 2048,
      idleStopMinutes: 30,
      idleSuspendMinutes: 0,
      holdWhileBusy: true,
      maxHoldMinutes: 480,
      maxRunningVms: 4,
      execTimeoutMs: 120_000,
      network: { mode: "none" },
      maxImageMib: 16384,
      image: { kind: "recipe", packages: [] },
      forwardGitCredentials: false,
      diskMib: 4096,
      isolation: "auto",
      docker: false,
    });
    expect((await t.request("GET", "/api/settings/sandbox", { token: null })).status).toBe(401);
  });

  test("defaults → what null returns to: env over built-in, whatever is stored", async () => {
    t = makeTestApp({ envDefaults: { cpus: 3, memoryMib: 4096, execTimeoutMs: 9_000 } });
    await t.client.settings.patch({ cpus: 1, idleStopMinutes: 45 });
    expect(await t.client.settings.defaults()).toMatchObject({ cpus: 3, memoryMib: 4096, execTimeoutMs: 9_000, idleStopMinutes: 30, enabled: true });
    expect((await t.request("GET", "/api/settings/sandbox/defaults", { token: null })).status).toBe(401);
  });

  test("resources resolve session override → settings → env → built-in", async () => {
    t = makeTestApp({ envDefaults: { cpus: 3, memoryMib: 4096, execTimeoutMs: 9_000 } });
    await t.client.sessions.register({ id: "ses_a", directory: "/r" });
    expect((await t.client.sandbox.get("ses_a")).resources.effective).toEqual({ cpus: 3, memoryMib: 4096 }); // env
    expect((await t.client.settings.get()).execTimeoutMs).toBe(9_000);
    await t.client.settings.patch({ cpus: 1 });
    expect((await t.client.sandbox.get("ses_a")).resources.effective).toEqual({ cpus: 1, memoryMib: 4096 }); // settings
    await t.client.sandbox.set("ses_a", { resources: { memoryMib: 256 } });
    expect((await t.client.sandbox.get("ses_a")).resources.effective).toEqual({ cpus: 1, memoryMib: 256 }); // override
    await t.client.settings.patch({ cpus: null });
    expect((await t.client.sandbox.get("ses_a")).resources.effective.cpus).toBe(3); // back to env
  });

  test("env above the host → refused at startup with the host's limit", () => {
    expect(() => makeTestApp({ envDefaults: { cpus: 64 } })).toThrow(/host's 4 CPUs/);
    t = makeTestApp();
  });
});

describe("PATCH /api/settings/sandbox", () => {
  test("each key → stored and read back; survives a reopen", async () => {
    t = makeTestApp({ tiers: ALL_TIERS });
    const patch = { enabled: false, defaultForNewSessions: false, cpus: 4, memoryMib: 1024, idleStopMinutes: 5, idleSuspendMinutes: 2, holdWhileBusy: false, maxHoldMinutes: 60, maxRunningVms: 2, execTimeoutMs: 60_000, network: { mode: "all" as const }, forwardGitCredentials: true, diskMib: 512, image: { kind: "oci" as const, reference: "127.0.0.1:5000/team/node:22" }, maxImageMib: 2048, isolation: "microvm" as const, docker: true };
    expect(await t.client.settings.patch(patch)).toEqual(patch);
    const dataDir = t.dataDir;
    t.db.close();
    const reopened = makeTestApp({ dataDir, tiers: ALL_TIERS });
    expect(await reopened.client.settings.get()).toEqual(patch);
    reopened.cleanup();
    rmSync(dataDir, { recursive: true, force: true });
    t = makeTestApp();
  });

  test("out of range → 400 with the range; wrong type or unknown key → 422; nothing changes", async () => {
    t = makeTestApp();
    const before = snapshotDatabase(t.db);
    const cases: [unknown, number, string][] = [
      [{ maxRunningVms: 0 }, 400, "between 1 and 256"],
      [{ idleStopMinutes: 100_000 }, 400, "minutes"],
      [{ execTimeoutMs: 10 }, 400, "ms"],
      [{ cpus: 99 }, 400, "host's 4 CPUs"],
      [{ memoryMib: 1 }, 400, "128 MiB"],
      [{ diskMib: 10 }, 400, "at least 64 MiB"],
      [{ diskMib: -1 }, 400, "at least 64 MiB"],
      [{ diskMib: "4G" }, 422, "/diskMib"],
      [{ diskMib: 1.5 }, 422, "/diskMib"],
      [{ enabled: "no" }, 422, "/enabled"],
      [{ maxRunningVms: 2.5 }, 422, "/maxRunningVms"],
      [{ colour: "blue" }, 422, "/colour"],
      [{ maxRunningVms: 2, bogus: true }, 422, "/bogus"],
      [{ idleSuspendMinutes: -1 }, 400, "minutes (0 = off)"],
      [{ idleSuspendMinutes: 30 }, 400, "idleSuspendMinutes 30 must be below idleStopMinutes 30"],
      [{ idleSuspendMinutes: 10, idleStopMinutes: 5 }, 400, "must be below idleStopMinutes 5"],
      [{ maxHoldMinutes: 0 }, 400, "between 1 and 10080"],
      [{ holdWhileBusy: "yes" }, 422, "/holdWhileBusy"],
    ];
    for (const [body, status, text] of cases) {
      const res = await t.request("PATCH", "/api/settings/sandbox", { body: JSON.stringify(body) });
      expect([JSON.stringify(body), res.status]).toEqual([JSON.stringify(body), status]);
      expect(((await res.json()) as { message: string }).message).toContain(text);
    }
    expect((await t.request("PATCH", "/api/settings/sandbox", { body: "[]" })).status).toBe(400);
    expect((await t.request("PATCH", "/api/settings/sandbox", { body: "1", headers: { "content-type": "text/plain" } })).status).toBe(415);
    expect((await t.request("PATCH", "/api/settings/sandbox", { body: "x".repeat(2 * 1024 * 1024) })).status).toBe(413);
    expect((await t.request("PATCH", "/api/settings/sandbox", { body: "{}", token: "wrong" })).status).toBe(401);
    expect(snapshotDatabase(t.db)).toBe(before);
  });

  test("diskMib above the free space where the local runtime keeps volumes → 400 naming it; within → stored", async () => {
    const stateDir = makeTempDir("ss-settings-runtime-");
    t = makeTestApp({ runtime: { stateDir, cgroupParent: "unused", image: "/nonexistent-rootfs" } });
    const free = freeDiskMib(stateDir);
    const res = await t.request("PATCH", "/api/settings/sandbox", { body: JSON.stringify({ diskMib: free + 1024 }) });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toMatch(/at most the \d+ MiB free on the disk that holds the VMs' volumes/);
    expect((await t.client.settings.patch({ diskMib: 64 })).diskMib).toBe(64);
    expect((await t.client.settings.patch({ diskMib: null })).diskMib).toBe(4096);
    rmSync(stateDir, { recursive: true, force: true });
  });
});
