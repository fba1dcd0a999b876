// Fail closed, end to end: for a session that is (or cannot be proven not to be) sandboxed, `touch
// <marker>` through the agent's bash tool and through `!` shell mode never reaches the host when the
// manager is stopped, answers 500, hangs, has no usable runtime, or when another provider's claim throws.
// One real `opencode serve`; each case is its own project directory with its own plugin options.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeTempDir } from "../helpers";
import { prepareLocalRuntime } from "../runtime/local-target";
import { createSession, eventually, makeProject, opencodeConfig, PLUGIN, prompt, shellMode, startTestManager, THROWING, type TestManager } from "./fixture";
import { startMockLlm, type MockLlm } from "./mock-llm";
import { startOpencode, type OpencodeServer } from "./opencode-server";

// Per file: bun applies the preload's default only to the first file of a multi-file run.
setDefaultTimeout(120_000);

let root: string;
let image: string;
let llm: MockLlm;
let oc: OpencodeServer;
const managers: TestManager[] = [];
const servers: Array<{ stop(closeActive?: boolean): void }> = [];
const dirs: Record<string, string> = {};

/** A project directory whose plugin talks to `url` with `token`. */
function project(name: string, url: string, token: string, extra: Record<string, unknown> = {}, plugins: string[] = []): string {
  const dir = makeProject(root, name);
  writeFileSync(join(dir, "opencode.json"), JSON.stringify(opencodeConfig(llm.url, [...plugins, [PLUGIN, { url, token, managerTimeoutMs: 1_500, ...extra }]])));
  dirs[name] = dir;
  return dir;
}

beforeAll(async () => {
  image = await prepareLocalRuntime();
  root = makeTempDir("ss-e2e-closed-");
  llm = startMockLlm();
  // Stand-ins for a broken manager, on loopback: one answers 500 to everything, one never answers.
  const erroring = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => Response.json({ error: "boom" }, { status: 500 }) });
  const hanging = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Promise<Response>(() => undefined) });
  servers.push(erroring, hanging);
  const [live, stopped, noRuntime] = await Promise.all([
    startTestManager(image),
    startTestManager(image),
    startTestManager(image, { SANDBOX_RUNTIME: "msb", MSB_PATH: "/nonexistent/msb" }),
  ]);
  managers.push(live, stopped, noRuntime);
  project("stopped", stopped.process.url, stopped.process.token);
  project("err500", `http://127.0.0.1:${erroring.port}`, "x");
  project("hang", `http://127.0.0.1:${hanging.port}`, "x");
  project("noruntime", noRuntime.process.url, noRuntime.process.token);
  project("throwing", live.process.url, live.process.token, {}, [THROWING]);
  oc = await startOpencode({ root, projectDir: dirs.stopped!, config: opencodeConfig(llm.url, [[PLUGIN, { url: stopped.process.url, token: stopped.process.token, managerTimeoutMs: 1_500 }]]) });
}, 600_000);

afterAll(async () => {
  await oc?.stop();
  llm?.stop();
  for (const server of servers) server.stop(true);
  for (const manager of managers) await manager.cleanUp();
  if (root) rmSync(root, { recursive: true, force: true });
}, 120_000);

/** Runs `touch` through the agent and through `!`; both must be refused with a reason, and no marker appear. */
async function expectRefused(name: string, reason: RegExp, sessionID?: string): Promise<void> {
  const at = oc.at(dirs[name]!);
  const id = sessionID ?? (await createSession(at));
  const agentMarker = join(root, `${name}-agent-marker`);
  const shellMarker = join(root, `${name}-shell-marker`);
  const [part] = await prompt(at, id, `RUN:touch ${agentMarker}`);
  expect(part?.state.status).toBe("error");
  expect(part?.state.error).toMatch(reason);
  expect(part?.state.error).toContain("Not run");
  const shell = await shellMode(at, id, `touch ${shellMarker}`);
  expect(shell.state.output).toContain("session-sandbox: not run");
  expect(shell.state.metadata?.exit ?? 126).toBe(126);
  expect(existsSync(agentMarker)).toBe(false);
  expect(existsSync(shellMarker)).toBe(false);
}

describe("fail closed", () => {
  test("manager stopped after the session registered → refused, marker never on the host", async () => {
    const manager = managers[1]!;
    const at = oc.at(dirs.stopped!);
    const sessionID = await createSession(at);
    await eventually(async () => (await manager.client.sessions.get(sessionID).catch(() => null)) !== null);
    await manager.process.stop();
    await expectRefused("stopped", /cannot reach the manager|Unable to connect|ECONNREFUSED/i, sessionID);
  });

  test("manager answering 500 → refused", async () => {
    await expectRefused("err500", /500/);
  });

  test("manager hanging past the timeout → refused after the timeout", async () => {
    const started = performance.now();
    await expectRefused("hang", /cannot reach the manager|timed out|timeout/i);
    expect(performance.now() - started).toBeLessThan(30_000);
  });

  test("no usable runtime (manager answers 503) → refused with the runtime's reason", async () => {
    await expectRefused("noruntime", /runtime/i);
  });

  test("another provider's claim throws → the call is blocked, nothing runs", async () => {
    await expectRefused("throwing", /claim exploded on purpose/);
  });
});
