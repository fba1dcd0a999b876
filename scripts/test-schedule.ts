// When each test file runs: the longest first, at most `jobs` at once, and no more at once than the
// machine's cores can carry. A file's profile (its seconds and the machine's CPU seconds while it ran
// alone, recorded by `run-tests.ts --jobs 1 --record` in test/durations.json) gives its CPU share: a file
// that mostly waits (VM boots, timeouts) shares the cores with others; two that each keep a core busy do
// not run beside a third. Profiles only order and pace the run: a stale or missing one costs time, never
// a result.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import type { TestFile } from "./test-kinds";

export type Profile = { seconds: number; cpuSeconds: number };
export type Profiles = Record<string, Profile>;

export function readProfiles(path: string): Profiles {
  try {
    return existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as Profiles) : {};
  } catch {
    return {};
  }
}

/** Keeps the files that still exist, sorted by path, so the file diffs well. */
export function writeProfiles(path: string, profiles: Profiles, existing: Set<string>): void {
  const kept = Object.entries(profiles)
    .filter(([file]) => existing.has(file))
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([file, p]) => [file, { seconds: Math.round(p.seconds * 10) / 10, cpuSeconds: Math.round(p.cpuSeconds * 10) / 10 }]);
  writeFileSync(path, `${JSON.stringify(Object.fromEntries(kept), null, 2)}\n`);
}

/** As recorded, else a guess: a VM file waits a good part of its time, a unit file keeps its core busy. */
export function profileOf(file: TestFile, profiles: Profiles): Profile {
  const known = profiles[file.path];
  if (known) return known;
  const seconds = (file.kind === "vm" ? 5 : 1) + file.size / 4000;
  return { seconds, cpuSeconds: seconds * (file.kind === "vm" ? 0.7 : 1) };
}

/** How many cores the file keeps busy while it runs, as measured alone. */
export function cpuShare(profile: Profile): number {
  return Math.min(2, Math.max(0.1, profile.cpuSeconds / Math.max(profile.seconds, 0.1)));
}

/**
 * Runs every item, longest first, with at most `jobs` running and their shares summing to at most
 * `cpuBudget` (an item runs alone when it exceeds the budget by itself).
 */
export async function runScheduled<T>(items: T[], options: { jobs: number; cpuBudget: number; seconds(item: T): number; share(item: T): number; run(item: T): Promise<void> }): Promise<void> {
  const pending = [...items].sort((a, b) => options.seconds(b) - options.seconds(a));
  const running = new Map<Promise<void>, number>();
  const load = () => [...running.values()].reduce((sum, share) => sum + share, 0);
  const fits = (item: T) => running.size === 0 || load() + options.share(item) <= options.cpuBudget;
  while (pending.length > 0 || running.size > 0) {
    // Start what fits, longest first; then wait for one to end and look again.
    for (let at = pending.findIndex(fits); at >= 0 && running.size < options.jobs; at = pending.findIndex(fits)) {
      const [item] = pending.splice(at, 1);
      const done: Promise<void> = options.run(item!).finally(() => running.delete(done));
      running.set(done, options.share(item!));
    }
    await Promise.race(running.keys());
  }
}
