// Exec API additions over the real local runtime: cwd defaults to the session's
// directory, `Accept: text/plain` (curl over real HTTP), cancel by call id, and the bounded exec history.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { ExecNotFoundError } from "../../sdk/index";
import { TEST_TOKEN } from "../helpers";
import { eventually, makeActorFixture, type ActorFixture } from "./fixture";

let f: ActorFixture;
let repo: string;
let server: ReturnType<typeof Bun.serve>;
beforeAll(async () => {
  f = await makeActorFixture();
  repo = f.makeRepo("hist");
  mkdirSync(join(repo, "sub"));
  await f.client.sessions.register({ id: "ses_h", directory: repo });
  await f.client.sessions.register({ id: "ses_h_child", parentID: "ses_h", directory: join(repo, "sub") });
  server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => f.app.handle(request) });
}, 600_000);
afterAll(async () => {
  await server?.stop(true);
  await f?.teardown();
}, 120_000);

/** curl over real HTTP, as a user would type it. */
async function curl(path: string, body: unknown, accept = "text/plain") {
  const child = Bun.spawn(
    ["curl", "-sS", "-N", "-D", "-", "-H", `authorization: Bearer ${TEST_TOKEN}`, "-H", "content-type: application/json", "-H", `accept: ${accept}`, "--data-binary", JSON.stringify(body), `http://127.0.0.1:${server.port}${path}`],
    { stdout: "pipe", stderr: "pipe" },
  );
  const [text, code] = await Promise.all([new Response(child.stdout).text(), child.exited]);
  const split = text.indexOf("\r\n\r\n");
  return { code, headers: text.slice(0, split).toLowerCase(), body: text.slice(split + 4) };
}

describe("exec: cwd, text/plain, cancel", () => {
  test("no cwd → runs in the session's own directory (a child's too)", async () => {
    expect((await f.client.run("ses_h", { command: "pwd" })).stdout).toBe(`${repo}\n`);
    expect((await f.client.run("ses_h_child", { command: "pwd" })).stdout).toBe(`${join(repo, "sub")}\n`);
  });

  test("Accept: text/plain → raw stdout and stderr as they come, then the status line (curl)", async () => {
    const ok = await curl("/api/sessions/ses_h/exec", { command: "echo out; printf 'é漢'" });
    expect(ok.code).toBe(0);
    expect(ok.headers).toContain("content-type: text/plain; charset=utf-8");
    expect(ok.headers).toMatch(/x-session-sandbox-call-id: [0-9a-z]{26}/);
    expect(ok.headers).toMatch(/x-session-sandbox-vm: ocm-session-/);
    // printf leaves no newline: one is put before the status line, which is the last line.
    expect(ok.body).toBe("out\né漢\nsession-sandbox: exit=0 timedOut=false cancelled=false\n");
    // stderr comes in the same stream (its order against stdout is the order the chunks arrive in).
    const err = await curl("/api/sessions/ses_h/exec", { command: "echo err >&2" });
    expect(err.body).toBe("err\nsession-sandbox: exit=0 timedOut=false cancelled=false\n");
    const failed = await curl("/api/sessions/ses_h/exec", { command: "echo bye; exit 7" });
    expect(failed.body).toBe("bye\nsession-sandbox: exit=7 timedOut=false cancelled=false\n");
    const timedOut = await curl("/api/sessions/ses_h/exec", { command: "sleep 30", timeoutMs: 300 });
    expect(timedOut.body).toMatch(/^session-sandbox: exit=\d+ timedOut=true cancelled=false\n$/);
  });

  test("Accept naming NDJSON, or none → the NDJSON stream as before", async () => {
    const both = await curl("/api/sessions/ses_h/exec", { command: "echo x" }, "application/x-ndjson, text/plain");
    expect(both.headers).toContain("content-type: application/x-ndjson");
    const lines = both.body.trim().split("\n").map((line) => JSON.parse(line));
    expect(lines[0]).toMatchObject({ type: "started", callID: expect.stringMatching(/^[0-9A-Z]{26}$/) });
    expect(lines.at(-1)).toEqual({ type: "exit", exitCode: 0, timedOut: false, cancelled: false, oomKilled: false });
  });

  test("a refusal with Accept: text/plain → still the JSON error, nothing ran", async () => {
    const refused = await curl("/api/sessions/ses_h/exec", { command: "true", cwd: "/definitely/not/here" });
    expect(refused.headers).toMatch(/^http\/1.1 400/);
    expect(JSON.parse(refused.body)).toMatchObject({ code: "PATH_NOT_FOUND" });
  });

  test("cancel by call id → the command ends cancelled; the answer is its history entry", async () => {
    const events = f.client.exec("ses_h", { command: "echo started; sleep 300", callID: "call-cancel-1" });
    const first = await events.next();
    expect(first.value).toMatchObject({ type: "started", callID: "call-cancel-1" });
    expect((await events.next()).value).toMatchObject({ type: "stdout" }); // it runs: "started" is in its output
    const answer = await f.client.execs.cancel("ses_h_child", "call-cancel-1"); // any session of the tree
    expect(answer.callID).toBe("call-cancel-1");
    expect(answer.execs).toHaveLength(1);
    expect(answer.execs[0]).toMatchObject({ callID: "call-cancel-1", cancelled: true, command: "echo started; sleep 300", outputTail: "started\n" });
    const rest = [];
    for await (const event of events) rest.push(event);
    expect(rest.at(-1)).toMatchObject({ type: "exit", cancelled: true });
  });

  test("cancel while the command waits for its VM → it is killed as soon as it starts", async () => {
    await f.client.vms.remove((await f.client.sandbox.get("ses_h")).vmName);
    const result = f.client.run("ses_h", { command: "sleep 300", callID: "call-cancel-early" });
    await eventually(async () => {
      const err = await f.client.execs.cancel("ses_h", "call-cancel-early").catch((e) => e);
      return !(err instanceof ExecNotFoundError);
    });
    expect(await result).toMatchObject({ cancelled: true });
  });

  test("cancel of an unknown or finished call id → 404 EXEC_NOT_FOUND", async () => {
    const err = await f.client.execs.cancel("ses_h", "call-cancel-1").catch((e) => e);
    expect(err).toBeInstanceOf(ExecNotFoundError);
    expect(err.status).toBe(404);
    expect(err.message).toContain("call-cancel-1");
  });
});

describe("exec history", () => {
  test("GET /api/sessions/:id/execs → newest first, outcome, duration and the output tail", async () => {
    await f.client.run("ses_h", { command: "echo first" });
    await f.client.run("ses_h_child", { command: "echo second >&2; exit 3" });
    const { execs } = await f.client.execs.list("ses_h", { limit: 2 });
    expect(execs.map((e) => [e.sessionID, e.command, e.exitCode, e.outputTail])).toEqual([
      ["ses_h_child", "echo second >&2; exit 3", 3, "second\n"],
      ["ses_h", "echo first", 0, "first\n"],
    ]);
    const [newest] = execs;
    expect(newest!.id > execs[1]!.id).toBe(true);
    expect(newest).toMatchObject({ rootSessionID: "ses_h", cwd: join(repo, "sub"), timedOut: false, cancelled: false, error: null, outputBytes: 7 });
    expect(newest!.durationMs).toBe(newest!.finishedAt! - newest!.startedAt);
    // A child sees its own commands only.
    const child = await f.client.execs.list("ses_h_child");
    expect(child.execs.every((e) => e.sessionID === "ses_h_child")).toBe(true);
  });

  test("a long output → only its last 4 KiB is kept, with the byte count", async () => {
    await f.client.run("ses_h", { command: "head -c 100000 /dev/zero | tr '\\0' a; echo END" });
    const [entry] = (await f.client.execs.list("ses_h", { limit: 1 })).execs;
    expect(entry!.outputBytes).toBe(100_004);
    expect(entry!.outputTail).toBe(`${"a".repeat(4092)}END\n`);
  });

  test("a running command → listed with finishedAt null", async () => {
    const controller = new AbortController();
    const events = f.client.exec("ses_h", { command: "echo go; sleep 300" }, controller.signal);
    for await (const event of events) if (event.type === "stdout") break;
    const [running] = (await f.client.execs.list("ses_h", { limit: 1 })).execs;
    expect(running).toMatchObject({ command: "echo go; sleep 300", finishedAt: null, exitCode: null, durationMs: null });
    controller.abort();
    await eventually(async () => (await f.client.execs.list("ses_h", { limit: 1 })).execs[0]!.finishedAt !== null);
  });

  test("limit out of range → 422; unknown session → 404", async () => {
    expect((await f.request("GET", "/api/sessions/ses_h/execs?limit=0")).status).toBe(422);
    expect((await f.request("GET", "/api/sessions/ses_h/execs?limit=201")).status).toBe(422);
    expect((await f.request("GET", "/api/sessions/ses_h/execs?limit=abc")).status).toBe(422);
    expect((await f.request("GET", "/api/sessions/ses_ghost/execs")).status).toBe(404);
  });

  test("the history is bounded per root: the oldest go first", async () => {
    const { EXEC_HISTORY_PER_ROOT } = await import("../../app/services/exec-history");
    const before = f.db.query<{ n: number }, []>("SELECT count(*) AS n FROM exec_history").get()!.n;
    // Fill through the repository (200 real commands would take the suite's whole budget), then run one real command.
    const insert = f.db.query("INSERT INTO exec_history (id, root_session_id, session_id, call_id, vm_name, command, cwd, started_at) VALUES (?, 'ses_h', 'ses_h', 'c', 'vm', ?, '/', 0)");
    for (let i = 0; i < EXEC_HISTORY_PER_ROOT; i++) insert.run(`00000000000000000000${String(i).padStart(6, "0")}`, `old ${i}`);
    expect(before).toBeGreaterThan(0);
    await f.client.run("ses_h", { command: "echo newest" });
    const rows = f.db.query<{ command: string }, []>("SELECT command FROM exec_history WHERE root_session_id = 'ses_h' ORDER BY id DESC").all();
    expect(rows).toHaveLength(EXEC_HISTORY_PER_ROOT);
    expect(rows[0]!.command).toBe("echo newest");
    expect(rows.some((row) => row.command === "old 0")).toBe(false);
  });

  test("a history that cannot be written (SQLite refuses writes) → the command still runs and answers", async () => {
    const count = () => f.db.query<{ n: number }, []>("SELECT count(*) AS n FROM exec_history").get()!.n;
    const before = count();
    f.db.run("PRAGMA query_only = ON");
    try {
      expect(await f.client.run("ses_h", { command: "echo unrecorded" })).toMatchObject({ exitCode: 0, stdout: "unrecorded\n" });
    } finally {
      f.db.run("PRAGMA query_only = OFF");
    }
    expect(count()).toBe(before);
  });

  test("deleting the root session → its history goes with it", async () => {
    await f.client.sessions.register({ id: "ses_gone", directory: repo });
    await f.client.run("ses_gone", { command: "true" });
    expect((await f.client.execs.list("ses_gone")).execs).toHaveLength(1);
    await f.client.sessions.delete("ses_gone");
    expect(f.db.query("SELECT * FROM exec_history WHERE root_session_id = 'ses_gone'").all()).toEqual([]);
  });
});
