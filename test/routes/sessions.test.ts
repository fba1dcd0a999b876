import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { MAX_SESSION_DEPTH } from "../../app/services/sessions";
import { makeTestApp, snapshotDatabase, type TestApp } from "../helpers";

let t: TestApp;
beforeEach(() => {
  t = makeTestApp();
});
afterEach(() => t.cleanup());

const json = (res: Response) => res.json() as Promise<Record<string, unknown>>;
const register = (body: unknown) => t.request("POST", "/api/sessions", { body: JSON.stringify(body) });

describe("POST /api/sessions", () => {
  test("a new root → 201 with itself as root", async () => {
    const res = await register({ id: "ses_root", directory: "/repo" });
    expect(res.status).toBe(201);
    expect(await json(res)).toMatchObject({ id: "ses_root", parentID: null, forkOf: null, rootSessionID: "ses_root" });
  });

  test("the same data again → 200, no change", async () => {
    await register({ id: "ses_root", directory: "/repo" });
    const before = snapshotDatabase(t.db);
    const res = await register({ id: "ses_root", directory: "/repo", parentID: null });
    expect(res.status).toBe(200);
    expect(snapshotDatabase(t.db)).toBe(before);
  });

  test("the same id with a different parent → 409 naming the field", async () => {
    await register({ id: "ses_a", directory: "/repo" });
    await register({ id: "ses_b", directory: "/repo" });
    await register({ id: "ses_child", parentID: "ses_a", directory: "/repo" });
    const res = await register({ id: "ses_child", parentID: "ses_b", directory: "/repo" });
    expect(res.status).toBe(409);
    expect(await json(res)).toMatchObject({ code: "SESSION_CONFLICT", message: expect.stringContaining("parentID") });
  });

  test("an unregistered parent → 404 PARENT_NOT_FOUND", async () => {
    const res = await register({ id: "ses_child", parentID: "ses_ghost", directory: "/repo" });
    expect(res.status).toBe(404);
    expect(await json(res)).toMatchObject({ code: "PARENT_NOT_FOUND" });
  });

  test("a chain deeper than the limit → 400 SESSION_TOO_DEEP", async () => {
    await register({ id: "ses_0", directory: "/repo" });
    for (let i = 1; i <= MAX_SESSION_DEPTH; i++) {
      expect((await register({ id: `ses_${i}`, parentID: `ses_${i - 1}`, directory: "/repo" })).status).toBe(201);
    }
    const res = await register({ id: "ses_deep", parentID: `ses_${MAX_SESSION_DEPTH}`, directory: "/repo" });
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({ code: "SESSION_TOO_DEEP" });
  });

  test("a relative directory or a junk id → 422 with the field", async () => {
    const relative = await register({ id: "ses_x", directory: "repo" });
    expect(relative.status).toBe(422);
    expect((await json(relative)).message).toContain("/directory");
    expect((await register({ id: "../etc", directory: "/repo" })).status).toBe(422);
  });

  test("malformed JSON → 400; wrong content type → 415; over 1 MiB → 413", async () => {
    const malformed = await t.request("POST", "/api/sessions", { body: "{nope" });
    expect(malformed.status).toBe(400);
    expect(await json(malformed)).toMatchObject({ code: "MALFORMED_JSON" });
    const plain = await t.request("POST", "/api/sessions", { body: "x", headers: { "content-type": "text/plain" } });
    expect(plain.status).toBe(415);
    const huge = await t.request("POST", "/api/sessions", { body: JSON.stringify({ id: "s", directory: "/" + "a".repeat(1024 * 1024) }) });
    expect(huge.status).toBe(413);
  });

  test("no token → 401", async () => {
    expect((await t.request("POST", "/api/sessions", { body: "{}", token: null })).status).toBe(401);
  });
});

describe("GET /api/sessions", () => {
  test("list → every session with its root; no token → 401", async () => {
    await register({ id: "ses_a", directory: "/repo" });
    await register({ id: "ses_a1", parentID: "ses_a", directory: "/repo" });
    const { sessions } = await t.client.sessions.list();
    expect(sessions.map((s) => [s.id, s.rootSessionID])).toEqual([
      ["ses_a", "ses_a"],
      ["ses_a1", "ses_a"],
    ]);
    expect((await t.request("GET", "/api/sessions", { token: null })).status).toBe(401);
  });
});

describe("GET /api/sessions/:id", () => {
  test("a grandchild → 200 with the root found by walking parents", async () => {
    await register({ id: "ses_a", directory: "/repo" });
    await register({ id: "ses_b", parentID: "ses_a", directory: "/repo" });
    await register({ id: "ses_c", parentID: "ses_b", directory: "/repo" });
    expect(await t.client.sessions.get("ses_c")).toMatchObject({ id: "ses_c", parentID: "ses_b", rootSessionID: "ses_a" });
  });

  test("an id with a path in it, through the SDK → refused (422), never another session's route", async () => {
    await register({ id: "ses_a", directory: "/repo" });
    for (const call of [() => t.client.sessions.get("ses_x/../ses_a"), () => t.client.sandbox.get("x/../ses_a"), () => t.client.sandbox.set("../ses_a", { sandboxed: false })]) {
      expect(((await call().catch((e) => e)) as { status: number }).status).toBe(422);
    }
    expect((await t.client.sandbox.get("ses_a")).sandboxed).toBe(true);
  });

  test("unknown → 404; junk id → 422; no token → 401", async () => {
    expect((await t.request("GET", "/api/sessions/ses_nope")).status).toBe(404);
    expect((await t.request("GET", "/api/sessions/%20bad%20")).status).toBe(422);
    expect((await t.request("GET", "/api/sessions/ses_nope", { token: null })).status).toBe(401);
  });

  test("a parent cycle in stored data → 409 SESSION_CYCLE, not a hang", async () => {
    await register({ id: "ses_a", directory: "/repo" });
    await register({ id: "ses_b", parentID: "ses_a", directory: "/repo" });
    // The API cannot create a cycle (parents must exist first); simulate a damaged store.
    t.db.run("UPDATE sessions SET parent_id = 'ses_b' WHERE id = 'ses_a'");
    const res = await t.request("GET", "/api/sessions/ses_b");
    expect(res.status).toBe(409);
    expect(await json(res)).toMatchObject({ code: "SESSION_CYCLE" });
  });

  test("a stored chain deeper than the limit → 400 SESSION_TOO_DEEP", async () => {
    const insert = t.db.query(
      "INSERT INTO sessions (id, parent_id, directory, created_at, sandboxed, mode_source) VALUES (?, ?, '/r', 1, 0, 'inherited')",
    );
    insert.run("ses_0", null);
    for (let i = 1; i <= MAX_SESSION_DEPTH + 2; i++) insert.run(`ses_${i}`, `ses_${i - 1}`);
    const res = await t.request("GET", `/api/sessions/ses_${MAX_SESSION_DEPTH + 2}`);
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({ code: "SESSION_TOO_DEEP" });
  });
});

describe("DELETE /api/sessions/:id", () => {
  test("a parent → it and all descendants go; siblings stay", async () => {
    await register({ id: "ses_a", directory: "/repo" });
    await register({ id: "ses_b", parentID: "ses_a", directory: "/repo" });
    await register({ id: "ses_c", parentID: "ses_b", directory: "/repo" });
    await register({ id: "ses_other", directory: "/repo" });
    const { deleted } = await t.client.sessions.delete("ses_a");
    expect(deleted.sort()).toEqual(["ses_a", "ses_b", "ses_c"]);
    expect((await t.client.sessions.list()).sessions.map((s) => s.id)).toEqual(["ses_other"]);
  });

  test("unknown → 404; junk → 422; no token → 401", async () => {
    expect((await t.request("DELETE", "/api/sessions/ses_nope")).status).toBe(404);
    expect((await t.request("DELETE", "/api/sessions/-x")).status).toBe(422);
    expect((await t.request("DELETE", "/api/sessions/ses_nope", { token: null })).status).toBe(401);
  });
});
