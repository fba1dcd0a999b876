// A VM printing a lot, through the whole path (guest → exec agent → actor Worker → main thread → HTTP → a
// client), against the host's own pipe as the baseline measured in the same run: throughput as a ratio, and
// the manager's resident memory while a fast and a slow client read it (test/attacks/output-flood.test.ts
// asserts only the bound). BENCH_FLOOD_GIB sets the size (default 2), BENCH_ROUNDS the rounds (default 3).
import { rmSync } from "node:fs";
import { makeProject, startTestManager } from "../test/e2e/fixture";
import { makeTempDir } from "../test/helpers";
import { prepareLocalRuntime } from "../test/runtime/local-target";
import { execText, floodCommand, GIB, MIB, outputBytes, rssOf, watchRss } from "../test/attacks/output-flood";

const BYTES = Number(process.env.BENCH_FLOOD_GIB ?? 2) * GIB;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SESSION = "ses_bench_flood";

/** The baseline: the same command on the host, its pipe read by this process as fast as it can. */
async function hostPipeSeconds(): Promise<number> {
  const started = performance.now();
  const child = Bun.spawn(["sh", "-c", floodCommand(BYTES)], { stdout: "pipe" });
  let bytes = 0;
  for await (const chunk of child.stdout) bytes += chunk.byteLength;
  await child.exited;
  if (bytes !== BYTES) throw new Error(`host pipe: ${bytes} bytes, not ${BYTES}`);
  return (performance.now() - started) / 1000;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const mib = (bytes: number) => (bytes / MIB).toFixed(0);

const manager = await startTestManager(await prepareLocalRuntime());
const dir = makeTempDir("ss-bench-flood-");
try {
  await manager.client.sessions.register({ id: SESSION, parentID: null, forkOf: null, directory: makeProject(dir, "repo") });
  await manager.client.run(SESSION, { command: "true" });
  const pid = manager.process.proc.pid;
  const { url, token } = manager.process;
  const host: number[] = [];
  const fast: number[] = [];
  const fastGrowth: number[] = [];
  const slowGrowth: number[] = [];
  const idle: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    host.push(await hostPipeSeconds());
    await Bun.sleep(500);
    const before = rssOf(pid);
    idle.push(before);
    let rss = watchRss(pid);
    const reading = await execText(url, token, SESSION, floodCommand(BYTES));
    if (outputBytes(reading) !== BYTES) throw new Error(`fast reader: ${outputBytes(reading)} bytes, not ${BYTES}`);
    fast.push(reading.seconds);
    fastGrowth.push(rss.stop() - before);
    // Slow: a read every 100 ms for 5 s, none for 5 s, then as fast as it can.
    await Bun.sleep(500);
    const slowBefore = rssOf(pid);
    rss = watchRss(pid);
    const slowUntil = performance.now() + 5_000;
    let stalled = false;
    const slow = await execText(url, token, SESSION, floodCommand(BYTES), async () => {
      if (performance.now() < slowUntil) return Bun.sleep(100);
      if (!stalled) {
        stalled = true;
        await Bun.sleep(5_000);
      }
    });
    if (outputBytes(slow) !== BYTES) throw new Error(`slow reader: ${outputBytes(slow)} bytes, not ${BYTES}`);
    slowGrowth.push(rss.stop() - slowBefore);
    console.error(`round ${round}: host pipe ${host.at(-1)!.toFixed(2)} s, through the manager ${fast.at(-1)!.toFixed(2)} s; manager RSS +${mib(fastGrowth.at(-1)!)} MiB (fast), +${mib(slowGrowth.at(-1)!)} MiB (slow)`);
  }
  const throughput = (seconds: number) => BYTES / MIB / seconds;
  console.log(`output flood of ${BYTES / GIB} GiB, median of ${ROUNDS} rounds`);
  console.log(`  host pipe (baseline):           ${throughput(median(host)).toFixed(0)} MiB/s`);
  console.log(`  through the manager, fast reader: ${throughput(median(fast)).toFixed(0)} MiB/s  (${(median(fast) / median(host)).toFixed(2)}× the baseline's time)`);
  console.log(`  manager RSS before a flood:     ${mib(median(idle))} MiB`);
  console.log(`  peak growth, fast reader:       +${mib(median(fastGrowth))} MiB  (${((median(idle) + median(fastGrowth)) / median(idle)).toFixed(2)}× the RSS before)`);
  console.log(`  peak growth, slow reader:       +${mib(median(slowGrowth))} MiB  (${((median(idle) + median(slowGrowth)) / median(idle)).toFixed(2)}× the RSS before)`);
} finally {
  await manager.cleanUp();
  rmSync(dir, { recursive: true, force: true });
}
