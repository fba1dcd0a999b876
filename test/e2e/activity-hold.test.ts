// Idle that understands the agent, end to end: a real `opencode serve` with our plugin and a scripted model
// (which "thinks" for as long as a test holds its answer), against a manager in this process on the real
// local runtime, with its clock injected so that half an hour passes at once. The plugin reports each
// session's activity from OpenCode's own events; the sweep and the cap read it.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { websocket } from "elysia/ws";
import { makeActorFixture, type ActorFixture } from "../actors/fixture";
import { makeTempDir, TEST_TOKEN } from "../helpers";
import { createSession, eventually, makeProject, opencodeConfig, PLUGIN, prompt } from "./fixture";
import { startMockLlm, type MockLlm } from "./mock-llm";
import { startOpencode, type OpencodeServer } from "./opencode-server";
import type { SandboxEvent } from "../../sdk/index";

setDefaultTimeout(120_000);

const MINUTE = 60_000;
/** The plugin repeats a working session's report this often here (60 s by default). */
const HEARTBEAT_MS = 200;

let f: ActorFixture;
let server: ReturnType<typeof Bun.serve>;
let root: string;
let llm: MockLlm;
let oc: OpencodeServer;
const seen: SandboxEvent[] = [];
const stopEvents = new AbortController();

function pluginConfig(scratch: string, project: string) {
  const tokenFile = join(scratch, "token");
  writeFileSync(tokenFile, TEST_TOKEN, { mode: 0o600 });
  return { root: scratch, projectDir: project, config: opencodeConfig(llm.url, [[PLUGIN, { url: `http://127.0.0.1:${server.port}`, tokenFile, activityHeartbeatMs: HEARTBEAT_MS }]]), env: { OPENCODE_ENABLE_QUESTION_TOOL: "1" } };
}

beforeAll(async () => {
  f = await makeActorFixture();
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", idleTimeout: 0, fetch: f.app.fetch, websocket: websocket as unknown as Bun.WebSocketHandler<never> });
  f.app.server = server;
  void (async () => {
    for await (const event of f.events.subscribe(stopEvents.signal)) seen.push(event as SandboxEvent);
  })();
  root = makeTempDir("ss-e2e-activity-");
  llm = startMockLlm();
  oc = await startOpencode(pluginConfig(root, makeProject(root, "repo")));
}, 600_000);

afterAll(async () => {
  stopEvents.abort();
  for (const name of ["think", "cap", "busy", "held", "crash"]) llm?.release(name);
  await oc?.stop();
  llm?.stop();
  server?.stop(true);
  await f?.teardown();
  if (root) rmSync(root, { recursive: true, force: true });
}, 120_000);

/** Starts a turn whose model answer is held until llm.release(gate); resolves when the turn ends. */
function heldTurn(target: OpencodeServer, sessionID: string, gate: string): Promise<unknown> {
  return target.call("POST", `/session/${sessionID}/message`, { parts: [{ type: "text", text: `HOLD:${gate}` }] }).catch((error: unknown) => error);
}

const activityOf = async (sessionID: string) => (await f.client.sessions.list()).sessions.find((s) => s.id === sessionID)?.activity ?? null;
const vmOf = async (sessionID: string) => (await f.client.sandbox.get(sessionID)).vmName;
const statusOf = (vmName: string) => f.supervisor.list().find((record) => record.vmName === vmName)?.status ?? "absent";

/** Time passes (the injected clock), and the plugin's heartbeat is heard after it, as it would be. */
async function timePasses(ms: number, heartbeatOf?: string): Promise<void> {
  f.clock.advance(ms);
  if (heartbeatOf) await eventually(async () => ((await activityOf(heartbeatOf))?.reportedAt ?? 0) >= f.clock.now);
}

describe("activity from the plugin holds a working session's VM", () => {
  test("a session whose model thinks longer than idleStopMinutes between two commands → keeps its VM and home; its activity shows busy, then idle", async () => {
    const id = await createSession(oc);
    const [first] = await prompt(oc, id, "RUN:echo kept > ~/state.txt && echo written");
    expect(first?.state.output).toContain("written");
    const vmName = await vmOf(id);
    const turn = heldTurn(oc, id, "think");
    await eventually(async () => (await activityOf(id))?.state === "busy");
    await timePasses(31 * MINUTE, id);
    expect(await f.supervisor.sweep()).not.toContain(vmName);
    expect(statusOf(vmName)).toBe("running");
    llm.release("think");
    await turn;
    await eventually(async () => (await activityOf(id))?.state === "idle");
    const [second] = await prompt(oc, id, "RUN:cat ~/state.txt");
    expect(second?.state.output).toContain("kept");
    const states = seen.filter((e) => e.type === "activity" && e.sessionID === id).map((e) => (e as { state: string }).state);
    expect(states).toContain("busy");
    expect(states.at(-1)).toBe("idle");
  });

  test("a session waiting on a question → quiescent: removed with its volume once idle for idleStopMinutes", async () => {
    const id = await createSession(oc);
    await prompt(oc, id, "RUN:echo q > ~/q.txt");
    const vmName = await vmOf(id);
    const ask = { questions: [{ question: "Go on?", header: "Confirm", options: [{ label: "yes", description: "go on" }] }] };
    const turn = oc.call("POST", `/session/${id}/message`, { parts: [{ type: "text", text: `CALL:question ${JSON.stringify(ask)}` }] }).catch((error: unknown) => error);
    await eventually(async () => (await activityOf(id))?.state === "question");
    await timePasses(29 * MINUTE);
    expect(await f.supervisor.sweep()).not.toContain(vmName);
    await timePasses(2 * MINUTE);
    expect(await f.supervisor.sweep()).toContain(vmName);
    expect((await f.driver.list({})).map((vm) => vm.name)).not.toContain(vmName);
    const pending = await oc.call<Array<{ id: string; sessionID: string }>>("GET", "/question");
    for (const question of pending.filter((q) => q.sessionID === id)) await oc.call("POST", `/question/${question.id}/reject`);
    await turn;
  });

  test("idleSuspendMinutes → a quiescent VM is stopped first (volume kept); its next command restarts it with its home intact; removed at idleStopMinutes", async () => {
    await f.client.settings.patch({ idleSuspendMinutes: 5 });
    try {
      const id = await createSession(oc);
      await prompt(oc, id, "RUN:echo home-kept > ~/h.txt");
      const vmName = await vmOf(id);
      await timePasses(6 * MINUTE);
      expect(await f.supervisor.sweep()).not.toContain(vmName);
      await eventually(() => statusOf(vmName) === "stopped");
      expect(seen.some((e) => e.type === "vm" && e.vmName === vmName && e.status === "stopped" && e.reason === "suspend")).toBe(true);
      expect((await f.driver.list({})).find((vm) => vm.name === vmName)?.status).toBe("stopped");
      const [again] = await prompt(oc, id, "RUN:cat ~/h.txt");
      expect(again?.state.output).toContain("home-kept");
      expect(statusOf(vmName)).toBe("running");
      await timePasses(31 * MINUTE);
      expect(await f.supervisor.sweep()).toContain(vmName);
    } finally {
      await f.client.settings.patch({ idleSuspendMinutes: null });
    }
  });

  test("the cap evicts only a quiescent VM, and refuses naming the working session when none is", async () => {
    await f.client.settings.patch({ maxRunningVms: 1 });
    try {
      await f.supervisor.sweep(0); // no VM of the earlier tests holds the one place
      const busy = await createSession(oc);
      await prompt(oc, busy, "RUN:echo a");
      const busyVm = await vmOf(busy);
      const turn = heldTurn(oc, busy, "cap");
      await eventually(async () => (await activityOf(busy))?.state === "busy");
      await timePasses(10 * MINUTE, busy); // idle far beyond the exec timeout, yet working
      const other = await createSession(oc);
      const [refused] = await prompt(oc, other, "RUN:echo b");
      expect(refused?.state.status).toBe("error");
      expect(refused?.state.error ?? "").toContain(`its session(s) ${busy} working`);
      expect(statusOf(busyVm)).toBe("running");
      llm.release("cap");
      await turn;
      await eventually(async () => (await activityOf(busy))?.state === "idle");
      const [admitted] = await prompt(oc, other, "RUN:echo b-ran");
      expect(admitted?.state.output).toContain("b-ran");
      await eventually(() => statusOf(busyVm) === "stopped");
    } finally {
      await f.client.settings.patch({ maxRunningVms: null });
    }
  });

  test("holdWhileBusy: false → a working session's VM is removed at the idle time", async () => {
    await f.client.settings.patch({ holdWhileBusy: false });
    try {
      const id = await createSession(oc);
      await prompt(oc, id, "RUN:echo x");
      const vmName = await vmOf(id);
      const turn = heldTurn(oc, id, "busy");
      await eventually(async () => (await activityOf(id))?.state === "busy");
      await timePasses(31 * MINUTE, id);
      expect(await f.supervisor.sweep()).toContain(vmName);
      llm.release("busy");
      await turn;
    } finally {
      await f.client.settings.patch({ holdWhileBusy: null });
    }
  });

  test("a session busy past maxHoldMinutes → no longer holds (event: max-hold); the sweep removes its VM", async () => {
    await f.client.settings.patch({ maxHoldMinutes: 60 });
    try {
      const id = await createSession(oc);
      await prompt(oc, id, "RUN:echo x");
      const vmName = await vmOf(id);
      const turn = heldTurn(oc, id, "held");
      await eventually(async () => (await activityOf(id))?.state === "busy");
      await timePasses(59 * MINUTE, id);
      expect(await f.supervisor.sweep()).not.toContain(vmName);
      await timePasses(2 * MINUTE, id);
      expect(await f.supervisor.sweep()).toContain(vmName);
      expect(seen.some((e) => e.type === "activity" && e.sessionID === id && e.released === "max-hold")).toBe(true);
      llm.release("held");
      await turn;
    } finally {
      await f.client.settings.patch({ maxHoldMinutes: null });
    }
  });

  test("OpenCode killed mid-turn → its session stops being reported and releases the hold (event: stale); the sweep removes the VM", async () => {
    // Its own scratch (HOME and data): two OpenCode processes never share one database.
    const scratch = makeTempDir("ss-e2e-activity-crash-");
    const doomed = await startOpencode(pluginConfig(scratch, makeProject(scratch, "crashing")));
    try {
      const id = await createSession(doomed);
      await prompt(doomed, id, "RUN:echo x");
      const vmName = await vmOf(id);
      void heldTurn(doomed, id, "crash");
      await eventually(async () => (await activityOf(id))?.state === "busy");
      process.kill(doomed.pid, "SIGKILL");
      await timePasses(2 * MINUTE);
      expect(f.services.activity.holdOf(id).held).toBe(true); // within the reporting bound: still working
      await timePasses(29 * MINUTE);
      expect(await f.supervisor.sweep()).toContain(vmName);
      expect(seen.some((e) => e.type === "activity" && e.sessionID === id && e.released === "stale")).toBe(true);
    } finally {
      llm.release("crash");
      await doomed.stop().catch(() => undefined);
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
