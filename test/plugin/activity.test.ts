// The plugin's activity reporter on its own: OpenCode's events in, the reports a real manager (in this
// process, no runtime) receives out, read back from its event stream.
import { afterEach, describe, expect, test } from "bun:test";
import { createActivityReporter } from "../../plugin/activity";
import { createClient } from "../../sdk/index";
import { makeTempDir, makeTestApp, type TestApp } from "../helpers";
import { rmSync } from "node:fs";

let t: TestApp;
let project: string;
let stop = new AbortController();
afterEach(() => {
  stop.abort();
  t?.cleanup();
  rmSync(project, { recursive: true, force: true });
});

function make(options: { failing?: boolean; heartbeatMs?: number } = {}) {
  t = makeTestApp();
  project = makeTempDir("ss-activity-project-");
  const reports: Array<{ id: string; state: string; attempt: number | null }> = [];
  void (async () => {
    stop = new AbortController();
    for await (const event of t.events.subscribe(stop.signal)) {
      if (event.type === "activity") reports.push({ id: event.sessionID, state: event.state, attempt: event.attempt });
    }
  })();
  const logs: string[] = [];
  // Failing: a manager on a closed loopback port.
  const manager = options.failing ? createClient({ url: "http://127.0.0.1:9", token: "x".repeat(20) }) : t.client;
  const ensureRegistered = async (id: string) => void (await t.client.sessions.register({ id, directory: project }));
  const reporter = createActivityReporter({ manager: () => manager, ensureRegistered: options.failing ? async () => undefined : ensureRegistered, log: (message) => logs.push(message), heartbeatMs: options.heartbeatMs ?? 60_000 });
  const status = (sessionID: string, status: object) => reporter.onEvent({ type: "session.status", properties: { sessionID, status } });
  return { reports, logs, reporter, status };
}

describe("activity reporter", () => {
  test("session.status busy, retry and idle → reported once per change, with the retry's attempt", async () => {
    const { reports, reporter, status } = make();
    await status("ses_a", { type: "busy" });
    await status("ses_a", { type: "busy" });
    await status("ses_a", { type: "retry", attempt: 2, message: "overloaded", next: 0 });
    await status("ses_a", { type: "idle" });
    expect(reports).toEqual([
      { id: "ses_a", state: "busy", attempt: null },
      { id: "ses_a", state: "retry", attempt: 2 },
      { id: "ses_a", state: "idle", attempt: null },
    ]);
    reporter.close();
  });

  test("a question (or a permission) that waits → that state while OpenCode says busy; answered → busy again", async () => {
    const { reports, reporter, status } = make();
    await status("ses_a", { type: "busy" });
    await reporter.onEvent({ type: "question.asked", properties: { id: "que_1", sessionID: "ses_a", questions: [] } });
    await reporter.onEvent({ type: "permission.asked", properties: { id: "per_1", sessionID: "ses_a" } });
    await reporter.onEvent({ type: "question.replied", properties: { requestID: "que_1", sessionID: "ses_a", answers: [] } });
    await reporter.onEvent({ type: "permission.replied", properties: { requestID: "per_1", sessionID: "ses_a", reply: "once" } });
    expect(reports.map((r) => r.state)).toEqual(["busy", "question", "permission", "busy"]);
    reporter.close();
  });

  test("other events, and events without a session → nothing reported", async () => {
    const { reports, reporter } = make();
    await reporter.onEvent({ type: "message.updated", properties: { sessionID: "ses_a" } });
    await reporter.onEvent({ type: "session.status", properties: { status: { type: "busy" } } });
    expect(reports).toEqual([]);
    reporter.close();
  });

  test("a working session is repeated every heartbeat; an idle one is not", async () => {
    const { reporter, status } = make({ heartbeatMs: 20 });
    await status("ses_busy", { type: "busy" });
    await status("ses_idle", { type: "idle" });
    const first = t.services.activity.viewOf("ses_busy")!.reportedAt;
    const idleAt = t.services.activity.viewOf("ses_idle")!.reportedAt;
    await Bun.sleep(150);
    reporter.close();
    expect(t.services.activity.viewOf("ses_busy")!.reportedAt).toBeGreaterThan(first);
    expect(t.services.activity.viewOf("ses_idle")!.reportedAt).toBe(idleAt);
  });

  test("the manager down → logged, never thrown; the state is sent again at the next event", async () => {
    const { logs, reporter, status } = make({ failing: true });
    await status("ses_a", { type: "busy" });
    await status("ses_a", { type: "busy" });
    expect(logs).toEqual(["could not report a session's activity to the manager", "could not report a session's activity to the manager"]);
    reporter.close();
  });
});
