// Bad input over every route: a table of known-bad values plus a property-based fuzz (fast-check).
// Asserts: never a 5xx; every refusal carries {code, message}; a refused request changes nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { makeTestApp, snapshotDatabase, TEST_TOKEN, type TestApp } from "./helpers";

let t: TestApp;
beforeAll(async () => {
  t = makeTestApp();
  await t.client.sessions.register({ id: "ses_root", directory: "/repo" });
  await t.client.sessions.register({ id: "ses_child", parentID: "ses_root", directory: "/repo" });
});
afterAll(() => t.cleanup());

type Attempt = { method: string; path: string; body?: string; contentType?: string; token?: string | null };

/** Sends one request and checks the invariants; returns the status. */
async function check(attempt: Attempt): Promise<number> {
  const before = snapshotDatabase(t.db);
  const headers: Record<string, string> = attempt.contentType ? { "content-type": attempt.contentType } : {};
  const res = await t.request(attempt.method, attempt.path, { body: attempt.body, headers, token: attempt.token });
  const text = await res.text();
  const label = JSON.stringify(attempt).slice(0, 300);
  expect([label, res.status < 500]).toEqual([label, true]);
  if (res.status >= 400) {
    const body = JSON.parse(text) as { code?: string; message?: string };
    expect([label, typeof body.code, typeof body.message]).toEqual([label, "string", "string"]);
    expect([label, snapshotDatabase(t.db) === before]).toEqual([label, true]);
  }
  return res.status;
}

const BAD_NUMBERS = ["-1", "0", "1.5", "-0.5", "1e308", "9007199254740993", "1e999", "NaN", "Infinity", '"2"', "null", "true", "[]", "{}"];

describe("fuzz: known-bad values", () => {
  test("resources: negative, zero, fractional, huge, NaN, non-numbers → 4xx, nothing changed", async () => {
    for (const value of BAD_NUMBERS) {
      for (const field of ["cpus", "memoryMib"]) {
        const put = await check({ method: "PUT", path: "/api/session-sandbox/ses_root", body: `{"resources":{"${field}":${value}}}`, contentType: "application/json" });
        const patch = await check({ method: "PATCH", path: "/api/settings/sandbox", body: `{"${field}":${value}}`, contentType: "application/json" });
        // `null` is valid in both places (it clears); everything else is refused.
        if (value !== "null" && value !== "{}") expect([value, put >= 400, patch >= 400]).toEqual([value, true, true]);
      }
    }
  });

  test("bodies: malformed, non-objects, unknown fields, deep nesting, odd encodings → 4xx", async () => {
    const bodies = ["", "{", "}", "[]", "null", "1", '"s"', '{"a":1}', '{"sandboxed":true,"sandboxed":"x"}', "[".repeat(5000), '{"resources":' + "[".repeat(3000) + "]".repeat(3000) + "}", "\u0000", "\uFEFF{}", '{"__proto__":{"enabled":false}}'];
    for (const body of bodies) {
      for (const [method, path] of [["PUT", "/api/session-sandbox/ses_root"], ["PATCH", "/api/settings/sandbox"], ["POST", "/api/sessions"]] as const) {
        await check({ method, path, body, contentType: "application/json" });
      }
    }
    expect((await t.client.settings.get()).enabled).toBe(true);
  });

  test("ids: junk, huge, traversal, unicode → 4xx", async () => {
    for (const id of ["%2e%2e", "a".repeat(500), "%F0%9F%92%A9", "%00", "ses_x%0Aevil", "-rf", ".hidden", "ses%20x"]) {
      for (const [method, prefix] of [["GET", "/api/sessions/"], ["DELETE", "/api/sessions/"], ["GET", "/api/session-sandbox/"], ["PUT", "/api/session-sandbox/"]] as const) {
        const status = await check({ method, path: prefix + id, body: method === "PUT" ? "{}" : undefined, contentType: method === "PUT" ? "application/json" : undefined });
        expect(status).toBeGreaterThanOrEqual(400);
      }
    }
  });
});

const ROUTES: [string, string][] = [
  ["GET", "/api/health"],
  ["GET", "/api/sessions"],
  ["POST", "/api/sessions"],
  ["GET", "/api/sessions/{id}"],
  ["DELETE", "/api/sessions/{id}"],
  ["GET", "/api/session-sandbox/{id}"],
  ["PUT", "/api/session-sandbox/{id}"],
  ["GET", "/api/settings/sandbox"],
  ["PATCH", "/api/settings/sandbox"],
  ["POST", "/api/session-sandbox/{id}"],
  ["POST", "/api/sessions/{id}/exec"],
  ["GET", "/api/vms"],
  ["DELETE", "/api/vms/{id}"],
  ["GET", "/api/nowhere"],
];

const FIELDS = ["command", "cwd", "env", "timeoutMs", "callID", "id", "parentID", "forkOf", "directory", "sandboxed", "resources", "cpus", "memoryMib", "enabled", "defaultForNewSessions", "idleStopMinutes", "maxRunningVms", "execTimeoutMs", "extra"];

const anyValue = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(-1, 0, 1, 2, 3, 4, 5, 128, 1024, 999_999_999, null, true, false, "", "/repo", "ses_root", "ses_child"),
);
const objectBody = fc.dictionary(fc.constantFrom(...FIELDS), fc.oneof(anyValue, fc.dictionary(fc.constantFrom(...FIELDS), anyValue)), { maxKeys: 4 });
const attempt = fc.record({
  route: fc.constantFrom(...ROUTES),
  id: fc.oneof(fc.constantFrom("ses_root", "ses_child", "ses_unknown", "ses_fuzz"), fc.string({ maxLength: 40 }).map(encodeURIComponent)),
  body: fc.option(fc.oneof(objectBody.map((v) => JSON.stringify(v)), fc.string({ maxLength: 60 }), fc.jsonValue().map((v) => JSON.stringify(v))), { nil: undefined }),
  contentType: fc.constantFrom("application/json", "application/json; charset=utf-8", "text/plain", undefined),
  token: fc.constantFrom<string | null | undefined>(undefined, undefined, undefined, null, "wrong", TEST_TOKEN + " "),
});

describe("fuzz: property-based over every route", () => {
  test("1,500 random requests → never a 5xx; a refusal changes nothing", async () => {
    await fc.assert(
      fc.asyncProperty(attempt, async (a) => {
        const [method, template] = a.route;
        const withBody = method !== "GET" && method !== "DELETE";
        await check({
          method,
          path: template.replace("{id}", a.id || "x"),
          body: withBody ? a.body : undefined,
          contentType: withBody ? a.contentType : undefined,
          token: a.token,
        });
      }),
      { numRuns: 1500, seed: Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31) },
    );
  });
});
