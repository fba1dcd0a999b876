// API benchmark: GET /api/session-sandbox/:id on the real manager next to bare Bun.serve servers,
// all child processes driven by the same load generator in interleaved rounds, so each sees the same machine
// load. Prints medians over the rounds with the spread of the ratio, each server's CPU per request, and the
// manager's memory per registered idle session.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createClient } from "../sdk/index";
import { makeTempDir } from "../test/helpers";
import { startManager } from "../test/manager-process";
import { settledRss } from "./exec-support";
import { runLoad, type LoadResult } from "./load";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const IDLE_SESSIONS = Number(process.env.BENCH_IDLE_SESSIONS ?? 1000);
/** /proc/<pid>/stat counts CPU time in clock ticks: 100 per second on Linux. */
const TICK_US = 10_000;

type Server = { name: string; url: string; init: RequestInit; pid: number };
type Sample = LoadResult & { cpuUsPerRequest: number };

async function bareServer(bodyFile?: string): Promise<{ url: string; pid: number; stop: () => Promise<void> }> {
  const proc = Bun.spawn(["bun", join(import.meta.dir, "hello-server.ts"), ...(bodyFile ? [bodyFile] : [])], { stdout: "pipe", stderr: "inherit" });
  const { value } = await (proc.stdout as ReadableStream<Uint8Array>).getReader().read();
  return { url: new TextDecoder().decode(value).trim(), pid: proc.pid, stop: async () => void (proc.kill("SIGTERM"), await proc.exited) };
}

/** User plus system CPU time a process has used so far, µs. */
function cpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

async function measure(server: Server, seconds: number): Promise<Sample> {
  const before = cpuUs(server.pid);
  const result = await runLoad(server.url, server.init, { concurrency: CONCURRENCY, seconds });
  return { ...result, cpuUsPerRequest: (cpuUs(server.pid) - before) / result.requests };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const fixed = (value: number, digits: number, width: number) => value.toFixed(digits).padStart(width);

function row(name: string, samples: Sample[]): string {
  const rps = samples.map((s) => s.rps);
  const at = (pick: (s: Sample) => number) => median(samples.map(pick));
  return (
    `${name.padEnd(36)} ${fixed(median(rps), 0, 7)} (${Math.min(...rps).toFixed(0)}–${Math.max(...rps).toFixed(0)})` +
    `${fixed(at((s) => s.p50Ms), 2, 8)}${fixed(at((s) => s.p95Ms), 2, 8)}${fixed(at((s) => s.p99Ms), 2, 8)}` +
    `${fixed(at((s) => s.cpuUsPerRequest), 1, 10)}${String(samples.reduce((n, s) => n + s.errors, 0)).padStart(8)}`
  );
}

/** The manager's figures over a baseline's: medians, and the throughput ratio of each round (its spread). */
function ratios(name: string, api: Sample[], base: Sample[]): string {
  const perRound = api.map((s, i) => s.rps / base[i]!.rps);
  const of = (pick: (s: Sample) => number) => (median(api.map(pick)) / median(base.map(pick))).toFixed(2);
  return (
    `ratio manager/${name}: throughput ${median(perRound).toFixed(2)}x (rounds ${Math.min(...perRound).toFixed(2)}–${Math.max(...perRound).toFixed(2)}), ` +
    `p50 ${of((s) => s.p50Ms)}x, p95 ${of((s) => s.p95Ms)}x, p99 ${of((s) => s.p99Ms)}x, server CPU per request ${of((s) => s.cpuUsPerRequest)}x`
  );
}

async function throughput(): Promise<void> {
  const dataDir = makeTempDir("ss-bench-api-");
  const bodyFile = join(dataDir, "view.json");
  const hello = await bareServer();
  const manager = await startManager(dataDir);
  let sameBody: Awaited<ReturnType<typeof bareServer>> | undefined;
  try {
    const client = createClient({ url: manager.url, token: manager.token });
    for (let i = 0; i < 1000; i++) await client.sessions.register({ id: `ses_b${i}`, directory: "/repo" });
    await client.sessions.register({ id: "ses_bench_child", parentID: "ses_b500", directory: "/repo" });
    const api = `${manager.url}/api/session-sandbox/ses_bench_child`;
    const auth = { headers: { authorization: `Bearer ${manager.token}` } };
    writeFileSync(bodyFile, await (await fetch(api, auth)).text());
    sameBody = await bareServer(bodyFile);
    const servers: Server[] = [
      { name: "bare Bun.serve hello (baseline)", url: `${hello.url}/`, init: {}, pid: hello.pid },
      { name: "bare Bun.serve, the same JSON body", url: `${sameBody.url}/`, init: auth, pid: sameBody.pid },
      { name: "GET /api/session-sandbox/:id", url: api, init: auth, pid: manager.proc.pid },
    ];
    const samples = servers.map(() => [] as Sample[]);
    for (const server of servers) await measure(server, 1); // warm-up
    // Interleaved: each round runs every server once, starting with a different one each round.
    for (let round = 0; round < ROUNDS; round++) {
      for (let k = 0; k < servers.length; k++) {
        const i = (round + k) % servers.length;
        samples[i]!.push(await measure(servers[i]!, SECONDS));
      }
    }
    console.log(`API benchmark: ${ROUNDS} interleaved rounds of ${SECONDS}s per server, ${CONCURRENCY} in flight, 1,000 registered sessions, a child session looked up`);
    console.log(`${"server".padEnd(36)} ${"req/s median (min–max)".padEnd(22)}  p50 ms  p95 ms  p99 ms  CPU µs/req  errors`);
    servers.forEach((server, i) => console.log(row(server.name, samples[i]!)));
    console.log(ratios("hello", samples[2]!, samples[0]!));
    console.log(ratios("same-body", samples[2]!, samples[1]!));
  } finally {
    await manager.stop();
    await hello.stop();
    await sameBody?.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(manager.runtimeDir, { recursive: true, force: true });
  }
}

/**
 * RSS per registered idle session: the first batch after start (bench:exec's figure, which also holds what a
 * manager grows by once, compiling the registration path and warming its heap), then two more batches (what
 * each further session costs).
 */
async function idleSessionMemory(): Promise<void> {
  const dataDir = makeTempDir("ss-bench-api-mem-");
  const manager = await startManager(dataDir);
  try {
    const client = createClient({ url: manager.url, token: manager.token });
    const pid = manager.proc.pid;
    let registered = 0;
    let before = await settledRss(pid);
    console.log(`\nmanager memory per registered idle session (VmRSS of pid ${pid}, settled; batches of ${IDLE_SESSIONS})`);
    for (const label of ["first batch after start (as bench:exec)", "second batch", "third batch"]) {
      for (let i = 0; i < IDLE_SESSIONS; i++) await client.sessions.register({ id: `ses_idle_${registered++}`, directory: "/repo" });
      const after = await settledRss(pid);
      console.log(`${label.padEnd(44)} ${((after.rssKib - before.rssKib) / IDLE_SESSIONS).toFixed(2).padStart(6)} KiB per session (RSS ${(after.rssKib / 1024).toFixed(1)} MiB)`);
      before = after;
    }
  } finally {
    await manager.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(manager.runtimeDir, { recursive: true, force: true });
  }
}

await throughput();
if (process.env.BENCH_MEMORY !== "0") await idleSessionMemory();
