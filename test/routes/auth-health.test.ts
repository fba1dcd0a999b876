import { afterEach, describe, expect, test } from "bun:test";
import { rmSync, statSync } from "node:fs";
import { loadOrCreateToken, tokenPath } from "../../app/auth-token";
import { tokenCheck } from "../../app/http/auth";
import { makeTempDir, makeTestApp, TEST_TOKEN, type TestApp } from "../helpers";

let t: TestApp;
afterEach(() => t?.cleanup());

describe("auth", () => {
  test("health → 200 without a token, reporting that no runtime is in use", async () => {
    t = makeTestApp();
    const res = await t.request("GET", "/api/health", { token: null });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: "ok", runtime: { available: false, reason: expect.any(String) } });
  });

  test("every other route → 401 without a token, with a wrong one, or with another scheme", async () => {
    t = makeTestApp();
    const variants: Record<string, string>[] = [{}, { authorization: "Bearer wrong" }, { authorization: `Basic ${TEST_TOKEN}` }, { authorization: `Bearer ${TEST_TOKEN}x` }];
    for (const headers of variants) {
      for (const path of ["/api/sessions", "/api/settings/sandbox", "/api/openapi.json", "/api/unknown"]) {
        const res = await t.request("GET", path, { headers, token: null });
        expect([path, res.status]).toEqual([path, 401]);
      }
    }
  });

  test("dashboard page and assets → 200 without a token, with a strict CSP; the data behind them still needs it", async () => {
    t = makeTestApp();
    for (const path of ["/", "/ui/app.js", "/ui/app.css"]) {
      const res = await t.request("GET", path, { token: null });
      expect([path, res.status]).toEqual([path, 200]);
      expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    }
    expect((await t.request("GET", "/ui/other.js", { token: null })).status).toBe(401);
  });

  test("token compare → equal only for the exact token", () => {
    const matchesAbc = tokenCheck("abc");
    expect(matchesAbc("abc")).toBe(true);
    expect(matchesAbc("abd")).toBe(false);
    expect(matchesAbc("abcd")).toBe(false);
    expect(matchesAbc("")).toBe(false);
  });

  test("no env token → one is generated once, stored 0600, and reused", () => {
    t = makeTestApp();
    const dir = makeTempDir("ss-token-");
    const first = loadOrCreateToken(dir, undefined);
    expect(first.length).toBeGreaterThanOrEqual(40);
    expect(statSync(tokenPath(dir)).mode & 0o777).toBe(0o600);
    expect(loadOrCreateToken(dir, undefined)).toBe(first);
    expect(loadOrCreateToken(dir, "from-env")).toBe("from-env");
    rmSync(dir, { recursive: true, force: true });
  });

  test("the token never appears in logs, even when a request fails", async () => {
    t = makeTestApp();
    await t.request("GET", "/api/sessions/ses_x");
    await t.request("GET", "/api/sessions", { token: "wrong-token-value" });
    expect(t.logLines.join("\n")).not.toContain(TEST_TOKEN);
  });
});

describe("OpenAPI", () => {
  test("GET /api/openapi.json → every API route with its statuses", async () => {
    t = makeTestApp();
    const doc = (await (await t.request("GET", "/api/openapi.json")).json()) as { paths: Record<string, Record<string, { responses: object }>> };
    expect(Object.keys(doc.paths).sort()).toEqual(
      ["/api/doctor", "/api/events", "/api/health", "/metrics", "/api/session-sandbox/{id}", "/api/sessions", "/api/sessions/{id}", "/api/sessions/{id}/exec", "/api/sessions/{id}/activity", "/api/sessions/{id}/docker/start", "/api/sessions/{id}/files", "/api/sessions/{id}/ports", "/api/sessions/{id}/ports/{port}", "/api/sessions/{id}/processes", "/api/sessions/{id}/processes/{callID}/logs", "/api/sessions/{id}/processes/{callID}", "/api/sessions/{id}/shell", "/api/sessions/{id}/shell/tickets", "/api/sessions/{id}/execs", "/api/sessions/{id}/execs/{callID}/cancel", "/api/settings/sandbox", "/api/settings/sandbox/defaults", "/api/vms", "/api/vms/sweep", "/api/vms/{name}", "/api/vms/stats", "/api/vms/{name}/stats", "/api/images", "/api/images/prune", "/api/images/{image}", "/api/ca", "/api/ca/rotate", "/api/secrets", "/api/users", "/api/users/{name}"].sort(),
    );
    expect(Object.keys(doc.paths["/api/session-sandbox/{id}"]!.put!.responses).sort()).toEqual(["200", "400", "401", "403", "404", "409", "413", "415", "422"]);
  });

  test("an unknown route with a token → 404 with a reason", async () => {
    t = makeTestApp();
    const res = await t.request("GET", "/api/nothing-here");
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: "ROUTE_NOT_FOUND" });
  });
});

describe("bun run token", () => {
  test("prints the stored token, creating it on first use", () => {
    const dir = makeTempDir("ss-token-script-");
    const run = () => Bun.spawnSync(["bun", "run", "--silent", "token"], { cwd: `${import.meta.dir}/../..`, env: { ...process.env, SANDBOX_DATA_DIR: dir, SANDBOX_API_TOKEN: "" } });
    const first = run();
    expect(first.exitCode).toBe(0);
    const printed = first.stdout.toString().trim();
    expect(printed).toBe(loadOrCreateToken(dir, undefined));
    expect(run().stdout.toString().trim()).toBe(printed);
    rmSync(dir, { recursive: true, force: true });
    t = makeTestApp();
  });
});
