// Every status each route declares is produced by at least one request here, and every route is listed:
// the table is checked against the app's own declarations, so a new route or status fails until covered.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, rmSync } from "node:fs";
import { makeTempDir, makeTestApp, TEST_HOST, type TestApp } from "../helpers";

let t: TestApp;
/** A user's token (the account `nobody`, on every Debian): what only the manager's own token may do is a 403 for it. */
let userToken = "";
const USER = "<a user's token>";
/** A directory `nobody` may use, and one of its sessions there (a 403 needs a session of its own). */
const open = makeTempDir("ss-declared-open-");
/** A real directory (not a shared one like /tmp, which no session may mount) for the 503 case. */
const project = makeTempDir("ss-declared-");
beforeAll(async () => {
  t = makeTestApp();
  await t.client.sessions.register({ id: "ses_root", directory: "/repo" });
  await t.client.sessions.register({ id: "ses_child", parentID: "ses_root", directory: "/repo" });
  // A damaged store: a parent cycle and an over-deep chain, which the API itself cannot create.
  const insert = t.db.query("INSERT INTO sessions (id, parent_id, directory, created_at, sandboxed, mode_source) VALUES (?, ?, '/r', 1, 0, 'inherited')");
  insert.run("ses_cyc_a", "ses_cyc_b");
  insert.run("ses_cyc_b", "ses_cyc_a");
  for (let i = 0; i < 40; i++) insert.run(`ses_deep${i}`, i === 0 ? "ses_root" : `ses_deep${i - 1}`);
  await t.client.sessions.register({ id: "ses_off", directory: "/repo" });
  await t.client.sandbox.set("ses_off", { sandboxed: false });
  await t.client.sessions.register({ id: "ses_tmp", directory: project });
  userToken = t.services.users.add("nobody").token;
  chmodSync(open, 0o777);
  await t.request("POST", "/api/sessions", { body: j({ id: "ses_nobody", directory: open }), token: userToken });
  // An image row nobody uses (a failed pull), which DELETE may remove.
  t.db.query("INSERT INTO images (source_key, choice, status, detail, created_at, updated_at) VALUES (?, ?, 'failed', 'test', 1, 1)").run("oci:127.0.0.1:5000/gone:v1", j({ kind: "oci", reference: "127.0.0.1:5000/gone:v1" }));
});
afterAll(() => {
  t.cleanup();
  rmSync(project, { recursive: true, force: true });
  rmSync(open, { recursive: true, force: true });
});

type Call = { method: string; path: string; body?: string; headers?: Record<string, string>; token?: string | null };
/** A status that needs a real VM, produced by the named suite instead (it runs the real runtime). */
type Elsewhere = { elsewhere: string };
const j = (value: unknown) => JSON.stringify(value);
const big = " ".repeat(1024 * 1024 + 10);
const form = { "content-type": "text/plain" };

const bytes = { "content-type": "application/octet-stream" };
const exec = (body: unknown, extra: Partial<Call> = {}): Call => ({ method: "POST", path: "/api/sessions/ses_root/exec", body: j(body), ...extra });

const TABLE: Record<string, Record<number, Call | Elsewhere>> = {
  "POST /api/users": {
    201: { method: "POST", path: "/api/users", body: j({ name: "daemon" }) },
    400: { method: "POST", path: "/api/users", body: j({ name: "no-such-account" }) },
    401: { method: "POST", path: "/api/users", body: "{}", token: null },
    403: { method: "POST", path: "/api/users", body: j({ name: "bin" }), token: USER },
    409: { method: "POST", path: "/api/users", body: j({ name: "nobody" }) },
    413: { method: "POST", path: "/api/users", body: big },
    415: { method: "POST", path: "/api/users", body: "{}", headers: form },
    422: { method: "POST", path: "/api/users", body: j({ name: "Not A Name" }) },
  },
  "GET /api/users": {
    200: { method: "GET", path: "/api/users" },
    401: { method: "GET", path: "/api/users", token: null },
    403: { method: "GET", path: "/api/users", token: USER },
  },
  "DELETE /api/users/:name": {
    200: { method: "DELETE", path: "/api/users/daemon" },
    401: { method: "DELETE", path: "/api/users/daemon", token: null },
    403: { method: "DELETE", path: "/api/users/nobody", token: USER },
    404: { method: "DELETE", path: "/api/users/sys" },
    422: { method: "DELETE", path: "/api/users/Not%20A%20Name" },
  },
  "GET /api/health": { 200: { method: "GET", path: "/api/health", token: null } },
  "GET /api/openapi.json": {
    200: { method: "GET", path: "/api/openapi.json" },
    401: { method: "GET", path: "/api/openapi.json", token: null },
  },
  "POST /api/sessions": {
    201: { method: "POST", path: "/api/sessions", body: j({ id: "ses_new", directory: "/repo" }) },
    200: { method: "POST", path: "/api/sessions", body: j({ id: "ses_root", directory: "/repo" }) },
    400: { method: "POST", path: "/api/sessions", body: j({ id: "ses_deeper", parentID: "ses_deep39", directory: "/r" }) },
    401: { method: "POST", path: "/api/sessions", body: "{}", token: null },
    404: { method: "POST", path: "/api/sessions", body: j({ id: "ses_x", parentID: "ses_ghost", directory: "/r" }) },
    403: { method: "POST", path: "/api/sessions", body: j({ id: "ses_user_x", directory: "/root" }), token: USER },
    409: { method: "POST", path: "/api/sessions", body: j({ id: "ses_root", directory: "/elsewhere" }) },
    413: { method: "POST", path: "/api/sessions", body: big },
    415: { method: "POST", path: "/api/sessions", body: "{}", headers: form },
    422: { method: "POST", path: "/api/sessions", body: j({ id: "ses_y" }) },
  },
  "GET /api/sessions": {
    200: { method: "GET", path: "/api/sessions" },
    401: { method: "GET", path: "/api/sessions", token: null },
  },
  "GET /api/sessions/:id": {
    200: { method: "GET", path: "/api/sessions/ses_child" },
    400: { method: "GET", path: "/api/sessions/ses_deep39" },
    401: { method: "GET", path: "/api/sessions/ses_child", token: null },
    404: { method: "GET", path: "/api/sessions/ses_ghost" },
    409: { method: "GET", path: "/api/sessions/ses_cyc_a" },
    422: { method: "GET", path: "/api/sessions/..." },
  },
  "DELETE /api/sessions/:id": {
    200: { method: "DELETE", path: "/api/sessions/ses_new" },
    401: { method: "DELETE", path: "/api/sessions/ses_root", token: null },
    404: { method: "DELETE", path: "/api/sessions/ses_ghost" },
    422: { method: "DELETE", path: "/api/sessions/%2F" },
  },
  "GET /api/session-sandbox/:id": {
    200: { method: "GET", path: "/api/session-sandbox/ses_child" },
    400: { method: "GET", path: "/api/session-sandbox/ses_deep39" },
    401: { method: "GET", path: "/api/session-sandbox/ses_child", token: "nope" },
    404: { method: "GET", path: "/api/session-sandbox/ses_ghost" },
    409: { method: "GET", path: "/api/session-sandbox/ses_cyc_b" },
    422: { method: "GET", path: "/api/session-sandbox/%20" },
  },
  "PUT /api/session-sandbox/:id": {
    200: { method: "PUT", path: "/api/session-sandbox/ses_root", body: j({ sandboxed: true }) },
    400: { method: "PUT", path: "/api/session-sandbox/ses_root", body: j({ resources: { cpus: TEST_HOST.cpus * 2 } }) },
    401: { method: "PUT", path: "/api/session-sandbox/ses_root", body: "{}", token: null },
    403: { method: "PUT", path: "/api/session-sandbox/ses_nobody", body: j({ secrets: [] }), token: USER },
    404: { method: "PUT", path: "/api/session-sandbox/ses_ghost", body: "{}" },
    409: { method: "PUT", path: "/api/session-sandbox/ses_child", body: j({ sandboxed: false }) },
    413: { method: "PUT", path: "/api/session-sandbox/ses_root", body: big },
    415: { method: "PUT", path: "/api/session-sandbox/ses_root", body: "{}", headers: form },
    422: { method: "PUT", path: "/api/session-sandbox/ses_root", body: j({ sandboxed: 1 }) },
  },
  "POST /api/sessions/:id/exec": {
    200: { elsewhere: "test/actors/exec-api.test.ts" },
    202: { elsewhere: "test/actors/processes.test.ts" },
    400: exec({ command: "true", cwd: "/definitely/not/here" }),
    401: exec({ command: "true", cwd: "/" }, { token: null }),
    404: exec({ command: "true", cwd: "/" }, { path: "/api/sessions/ses_ghost/exec" }),
    409: exec({ command: "true", cwd: "/repo" }, { path: "/api/sessions/ses_off/exec" }),
    413: exec({ command: "x".repeat(1024 * 1024), cwd: "/" }),
    415: exec({ command: "true", cwd: "/" }, { headers: form }),
    422: exec({ cwd: "/" }),
    429: { elsewhere: "test/actors/cap.test.ts" },
    503: exec({ command: "true", cwd: project }, { path: "/api/sessions/ses_tmp/exec" }),
  },
  "GET /api/sessions/:id/files": {
    200: { elsewhere: "test/actors/files.test.ts" },
    400: { method: "GET", path: "/api/sessions/ses_deep39/files?path=/etc/hostname" },
    401: { method: "GET", path: "/api/sessions/ses_root/files?path=/etc/hostname", token: null },
    404: { method: "GET", path: "/api/sessions/ses_ghost/files?path=/etc/hostname" },
    409: { method: "GET", path: "/api/sessions/ses_off/files?path=/etc/hostname" },
    422: { method: "GET", path: "/api/sessions/ses_root/files?path=relative" },
    429: { elsewhere: "test/actors/cap.test.ts" },
    503: { method: "GET", path: "/api/sessions/ses_tmp/files?path=/etc/hostname" },
  },
  "PUT /api/sessions/:id/files": {
    201: { elsewhere: "test/actors/files.test.ts" },
    400: { method: "PUT", path: "/api/sessions/ses_deep39/files?path=/tmp/x", body: "x", headers: bytes },
    401: { method: "PUT", path: "/api/sessions/ses_root/files?path=/tmp/x", body: "x", headers: bytes, token: null },
    404: { method: "PUT", path: "/api/sessions/ses_ghost/files?path=/tmp/x", body: "x", headers: bytes },
    409: { method: "PUT", path: "/api/sessions/ses_off/files?path=/tmp/x", body: "x", headers: bytes },
    413: { elsewhere: "test/actors/files.test.ts" },
    415: { method: "PUT", path: "/api/sessions/ses_root/files?path=/tmp/x", body: "{}" },
    422: { method: "PUT", path: "/api/sessions/ses_root/files?path=/tmp/x&mode=999", body: "x", headers: bytes },
    429: { elsewhere: "test/actors/cap.test.ts" },
    503: { method: "PUT", path: "/api/sessions/ses_tmp/files?path=/tmp/x", body: "x", headers: bytes },
  },
  "POST /api/sessions/:id/activity": {
    200: { method: "POST", path: "/api/sessions/ses_child/activity", body: j({ state: "busy" }) },
    400: { method: "POST", path: "/api/sessions/ses_deep39/activity", body: j({ state: "busy" }) },
    401: { method: "POST", path: "/api/sessions/ses_root/activity", body: j({ state: "busy" }), token: null },
    404: { method: "POST", path: "/api/sessions/ses_ghost/activity", body: j({ state: "busy" }) },
    409: { method: "POST", path: "/api/sessions/ses_cyc_a/activity", body: j({ state: "busy" }) },
    413: { method: "POST", path: "/api/sessions/ses_root/activity", body: big },
    415: { method: "POST", path: "/api/sessions/ses_root/activity", body: "{}", headers: form },
    422: { method: "POST", path: "/api/sessions/ses_root/activity", body: j({ state: "sleeping" }) },
  },
  "POST /api/sessions/:id/ports": {
    201: { elsewhere: "test/actors/ports.test.ts" },
    400: { method: "POST", path: "/api/sessions/ses_deep39/ports", body: j({ port: 8000 }) },
    401: { method: "POST", path: "/api/sessions/ses_root/ports", body: j({ port: 8000 }), token: null },
    404: { method: "POST", path: "/api/sessions/ses_ghost/ports", body: j({ port: 8000 }) },
    409: { method: "POST", path: "/api/sessions/ses_root/ports", body: j({ port: 8000 }) },
    413: { method: "POST", path: "/api/sessions/ses_root/ports", body: big },
    415: { method: "POST", path: "/api/sessions/ses_root/ports", body: "{}", headers: form },
    422: { method: "POST", path: "/api/sessions/ses_root/ports", body: j({ port: 70000 }) },
  },
  "GET /api/sessions/:id/ports": {
    200: { method: "GET", path: "/api/sessions/ses_child/ports" },
    400: { method: "GET", path: "/api/sessions/ses_deep39/ports" },
    401: { method: "GET", path: "/api/sessions/ses_root/ports", token: null },
    404: { method: "GET", path: "/api/sessions/ses_ghost/ports" },
    409: { method: "GET", path: "/api/sessions/ses_cyc_a/ports" },
    422: { method: "GET", path: "/api/sessions/.../ports" },
  },
  "POST /api/sessions/:id/docker/start": {
    200: { elsewhere: "test/actors/docker.test.ts" },
    400: { method: "POST", path: "/api/sessions/ses_deep39/docker/start" },
    401: { method: "POST", path: "/api/sessions/ses_root/docker/start", token: null },
    404: { method: "POST", path: "/api/sessions/ses_ghost/docker/start" },
    // docker is off for the session
    409: { method: "POST", path: "/api/sessions/ses_root/docker/start" },
    422: { method: "POST", path: "/api/sessions/.../docker/start" },
  },
  "DELETE /api/sessions/:id/ports/:port": {
    200: { elsewhere: "test/actors/ports.test.ts" },
    400: { method: "DELETE", path: "/api/sessions/ses_deep39/ports/8000" },
    401: { method: "DELETE", path: "/api/sessions/ses_root/ports/8000", token: null },
    404: { method: "DELETE", path: "/api/sessions/ses_root/ports/8000" },
    409: { method: "DELETE", path: "/api/sessions/ses_cyc_a/ports/8000" },
    422: { method: "DELETE", path: "/api/sessions/ses_root/ports/0" },
  },
  "POST /api/sessions/:id/shell/tickets": {
    201: { method: "POST", path: "/api/sessions/ses_root/shell/tickets" },
    400: { method: "POST", path: "/api/sessions/ses_deep39/shell/tickets" },
    401: { method: "POST", path: "/api/sessions/ses_root/shell/tickets", token: null },
    404: { method: "POST", path: "/api/sessions/ses_ghost/shell/tickets" },
    409: { method: "POST", path: "/api/sessions/ses_cyc_a/shell/tickets" },
    422: { method: "POST", path: "/api/sessions/.../shell/tickets" },
  },
  "GET /api/sessions/:id/processes": {
    200: { method: "GET", path: "/api/sessions/ses_child/processes" },
    400: { method: "GET", path: "/api/sessions/ses_deep39/processes" },
    401: { method: "GET", path: "/api/sessions/ses_root/processes", token: null },
    404: { method: "GET", path: "/api/sessions/ses_ghost/processes" },
    409: { method: "GET", path: "/api/sessions/ses_cyc_a/processes" },
    422: { method: "GET", path: "/api/sessions/.../processes" },
  },
  "GET /api/sessions/:id/processes/:callID/logs": {
    200: { elsewhere: "test/actors/processes.test.ts" },
    400: { method: "GET", path: "/api/sessions/ses_deep39/processes/call-1/logs" },
    401: { method: "GET", path: "/api/sessions/ses_root/processes/call-1/logs", token: null },
    404: { method: "GET", path: "/api/sessions/ses_root/processes/call-1/logs" },
    409: { method: "GET", path: "/api/sessions/ses_cyc_a/processes/call-1/logs" },
    422: { method: "GET", path: "/api/sessions/ses_root/processes/call-1/logs?follow=maybe" },
  },
  "DELETE /api/sessions/:id/processes/:callID": {
    200: { elsewhere: "test/actors/processes.test.ts" },
    400: { method: "DELETE", path: "/api/sessions/ses_deep39/processes/call-1" },
    401: { method: "DELETE", path: "/api/sessions/ses_root/processes/call-1", token: null },
    404: { method: "DELETE", path: "/api/sessions/ses_root/processes/call-1" },
    409: { method: "DELETE", path: "/api/sessions/ses_cyc_a/processes/call-1" },
    422: { method: "DELETE", path: "/api/sessions/.../processes/call-1" },
  },
  "GET /api/sessions/:id/execs": {
    200: { method: "GET", path: "/api/sessions/ses_child/execs?limit=5" },
    400: { method: "GET", path: "/api/sessions/ses_deep39/execs" },
    401: { method: "GET", path: "/api/sessions/ses_root/execs", token: null },
    404: { method: "GET", path: "/api/sessions/ses_ghost/execs" },
    409: { method: "GET", path: "/api/sessions/ses_cyc_a/execs" },
    422: { method: "GET", path: "/api/sessions/ses_root/execs?limit=0" },
  },
  "POST /api/sessions/:id/execs/:callID/cancel": {
    200: { elsewhere: "test/actors/exec-history.test.ts" },
    400: { method: "POST", path: "/api/sessions/ses_deep39/execs/call-1/cancel" },
    401: { method: "POST", path: "/api/sessions/ses_root/execs/call-1/cancel", token: null },
    404: { method: "POST", path: "/api/sessions/ses_root/execs/call-1/cancel" },
    409: { method: "POST", path: "/api/sessions/ses_cyc_a/execs/call-1/cancel" },
    422: { method: "POST", path: "/api/sessions/.../execs/call-1/cancel" },
  },
  "GET /api/vms": {
    200: { method: "GET", path: "/api/vms" },
    401: { method: "GET", path: "/api/vms", token: null },
  },
  "POST /api/vms/sweep": {
    200: { method: "POST", path: "/api/vms/sweep", body: j({ idleForMs: 0 }) },
    400: { method: "POST", path: "/api/vms/sweep", body: "[1]" },
    401: { method: "POST", path: "/api/vms/sweep", body: "{}", token: null },
    413: { method: "POST", path: "/api/vms/sweep", body: big },
    415: { method: "POST", path: "/api/vms/sweep", body: "{}", headers: form },
    422: { method: "POST", path: "/api/vms/sweep", body: j({ idleForMs: -5 }) },
  },
  "DELETE /api/vms/:name": {
    200: { elsewhere: "test/actors/exec-api.test.ts" },
    401: { method: "DELETE", path: "/api/vms/ocm-session-000000000000", token: null },
    404: { method: "DELETE", path: "/api/vms/ocm-session-000000000000" },
    422: { method: "DELETE", path: "/api/vms/..%2Fetc" },
    503: { elsewhere: "test/actors/actor-crash.test.ts" },
  },
  "GET /api/vms/stats": {
    200: { method: "GET", path: "/api/vms/stats" },
    401: { method: "GET", path: "/api/vms/stats", token: null },
  },
  "GET /api/vms/:name/stats": {
    200: { elsewhere: "test/ops/metrics.test.ts" },
    401: { method: "GET", path: "/api/vms/ocm-session-000000000000/stats", token: null },
    404: { method: "GET", path: "/api/vms/ocm-session-000000000000/stats" },
    422: { method: "GET", path: "/api/vms/..%2Fetc/stats" },
  },
  "GET /api/events": {
    200: { elsewhere: "test/ops/events.test.ts" },
    401: { method: "GET", path: "/api/events", token: null },
    422: { method: "GET", path: "/api/events?since=not-an-event-id" },
  },
  "GET /metrics": {
    200: { method: "GET", path: "/metrics" },
    401: { method: "GET", path: "/metrics", token: null },
  },
  "GET /api/doctor": {
    200: { method: "GET", path: "/api/doctor" },
    401: { method: "GET", path: "/api/doctor", token: null },
  },
  "GET /api/ca": {
    200: { method: "GET", path: "/api/ca" },
    401: { method: "GET", path: "/api/ca", token: null },
  },
  "POST /api/ca/rotate": {
    200: { method: "POST", path: "/api/ca/rotate" },
    401: { method: "POST", path: "/api/ca/rotate", token: null },
    503: { elsewhere: "test/routes/ca.test.ts" },
  },
  "WS /api/sessions/:id/shell": {
    // Only the handshake's refusals are HTTP statuses; exec's other refusals come as messages on the socket.
    200: { elsewhere: "test/actors/shell.test.ts" },
    401: { method: "GET", path: "/api/sessions/ses_root/shell", headers: { upgrade: "websocket" }, token: null },
  },
  // The dashboard's page and assets: public (they hold no data), so never a 401.
  "GET /": { 200: { method: "GET", path: "/", token: null } },
  "GET /ui/terminal.js": { 200: { method: "GET", path: "/ui/terminal.js", token: null } },
  "GET /ui/terminal.css": { 200: { method: "GET", path: "/ui/terminal.css", token: null } },
  "GET /ui/app.js": { 200: { method: "GET", path: "/ui/app.js", token: null } },
  "GET /ui/app.css": { 200: { method: "GET", path: "/ui/app.css", token: null } },
  "GET /api/secrets": {
    200: { method: "GET", path: "/api/secrets" },
    401: { method: "GET", path: "/api/secrets", token: null },
  },
  "GET /api/settings/sandbox/defaults": {
    200: { method: "GET", path: "/api/settings/sandbox/defaults" },
    401: { method: "GET", path: "/api/settings/sandbox/defaults", token: null },
  },
  "GET /api/settings/sandbox": {
    200: { method: "GET", path: "/api/settings/sandbox" },
    401: { method: "GET", path: "/api/settings/sandbox", token: null },
  },
  "GET /api/images": {
    200: { method: "GET", path: "/api/images" },
    401: { method: "GET", path: "/api/images", token: null },
  },
  "POST /api/images": {
    202: { method: "POST", path: "/api/images", body: j({ kind: "oci", reference: "127.0.0.1:5000/team/node:22" }) },
    400: { method: "POST", path: "/api/images", body: j({ kind: "oci", reference: "Not A Reference" }) },
    401: { method: "POST", path: "/api/images", body: "{}", token: null },
    413: { method: "POST", path: "/api/images", body: big },
    415: { method: "POST", path: "/api/images", body: "{}", headers: form },
    422: { method: "POST", path: "/api/images", body: j({ kind: "tarball" }) },
  },
  "POST /api/images/prune": {
    200: { method: "POST", path: "/api/images/prune", body: j({ dryRun: true }) },
    400: { method: "POST", path: "/api/images/prune", body: "[1]" },
    401: { method: "POST", path: "/api/images/prune", body: "{}", token: null },
    413: { method: "POST", path: "/api/images/prune", body: big },
    415: { method: "POST", path: "/api/images/prune", body: "{}", headers: form },
    422: { method: "POST", path: "/api/images/prune", body: j({ olderThanMs: -1 }) },
  },
  "DELETE /api/images/:image": {
    200: { method: "DELETE", path: `/api/images/${encodeURIComponent("oci:127.0.0.1:5000/gone:v1")}` },
    401: { method: "DELETE", path: "/api/images/default", token: null },
    404: { method: "DELETE", path: "/api/images/oci%3Anothing" },
    409: { method: "DELETE", path: "/api/images/default" },
  },
  "PATCH /api/settings/sandbox": {
    200: { method: "PATCH", path: "/api/settings/sandbox", body: j({ idleStopMinutes: 31 }) },
    400: { method: "PATCH", path: "/api/settings/sandbox", body: j({ maxRunningVms: 0 }) },
    401: { method: "PATCH", path: "/api/settings/sandbox", body: "{}", token: null },
    413: { method: "PATCH", path: "/api/settings/sandbox", body: big },
    415: { method: "PATCH", path: "/api/settings/sandbox", body: "{}", headers: form },
    422: { method: "PATCH", path: "/api/settings/sandbox", body: j({ enabled: "yes" }) },
  },
};

/** What only the manager's own token may do: a user's token gets a 403 (the route's 401 request, with it). */
const MANAGER_ONLY = ["POST /api/vms/sweep", "DELETE /api/vms/:name", "GET /api/events", "GET /metrics", "GET /api/doctor", "GET /api/ca", "POST /api/ca/rotate", "GET /api/secrets", "GET /api/images", "POST /api/images", "POST /api/images/prune", "DELETE /api/images/:image", "PATCH /api/settings/sandbox"];
for (const route of MANAGER_ONLY) TABLE[route]![403] = { ...(TABLE[route]![401] as Call), token: USER };

describe("declared statuses", () => {
  test("the table covers every route and every declared status", () => {
    const declared = Object.fromEntries(
      t.app.routes.map((route) => [
        `${route.method} ${route.path}`,
        Object.keys((route.hooks as { response?: Record<string, unknown> }).response ?? { 200: 1, 401: 1 }).map(Number).sort(),
      ]),
    );
    const covered = Object.fromEntries(Object.entries(TABLE).map(([key, calls]) => [key, Object.keys(calls).map(Number).sort()]));
    expect(covered).toEqual(declared);
  });

  for (const [route, calls] of Object.entries(TABLE)) {
    for (const [status, call] of Object.entries(calls)) {
      if ("elsewhere" in call) continue;
      test(`${route} → ${status}`, async () => {
        const res = await t.request(call.method, call.path, { body: call.body, headers: call.headers, token: call.token === USER ? userToken : call.token });
        expect(res.status).toBe(Number(status));
        if (res.status >= 400) {
          const body = (await res.json()) as { code: string; message: string };
          expect(body.code).toMatch(/^[A-Z_]+$/);
          expect(body.message.length).toBeGreaterThan(10);
        }
      });
    }
  }
});
