import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { makeTestApp, snapshotDatabase, TEST_HOST, type TestApp } from "../helpers";

let t: TestApp;
let clock = 1_000;
beforeEach(async () => {
  clock = 1_000;
  t = makeTestApp({ now: () => clock });
  await t.client.sessions.register({ id: "ses_root", directory: "/repo" });
  await t.client.sessions.register({ id: "ses_child", parentID: "ses_root", directory: "/repo" });
});
afterEach(() => t.cleanup());

const put = (id: string, body: unknown) => t.request("PUT", `/api/session-sandbox/${id}`, { body: JSON.stringify(body) });
const json = (res: Response) => res.json() as Promise<Record<string, unknown>>;

describe("GET /api/session-sandbox/:id", () => {
  test("a new root → sandboxed by default, settings resources, the fixed VM name", async () => {
    const view = await t.client.sandbox.get("ses_root");
    const hex = createHash("sha256").update("ses_root").digest("hex").slice(0, 12);
    expect(view).toEqual({
      sessionID: "ses_root",
      rootSessionID: "ses_root",
      sandboxed: true,
      source: "default",
      serverEnabled: true,
      resources: { override: null, effective: { cpus: 2, memoryMib: 2048 } },
      network: { override: null, effective: { mode: "none" } },
      image: { override: null, effective: { kind: "recipe", packages: [] } },
      isolation: { override: null, effective: "auto" },
      docker: { override: null, effective: false },
      secrets: { granted: [], effective: [] },
      toggledAt: null,
      vmName: `ocm-session-${hex}`,
      lastStop: null,
    });
  });

  test("a child → inherits its root's mode, resources and VM", async () => {
    await t.client.sandbox.set("ses_root", { sandboxed: false, resources: { cpus: 1 } });
    const child = await t.client.sandbox.get("ses_child");
    const root = await t.client.sandbox.get("ses_root");
    expect(child).toMatchObject({ rootSessionID: "ses_root", sandboxed: false, source: "inherited", vmName: root.vmName });
    expect(child.resources).toEqual(root.resources);
  });

  test("a fork → copies its origin's mode and resources, as its own root", async () => {
    clock = 5_000;
    await t.client.sandbox.set("ses_root", { sandboxed: false, resources: { memoryMib: 512 } });
    await t.client.sessions.register({ id: "ses_fork", forkOf: "ses_child", directory: "/repo" });
    const fork = await t.client.sandbox.get("ses_fork");
    expect(fork).toMatchObject({ rootSessionID: "ses_fork", sandboxed: false, source: "fork", toggledAt: 5_000 });
    expect(fork.resources.override).toEqual({ cpus: null, memoryMib: 512 });
    expect(fork.vmName).not.toBe((await t.client.sandbox.get("ses_root")).vmName);
  });

  test("defaultForNewSessions false → new roots start unsandboxed", async () => {
    await t.client.settings.patch({ defaultForNewSessions: false });
    await t.client.sessions.register({ id: "ses_new", directory: "/repo" });
    expect(await t.client.sandbox.get("ses_new")).toMatchObject({ sandboxed: false, source: "default" });
  });

  test("unknown → 404; junk → 422; no token → 401", async () => {
    expect((await t.request("GET", "/api/session-sandbox/ses_nope")).status).toBe(404);
    expect((await t.request("GET", "/api/session-sandbox/%00")).status).toBe(422);
    expect((await t.request("GET", "/api/session-sandbox/ses_root", { token: null })).status).toBe(401);
  });

  test("stored parent cycle → 409; stored chain too deep → 400", async () => {
    t.db.run("UPDATE sessions SET parent_id = 'ses_child' WHERE id = 'ses_root'");
    expect((await t.request("GET", "/api/session-sandbox/ses_child")).status).toBe(409);
    t.db.run("UPDATE sessions SET parent_id = NULL WHERE id = 'ses_root'");
    const insert = t.db.query("INSERT INTO sessions (id, parent_id, directory, created_at, sandboxed, mode_source) VALUES (?, ?, '/r', 1, 0, 'inherited')");
    for (let i = 0; i < 40; i++) insert.run(`ses_d${i}`, i === 0 ? "ses_root" : `ses_d${i - 1}`);
    expect((await t.request("GET", "/api/session-sandbox/ses_d39")).status).toBe(400);
  });

  test("read, then any write to its rows (even by raw SQL) → read again, the write shows", async () => {
    expect(await t.client.sandbox.get("ses_child")).toMatchObject({ sandboxed: true, lastStop: null, secrets: { granted: [] } });
    t.db.run("UPDATE sessions SET sandboxed = 0 WHERE id = 'ses_root'");
    expect((await t.client.sandbox.get("ses_child")).sandboxed).toBe(false);
    t.services.vmStops.record("ses_root", { vmName: "ocm-session-x", status: "stopped", reason: "idle", at: 5 });
    expect((await t.client.sandbox.get("ses_child")).lastStop).toEqual({ vmName: "ocm-session-x", status: "stopped", reason: "idle", at: 5 });
    t.db.run("INSERT INTO secret_grants (root_session_id, name, granted_at) VALUES ('ses_root', 'GH', 1)");
    expect((await t.client.sandbox.get("ses_child")).secrets.granted).toEqual(["GH"]);
    t.db.run("DELETE FROM sessions WHERE id = 'ses_root'");
    expect((await t.request("GET", "/api/session-sandbox/ses_child")).status).toBe(404);
  });
});

describe("PUT /api/session-sandbox/:id", () => {
  test("network → override stored, settings default otherwise; null clears; junk entries → 400", async () => {
    await t.client.settings.patch({ network: { mode: "allowlist", allow: ["api.github.com"] } });
    expect((await t.client.sandbox.get("ses_root")).network).toEqual({ override: null, effective: { mode: "allowlist", allow: ["api.github.com"] } });
    const set = await t.client.sandbox.set("ses_root", { network: { mode: "allowlist", allow: ["*.example.com", "loopback", "10.0.0.0/8", "host:8080"] } });
    expect(set.network.effective).toEqual({ mode: "allowlist", allow: ["*.example.com", "loopback", "10.0.0.0/8", "host:8080"] });
    expect((await t.client.sandbox.get("ses_child")).network.effective.mode).toBe("allowlist");
    const before = snapshotDatabase(t.db);
    const bad = await put("ses_root", { network: { mode: "allowlist", allow: ["exa mple.com", "localhost/99"] } });
    expect(bad.status).toBe(400);
    expect(await json(bad)).toMatchObject({ code: "NETWORK_POLICY_INVALID", message: expect.stringContaining('"exa mple.com"') });
    expect((await put("ses_root", { network: { mode: "open" } })).status).toBe(422);
    expect(snapshotDatabase(t.db)).toBe(before);
    expect((await t.client.sandbox.set("ses_root", { network: null })).network.override).toBeNull();
  });

  test("toggle off → explicit source, toggledAt now, applies at once", async () => {
    clock = 42_000;
    const view = await t.client.sandbox.set("ses_root", { sandboxed: false });
    expect(view).toMatchObject({ sandboxed: false, source: "explicit", toggledAt: 42_000 });
    expect(await t.client.sandbox.get("ses_root")).toMatchObject({ sandboxed: false });
  });

  test("sandbox X on when X is already on → toggledAt kept; a default-on root's first explicit on → toggledAt now", async () => {
    clock = 10_000;
    expect(await t.client.sandbox.set("ses_root", { sandboxed: true })).toMatchObject({ sandboxed: true, source: "explicit", toggledAt: 10_000 });
    clock = 20_000;
    expect(await t.client.sandbox.set("ses_root", { sandboxed: true })).toMatchObject({ sandboxed: true, source: "explicit", toggledAt: 10_000 });
    clock = 30_000;
    await t.client.sandbox.set("ses_root", { sandboxed: false });
    clock = 40_000;
    expect(await t.client.sandbox.set("ses_root", { sandboxed: false })).toMatchObject({ sandboxed: false, toggledAt: 30_000 });
    expect(await t.client.sandbox.set("ses_root", { sandboxed: true })).toMatchObject({ sandboxed: true, toggledAt: 40_000 });
  });

  test("resources → override merged per field; null clears it", async () => {
    await t.client.sandbox.set("ses_root", { resources: { cpus: 3 } });
    const merged = await t.client.sandbox.set("ses_root", { resources: { memoryMib: 1024 } });
    expect(merged.resources).toEqual({ override: { cpus: 3, memoryMib: 1024 }, effective: { cpus: 3, memoryMib: 1024 } });
    expect(merged.source).toBe("default"); // a resize is not a toggle
    const cleared = await t.client.sandbox.set("ses_root", { resources: null });
    expect(cleared.resources).toEqual({ override: null, effective: { cpus: 2, memoryMib: 2048 } });
  });

  test("above the host → 400 naming the host's limit; below the minimum → 400; nothing changes", async () => {
    const before = snapshotDatabase(t.db);
    const cpus = await put("ses_root", { resources: { cpus: TEST_HOST.cpus + 1 } });
    expect(cpus.status).toBe(400);
    expect((await json(cpus)).message).toContain(`host's ${TEST_HOST.cpus} CPUs`);
    const memory = await put("ses_root", { sandboxed: false, resources: { memoryMib: TEST_HOST.memoryMib + 1 } });
    expect(memory.status).toBe(400);
    expect((await json(memory)).message).toContain(`host's ${TEST_HOST.memoryMib} MiB`);
    expect((await put("ses_root", { resources: { cpus: 0 } })).status).toBe(400);
    expect((await put("ses_root", { resources: { memoryMib: 64 } })).status).toBe(400);
    expect(snapshotDatabase(t.db)).toBe(before);
  });

  test("fractional, string or unknown fields → 422", async () => {
    expect((await put("ses_root", { resources: { cpus: 1.5 } })).status).toBe(422);
    expect((await put("ses_root", { sandboxed: "yes" })).status).toBe(422);
    expect((await put("ses_root", { sandboxed: true, extra: 1 })).status).toBe(422);
    expect((await put("ses_root", { resources: { cpus: 1, disk: 5 } })).status).toBe(422);
  });

  test("a child → 409 locked to its root", async () => {
    const res = await put("ses_child", { sandboxed: false });
    expect(res.status).toBe(409);
    expect(await json(res)).toMatchObject({ code: "CHILD_SESSION_LOCKED", message: expect.stringContaining("ses_root") });
  });

  test("sandboxing disabled server-wide → 409, and every session reads unsandboxed", async () => {
    await t.client.settings.patch({ enabled: false });
    const res = await put("ses_root", { sandboxed: true });
    expect(res.status).toBe(409);
    expect(await json(res)).toMatchObject({ code: "SANDBOX_DISABLED" });
    expect(await t.client.sandbox.get("ses_root")).toMatchObject({ sandboxed: false, serverEnabled: false });
  });

  test("unknown → 404; malformed → 400; not JSON → 415; too large → 413; no token → 401", async () => {
    expect((await put("ses_nope", { sandboxed: true })).status).toBe(404);
    expect((await t.request("PUT", "/api/session-sandbox/ses_root", { body: "{" })).status).toBe(400);
    expect((await t.request("PUT", "/api/session-sandbox/ses_root", { body: "a=1", headers: { "content-type": "application/x-www-form-urlencoded" } })).status).toBe(415);
    expect((await t.request("PUT", "/api/session-sandbox/ses_root", { body: " ".repeat(1024 * 1024 + 1) })).status).toBe(413);
    expect((await t.request("PUT", "/api/session-sandbox/ses_root", { body: "{}", token: null })).status).toBe(401);
  });
});
