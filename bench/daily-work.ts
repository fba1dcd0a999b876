// What a developer's day costs through the sandbox (issue 26), each against a baseline measured in this
// same run: a request to a dev server in a VM through a forwarded port against a command's round trip
// (each forwarded connection runs one relay command in the VM) and against the same request to a server on
// the host; stdin throughput against the same bytes coming back as output.
//
//   bun run bench:daily-work        (BENCH_RUNS, default 60; BENCH_MIB, default 64)
import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "../sdk/index";
import { startManager, type ManagerProcess } from "../test/manager-process";
import { prepareLocalRuntime } from "../test/runtime/local-target";
import { makeRepo, removeCgroupParents, stats, timed, type Stats } from "./exec-support";

const RUNS = Number(process.env.BENCH_RUNS ?? 60);
const MIB = Number(process.env.BENCH_MIB ?? 64);
const tag = randomBytes(4).toString("hex");
const parent = `ss-bench-daily-${tag}`;
const tmp = mkdtempSync(join(tmpdir(), "ss-bench-daily-"));
chmodSync(tmp, 0o711);
const dataDir = join(tmp, "data");
mkdirSync(dataDir, { mode: 0o711 });
const image = await prepareLocalRuntime();
const hostServer = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("hello\n") });
let manager: ManagerProcess | undefined;
let client: ReturnType<typeof createClient> | undefined;
const ratio = (a: Stats, b: Stats) => `${(a.median / b.median).toFixed(1)}x median, ${(a.p95 / b.p95).toFixed(1)}x p95`;

try {
  manager = await startManager(dataDir, { SANDBOX_CGROUP_PARENT: parent, SANDBOX_RUNTIME: "local", SANDBOX_ROOTFS_DIR: image });
  const sdk = createClient({ url: manager.url, token: manager.token });
  client = sdk;
  const repo = makeRepo(join(tmp, "repo"));
  await sdk.sessions.register({ id: "ses_bench", directory: repo });
  const started = await sdk.run("ses_bench", { command: "mkdir -p /tmp/www && echo hello > /tmp/www/index.html && (cd /tmp/www && python3 -m http.server 8000 >/dev/null 2>&1 &) && sleep 1", cwd: repo });
  if (started.exitCode !== 0) throw new Error(`dev server did not start: ${started.stderr}`);
  const { url } = await sdk.ports.open("ses_bench", { port: 8000 });

  // Each request on a connection of its own, as a browser's first load opens several.
  const get = async (target: string) => {
    const response = await fetch(target, { headers: { connection: "close" }, keepalive: false });
    if ((await response.text()) !== "hello\n") throw new Error(`unexpected answer from ${target}`);
  };
  const paths: [string, () => Promise<unknown>][] = [
    ["a. GET through the forward (a connection each)", () => get(url)],
    ["b. exec `true` through the manager", async () => {
      if ((await sdk.run("ses_bench", { command: "true", cwd: repo })).exitCode !== 0) throw new Error("exec failed");
    }],
    ["c. GET a server on the host", () => get(`http://127.0.0.1:${hostServer.port}/`)],
  ];
  const samples = paths.map(() => [] as number[]);
  for (let i = 0; i < 5; i++) for (const [, fn] of paths) await fn();
  for (let i = 0; i < RUNS; i++) for (const [p, [, fn]] of paths.entries()) samples[p]!.push(await timed(fn));
  const [forward, exec, host] = samples.map(stats) as [Stats, Stats, Stats];
  console.log(`\nforwarded port: ${RUNS} requests per path, interleaved\n`);
  console.log(`${"path".padEnd(50)} ${"median ms".padStart(10)} ${"p95 ms".padStart(10)}`);
  for (const [p, s] of [forward, exec, host].entries()) console.log(`${paths[p]![0].padEnd(50)} ${s.median.toFixed(2).padStart(10)} ${s.p95.toFixed(2).padStart(10)}`);
  console.log(`\nratio forward/exec: ${ratio(forward, exec)}   (a connection = one relay command in the VM, which reads stdin: crun exec, not the agent)`);
  console.log(`ratio forward/host: ${ratio(forward, host)}`);

  // stdin: MIB MiB into `cat >/dev/null`, against the same amount printed by `head -c` (the output path).
  const bytes = MIB * 1024 * 1024;
  const chunk = new Uint8Array(1024 * 1024);
  const input = () => {
    let sent = 0;
    return new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= bytes) return controller.close();
        sent += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
  };
  const inMs: number[] = [];
  const outMs: number[] = [];
  for (let i = 0; i < 3; i++) {
    inMs.push(await timed(async () => {
      const r = await sdk.run("ses_bench", { command: "wc -c", cwd: repo, stdin: input() });
      if (Number(r.stdout.trim()) !== bytes) throw new Error(`stdin arrived short: ${r.stdout}`);
    }));
    outMs.push(await timed(async () => {
      let got = 0;
      for await (const event of sdk.exec("ses_bench", { command: `head -c ${bytes} /dev/zero`, cwd: repo })) if (event.type === "stdout") got += event.data.byteLength;
      if (got !== bytes) throw new Error(`output arrived short: ${got}`);
    }));
  }
  const mibPerS = (ms: number[]) => MIB / (stats(ms).median / 1000);
  console.log(`\n${MIB} MiB of stdin into \`wc -c\`: ${mibPerS(inMs).toFixed(0)} MiB/s; the same as output of \`head -c\`: ${mibPerS(outMs).toFixed(0)} MiB/s (median of 3)`);
  console.log(`ratio stdin/output throughput: ${(mibPerS(inMs) / mibPerS(outMs)).toFixed(2)}x`);
} finally {
  hostServer.stop(true);
  // The session's VM and volume go with it (a stopped manager would keep them).
  await client?.sessions.delete("ses_bench").catch(() => undefined);
  await manager?.stop().catch(() => undefined);
  const left = removeCgroupParents([parent]);
  rmSync(tmp, { recursive: true, force: true });
  if (left.length > 0) console.error(`cgroups left: ${left.join(", ")}`);
}
