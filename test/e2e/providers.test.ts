// Two providers in one OpenCode process, in both plugin load orders (two real `opencode serve`s): the
// reference forge provider (workload) and ours (explicit/default). Each session gets the same winner in
// both orders; workload beats explicit beats default; a throwing claim blocks.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeTempDir } from "../helpers";
import { prepareLocalRuntime } from "../runtime/local-target";
import { createSession, eventually, FORGE, makeProject, opencodeConfig, PLUGIN, prompt, startTestManager, THROWING, type TestManager } from "./fixture";
import { startMockLlm, type MockLlm } from "./mock-llm";
import { startOpencode, type OpencodeServer } from "./opencode-server";

// Per file: bun applies the preload's default only to the first file of a multi-file run.
setDefaultTimeout(120_000);

let root: string;
let manager: TestManager;
let llm: MockLlm;
const servers: Record<string, { oc: OpencodeServer; throwingDir: string }> = {};

beforeAll(async () => {
  const image = await prepareLocalRuntime();
  root = makeTempDir("ss-e2e-providers-");
  manager = await startTestManager(image);
  llm = startMockLlm();
  await manager.client.settings.patch({ maxRunningVms: 10 }); // eight sessions, each its own VM
  const options = { url: manager.process.url, token: manager.process.token };
  const orders = { "forge-first": [[FORGE, options], [PLUGIN, options]], "ours-first": [[PLUGIN, options], [FORGE, options]] } as const;
  await Promise.all(
    Object.entries(orders).map(async ([name, plugins]) => {
      const home = join(root, name);
      const projectDir = makeProject(home, "repo");
      const throwingDir = makeProject(home, "throwing");
      const list = plugins.map((p) => [p[0], p[1]] as [string, Record<string, unknown>]);
      writeFileSync(join(throwingDir, "opencode.json"), JSON.stringify(opencodeConfig(llm.url, [...list, THROWING])));
      servers[name] = { oc: await startOpencode({ root: home, projectDir, config: opencodeConfig(llm.url, list) }), throwingDir };
    }),
  );
}, 600_000);

afterAll(async () => {
  for (const { oc } of Object.values(servers)) await oc.stop();
  llm?.stop();
  await manager?.cleanUp();
  if (root) rmSync(root, { recursive: true, force: true });
}, 120_000);

type Outcome = { provider: unknown; tier: unknown; status: string };

/** The winner for four kinds of session, as the stored tool parts say. */
async function winners(oc: OpencodeServer): Promise<Record<string, Outcome>> {
  const kinds = {
    "plain (default)": { title: "plain", explicit: false },
    "toggled on (explicit)": { title: "toggled", explicit: true },
    "forge loop (workload, default mode)": { title: "[forge] loop", explicit: false },
    "forge loop (workload, explicit mode)": { title: "[forge] loop 2", explicit: true },
  };
  const outcome: Record<string, Outcome> = {};
  for (const [kind, { title, explicit }] of Object.entries(kinds)) {
    const id = await createSession(oc, { title });
    await eventually(async () => (await manager.client.sessions.get(id).catch(() => null)) !== null);
    if (explicit) await manager.client.sandbox.set(id, { sandboxed: true });
    const [part] = await prompt(oc, id, "RUN:test -e /proc/1 && cat /proc/1/comm");
    if (part?.state.metadata?.sandbox !== true) throw new Error(`${kind}: ${JSON.stringify(part?.state)}`);
    expect(part?.state.output).not.toContain("systemd");
    outcome[kind] = { provider: part?.state.metadata?.sandboxProvider, tier: part?.state.metadata?.sandboxTier, status: part!.state.status };
  }
  return outcome;
}

describe("provider arbitration in a real OpenCode", () => {
  test("both load orders → the same winner per session; workload beats explicit beats default", async () => {
    const forgeFirst = await winners(servers["forge-first"]!.oc);
    const oursFirst = await winners(servers["ours-first"]!.oc);
    expect(forgeFirst).toEqual(oursFirst);
    expect(forgeFirst).toEqual({
      "plain (default)": { provider: "session-sandbox", tier: "default", status: "completed" },
      "toggled on (explicit)": { provider: "session-sandbox", tier: "explicit", status: "completed" },
      "forge loop (workload, default mode)": { provider: "forge", tier: "workload", status: "completed" },
      "forge loop (workload, explicit mode)": { provider: "forge", tier: "workload", status: "completed" },
    });
  });

  for (const name of ["forge-first", "ours-first"]) {
    test(`${name}: a third provider whose claim throws → the call is blocked, nothing runs`, async () => {
      const { oc, throwingDir } = servers[name]!;
      const at = oc.at(throwingDir);
      const marker = join(root, `${name}-throwing-marker`);
      const [part] = await prompt(at, await createSession(at, { title: "[forge] loop" }), `RUN:touch ${marker}`);
      expect(part?.state.status).toBe("error");
      expect(part?.state.error).toContain("claim exploded on purpose");
      expect(existsSync(marker)).toBe(false);
    });
  }
});
