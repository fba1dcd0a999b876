// A small closed-loop HTTP load generator: N workers in flight for a fixed time; latencies per request.

export type LoadResult = { requests: number; errors: number; seconds: number; rps: number; p50Ms: number; p95Ms: number; p99Ms: number };

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export async function runLoad(url: string, init: RequestInit, { concurrency = 32, seconds = 5 } = {}): Promise<LoadResult> {
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const t0 = performance.now();
        const res = await fetch(url, init).catch(() => undefined);
        if (!res || !res.ok) errors++;
        await res?.arrayBuffer();
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { requests: latencies.length, errors, seconds: elapsed, rps: latencies.length / elapsed, p50Ms: percentile(latencies, 50), p95Ms: percentile(latencies, 95), p99Ms: percentile(latencies, 99) };
}
