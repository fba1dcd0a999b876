// OpenCode round-trip benchmark: `!echo hi` (POST /session/:id/shell) through a real `opencode serve` with
// our plugin and shim, in a sandboxed session (→ the session's VM) against the same in a session toggled off
// (→ the shim passes through to the host shell) and a stock directory (no plugin, no shim), same run. A
// fourth project runs the shim with SANDBOX_SHIM=bun (the Bun shim-main.ts path) so the compiled helper and
// the Bun path are compared in the same run. Runs are interleaved (one of each kind per round, the order
// rotating), so the machine's drift hits every kind alike. The breakdown rows time the parts alone in the
// same rounds: the shim spawned directly (→ manager → VM), the SDK's exec alone, and a host `sh -c`.
import { chmodSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeTempDir } from "../test/helpers";
import { prepareLocalRuntime } from "../test/runtime/local-target";
import { createSession, eventually, makeProject, opencodeConfig, PLUGIN, SHIM, shellMode, startTestManager, type TestManager } from "../test/e2e/fixture";
import { startMockLlm } from "../test/e2e/mock-llm";
import { startOpencode, type OpencodeServer } from "../test/e2e/opencode-server";
import { stats, timed, type Stats } from "./exec-support";

const RUNS = Number(process.env.BENCH_RUNS ?? 50);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5);

const root = makeTempDir("ss-bench-opencode-");
const llm = startMockLlm();
let manager: TestManager | undefined;
let oc: OpencodeServer | undefined;

/** `cpu`: user + system CPU ms of each spawned process, which the machine's load barely moves. */
type Kind = { name: string; run: () => Promise<string | undefined>; samples: number[]; cpu?: number[] };

const shellKind = (name: string, server: OpencodeServer, sessionID: string): Kind => ({
  name,
  run: async () => (await shellMode(server, sessionID, "echo hi")).state.output,
  samples: [],
});
function spawnKind(name: string, argv: string[], env: Record<string, string> = {}, cwd?: string): Kind {
  const cpu: number[] = [];
  const run = async () => {
    const child = Bun.spawn(argv, { cwd, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env }, stdout: "pipe" });
    const [output] = await Promise.all([new Response(child.stdout).text(), child.exited]);
    const usage = child.resourceUsage();
    if (usage) cpu.push(Number(usage.cpuTime.user + usage.cpuTime.system) / 1000);
    return output;
  };
  return { name, run, samples: [], cpu };
}

async function once(kind: Kind): Promise<number> {
  return timed(async () => {
    const output = await kind.run();
    if (output !== "hi\n") throw new Error(`${kind.name}: unexpected output ${JSON.stringify(output)}`);
  });
}

async function measure(kinds: Kind[]): Promise<Map<string, Stats & { cpu?: Stats }>> {
  for (let i = 0; i < WARMUP; i++) for (const kind of kinds) await once(kind);
  for (let round = 0; round < RUNS; round++) {
    for (let k = 0; k < kinds.length; k++) {
      const kind = kinds[(round + k) % kinds.length]!;
      kind.samples.push(await once(kind));
    }
  }
  // The warm-up's CPU samples are dropped with the warm-up.
  return new Map(kinds.map((kind) => [kind.name, { ...stats(kind.samples), cpu: kind.cpu?.length ? stats(kind.cpu.slice(WARMUP)) : undefined }]));
}

const fmt = (s: Stats) => `median ${s.median.toFixed(1)} ms, p95 ${s.p95.toFixed(1)} ms`;
const ratio = (a: Stats, b: Stats) => `${(a.median / b.median).toFixed(2)}x median, ${(a.p95 / b.p95).toFixed(2)}x p95`;

try {
  manager = await startTestManager(await prepareLocalRuntime());
  const options = { url: manager.process.url, token: manager.process.token };
  const project = makeProject(root, "repo");
  const bunProject = makeProject(root, "repo-bun-shim");
  const stock = makeProject(root, "stock");
  const { shell: _shell, plugin: _plugin, ...stockConfig } = opencodeConfig(llm.url, []);
  writeFileSync(join(stock, "opencode.json"), JSON.stringify(stockConfig));
  // The same shim, told to take the Bun path: the "before" of the compiled helper, in the same run.
  const bunShim = join(root, "bun-shim");
  writeFileSync(bunShim, `#!/bin/sh\nSANDBOX_SHIM=bun exec '${SHIM}' "$@"\n`);
  chmodSync(bunShim, 0o755);
  writeFileSync(join(bunProject, "opencode.json"), JSON.stringify({ ...opencodeConfig(llm.url, [[PLUGIN, options]]), shell: bunShim }));
  oc = await startOpencode({ root, projectDir: project, config: opencodeConfig(llm.url, [[PLUGIN, options]]) });
  const bunServer = oc.at(bunProject);
  const stockServer = oc.at(stock);

  const sandboxed = await createSession(oc);
  const host = await createSession(oc);
  const bunSandboxed = await createSession(bunServer);
  const stockSession = await createSession(stockServer);
  // session.created registers in the background: wait for it before reading or toggling.
  const registered = async (id: string) => (await manager!.client.sandbox.get(id).catch(() => null)) !== null;
  await eventually(async () => (await registered(sandboxed)) && (await registered(host)) && (await registered(bunSandboxed)));
  const { vmName } = await manager.client.sandbox.get(sandboxed);
  await manager.client.sandbox.set(host, { sandboxed: false });

  const shimEnv = { HOME: root, SANDBOX_URL: options.url, SANDBOX_API_TOKEN: options.token, SANDBOX_SESSION_ID: sandboxed };
  const results = await measure([
    shellKind("vm", oc, sandboxed),
    shellKind("vm-bun", bunServer, bunSandboxed),
    shellKind("host", oc, host),
    shellKind("stock", stockServer, stockSession),
    spawnKind("shim-alone", [SHIM, "-c", "echo hi"], shimEnv, project),
    spawnKind("shim-alone-bun", [SHIM, "-c", "echo hi"], { ...shimEnv, SANDBOX_SHIM: "bun" }, project),
    { name: "sdk-exec", run: async () => (await manager!.client.run(sandboxed, { command: "echo hi" })).stdout, samples: [] },
    spawnKind("host-sh", ["/bin/sh", "-c", "echo hi"], {}, project),
  ]);
  if (!(await manager.client.vms.list()).vms.some((entry) => entry.name === vmName)) throw new Error("the sandboxed session has no VM: its commands did not run there");
  type Row = Stats & { cpu?: Stats };
  const names = ["vm", "vm-bun", "host", "stock", "shim-alone", "shim-alone-bun", "sdk-exec", "host-sh"];
  const [vm, vmBun, passthrough, builtin, shimAlone, shimBun, sdkExec, hostSh] = names.map((name) => results.get(name)!) as [Row, Row, Row, Row, Row, Row, Row, Row];
  const cpu = (row: Row) => `CPU (user+sys) median ${row.cpu!.median.toFixed(2)} ms, p95 ${row.cpu!.p95.toFixed(2)} ms`;

  console.log(`!echo hi through opencode serve 1.18.33, ${RUNS} interleaved rounds after ${WARMUP} warm-up, one server, same run`);
  console.log(`  sandboxed session (shim → manager → VM):        ${fmt(vm)}`);
  console.log(`  sandboxed, SANDBOX_SHIM=bun (Bun shim-main.ts): ${fmt(vmBun)}`);
  console.log(`  toggled-off session (shim → host shell):        ${fmt(passthrough)}`);
  console.log(`  stock directory (no plugin, /bin/bash):         ${fmt(builtin)}`);
  console.log(`  ratio sandbox / host (same plugin):             ${ratio(vm, passthrough)}`);
  console.log(`  ratio sandbox / stock OpenCode:                 ${ratio(vm, builtin)}`);
  console.log(`  ratio sandbox, Bun shim / stock OpenCode:       ${ratio(vmBun, builtin)}`);
  console.log(`  ratio toggled-off / stock OpenCode:             ${ratio(passthrough, builtin)}`);
  console.log(`breakdown, the parts alone (same rounds):`);
  console.log(`  shim spawned directly → manager → VM:           ${fmt(shimAlone)}; ${cpu(shimAlone)}`);
  console.log(`  the same with SANDBOX_SHIM=bun:                 ${fmt(shimBun)}; ${cpu(shimBun)}`);
  console.log(`  SDK exec alone (in-process fetch → VM):         ${fmt(sdkExec)}`);
  console.log(`  host /bin/sh -c spawned directly:               ${fmt(hostSh)}; ${cpu(hostSh)}`);
} finally {
  await oc?.stop();
  llm.stop();
  await manager?.cleanUp();
  rmSync(root, { recursive: true, force: true });
}
