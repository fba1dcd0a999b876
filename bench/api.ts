// API benchmark: GET /api/session-sandbox/:id on the real manager next to a bare Bun.serve hello,
// both as child processes measured in the same run by the same load generator. Prints ratios.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { createClient } from "../sdk/index";
import { makeTempDir } from "../test/helpers";
import { startManager } from "../test/manager-process";
import { runLoad, type LoadResult } from "./load";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);

async function bareHello(): Promise<{ url: string; stop: () => Promise<void> }> {
  const proc = Bun.spawn(["bun", join(import.meta.dir, "hello-server.ts")], { stdout: "pipe", stderr: "inherit" });
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  const { value } = await reader.read();
  const url = new TextDecoder().decode(value).trim();
  return { url, stop: async () => void (proc.kill("SIGTERM"), await proc.exited) };
}

function row(name: string, r: LoadResult): string {
  return `${name.padEnd(34)} ${r.rps.toFixed(0).padStart(8)} req/s   p50 ${r.p50Ms.toFixed(2).padStart(6)} ms   p99 ${r.p99Ms.toFixed(2).padStart(6)} ms   errors ${r.errors}`;
}

const dataDir = makeTempDir("ss-bench-api-");
const hello = await bareHello();
const manager = await startManager(dataDir);
try {
  const client = createClient({ url: manager.url, token: manager.token });
  for (let i = 0; i < 1000; i++) await client.sessions.register({ id: `ses_b${i}`, directory: "/repo" });
  await client.sessions.register({ id: "ses_bench_child", parentID: "ses_b500", directory: "/repo" });
  const auth = { headers: { authorization: `Bearer ${manager.token}` } };

  // Warm both up, then measure each alone so they do not compete for the 2 cores.
  await runLoad(`${hello.url}/`, {}, { concurrency: CONCURRENCY, seconds: 1 });
  await runLoad(`${manager.url}/api/session-sandbox/ses_bench_child`, auth, { concurrency: CONCURRENCY, seconds: 1 });
  const bare = await runLoad(`${hello.url}/`, {}, { concurrency: CONCURRENCY, seconds: SECONDS });
  const api = await runLoad(`${manager.url}/api/session-sandbox/ses_bench_child`, auth, { concurrency: CONCURRENCY, seconds: SECONDS });

  console.log(`API benchmark: ${SECONDS}s each, ${CONCURRENCY} in flight, 1,000 registered sessions, a child session looked up`);
  console.log(row("bare Bun.serve hello (baseline)", bare));
  console.log(row("GET /api/session-sandbox/:id", api));
  console.log(
    `ratio manager/baseline: throughput ${(api.rps / bare.rps).toFixed(2)}x, p50 ${(api.p50Ms / bare.p50Ms).toFixed(2)}x, p99 ${(api.p99Ms / bare.p99Ms).toFixed(2)}x`,
  );
} finally {
  await manager.stop();
  await hello.stop();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(manager.runtimeDir, { recursive: true, force: true });
}
