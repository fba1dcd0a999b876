// OpenCode round-trip benchmark: `!echo hi` (POST /session/:id/shell) through a real `opencode serve` with
// our plugin and shim, in a sandboxed session (→ the session's VM) against the same in a session toggled off
// (→ the shim passes through to the host shell) and a stock directory (no plugin, no shim), same run.
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeTempDir } from "../test/helpers";
import { prepareLocalRuntime } from "../test/runtime/local-target";
import { createSession, makeProject, opencodeConfig, PLUGIN, shellMode, startTestManager, type TestManager } from "../test/e2e/fixture";
import { startMockLlm } from "../test/e2e/mock-llm";
import { startOpencode, type OpencodeServer } from "../test/e2e/opencode-server";
import { stats, timed, type Stats } from "./exec-support";

const RUNS = Number(process.env.BENCH_RUNS ?? 50);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5);

const root = makeTempDir("ss-bench-opencode-");
const llm = startMockLlm();
let manager: TestManager | undefined;
let oc: OpencodeServer | undefined;

async function measure(server: OpencodeServer, sessionID: string, expectSandbox: boolean): Promise<Stats> {
  const check = (output: string | undefined) => {
    if (output !== "hi\n") throw new Error(`unexpected output ${JSON.stringify(output)} (sandbox expected: ${expectSandbox})`);
  };
  for (let i = 0; i < WARMUP; i++) check((await shellMode(server, sessionID, "echo hi")).state.output);
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) samples.push(await timed(async () => check((await shellMode(server, sessionID, "echo hi")).state.output)));
  return stats(samples);
}

const fmt = (s: Stats) => `median ${s.median.toFixed(1)} ms, p95 ${s.p95.toFixed(1)} ms`;

try {
  manager = await startTestManager(await prepareLocalRuntime());
  const project = makeProject(root, "repo");
  const stock = makeProject(root, "stock");
  const { shell: _shell, plugin: _plugin, ...stockConfig } = opencodeConfig(llm.url, []);
  writeFileSync(join(stock, "opencode.json"), JSON.stringify(stockConfig));
  oc = await startOpencode({ root, projectDir: project, config: opencodeConfig(llm.url, [[PLUGIN, { url: manager.process.url, token: manager.process.token }]]) });

  const sandboxed = await createSession(oc);
  const host = await createSession(oc);
  const { vmName } = await manager.client.sandbox.get(sandboxed);
  await manager.client.sandbox.set(host, { sandboxed: false });
  const stockServer = oc.at(stock);
  const stockSession = await createSession(stockServer);

  const vm = await measure(oc, sandboxed, true);
  const passthrough = await measure(oc, host, false);
  const builtin = await measure(stockServer, stockSession, false);
  if (!(await manager.client.vms.list()).vms.some((entry) => entry.name === vmName)) throw new Error("the sandboxed session has no VM: its commands did not run there");

  console.log(`!echo hi through opencode serve 1.18.33, ${RUNS} runs after ${WARMUP} warm-up, one server, same run`);
  console.log(`  sandboxed session (shim → manager → VM):   ${fmt(vm)}`);
  console.log(`  toggled-off session (shim → host shell):   ${fmt(passthrough)}`);
  console.log(`  stock directory (no plugin, /bin/bash):    ${fmt(builtin)}`);
  console.log(`  ratio sandbox / host (same plugin):        ${(vm.median / passthrough.median).toFixed(2)}x median, ${(vm.p95 / passthrough.p95).toFixed(2)}x p95`);
  console.log(`  ratio sandbox / stock OpenCode:            ${(vm.median / builtin.median).toFixed(2)}x median, ${(vm.p95 / builtin.p95).toFixed(2)}x p95`);
} finally {
  await oc?.stop();
  llm.stop();
  await manager?.cleanUp();
  rmSync(root, { recursive: true, force: true });
}
