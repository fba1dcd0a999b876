// `bun run test:unit` and the test command's runner (scripts/test.sh): runs test files in parallel, one
// `bun test` process per file, and prints each file's whole output when it ends (never interleaved),
// then one summary. Files are independent by construction: each makes its own data dir, runtime dir,
// cgroup parent, ports, accounts and temp dirs, and removes them. When each starts is test-schedule.ts's:
// the slowest first, and no more at once than the cores carry.
//
//   bun scripts/run-tests.ts                 every test file
//   bun scripts/run-tests.ts --unit          only the files that boot no VM and start no manager,
//                                            OpenCode, browser or registry (test-kinds.ts)
//   bun scripts/run-tests.ts --jobs 2 test/actors   files whose path contains one of the arguments
//   bun scripts/run-tests.ts --jobs 1 --record   runs each file alone and writes its seconds and the
//                                            machine's CPU seconds to test/durations.json, the profiles
//                                            that order and pace the next runs
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join, relative } from "node:path";
import { classifyTestFiles, type TestFile } from "./test-kinds";
import { failureExcerpts } from "./test-failures";
import { cpuShare, profileOf, readProfiles, runScheduled, writeProfiles } from "./test-schedule";

const ROOT = join(import.meta.dir, "..");
const PER_TEST_TIMEOUT_MS = 120_000;
const PROFILES = join(ROOT, "test/durations.json");
/** Shares beyond the cores: a file's measured share is an average, and waits hide inside it. */
const CPU_OVERCOMMIT = 0.5;

type Options = { unit: boolean; jobs: number; filters: string[]; record: boolean };
type FileResult = { file: string; seconds: number; machineCpuSeconds: number; exitCode: number; passed: number; failed: number; skipped: number; output: string };

function parseOptions(argv: string[]): Options {
  const options: Options = { unit: false, jobs: defaultJobs(), filters: [], record: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--unit") options.unit = true;
    else if (arg === "--record") options.record = true;
    else if (arg === "--jobs" || arg === "-j") options.jobs = positiveInt(argv[++i], arg);
    else if (arg.startsWith("--jobs=")) options.jobs = positiveInt(arg.slice("--jobs=".length), "--jobs");
    else if (arg.startsWith("-")) usage(`unknown option ${arg}`);
    else options.filters.push(arg.replace(/^\.\//, ""));
  }
  return options;
}

/**
 * Most of a VM test's time is waiting (boots, timeouts, child processes), not this process's CPU: twice
 * the cores keeps both busy without starving the waits. TEST_JOBS overrides it.
 */
function defaultJobs(): number {
  const fromEnv = process.env.TEST_JOBS;
  return fromEnv ? positiveInt(fromEnv, "TEST_JOBS") : Math.max(2, availableParallelism() * 2);
}

function positiveInt(value: string | undefined, what: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) usage(`${what} wants a whole number of at least 1, got ${JSON.stringify(value ?? "")}`);
  return n;
}

function usage(problem: string): never {
  process.stderr.write(`run-tests: ${problem}\nusage: bun scripts/run-tests.ts [--unit] [--jobs N] [--record] [path filter ...]\n`);
  process.exit(2);
}

/** The last "N pass" / "N fail" / "N skip" lines of a `bun test` run. */
function counted(output: string, word: "pass" | "fail" | "skip"): number {
  const matches = [...output.matchAll(new RegExp(`^\\s*(\\d+) ${word}$`, "gm"))];
  return matches.length > 0 ? Number(matches.at(-1)![1]) : 0;
}

/** Busy CPU seconds of the whole machine so far (every process, daemons and VMs included), from /proc/stat. */
function machineBusySeconds(): number {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  return (fields.reduce((a, b) => a + b, 0) - idle) / 100; // USER_HZ
}

async function runFile(file: TestFile): Promise<FileResult> {
  const started = performance.now();
  const busyBefore = machineBusySeconds();
  const proc = Bun.spawn(["bun", "test", "--timeout", String(PER_TEST_TIMEOUT_MS), `./${file.path}`], {
    cwd: ROOT,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, FORCE_COLOR: "0" },
  });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  const output = `${stdout}${stderr}`;
  const failed = counted(output, "fail");
  // A process that died (or failed outside a test) counts as one failure even when no test said so.
  const machineCpuSeconds = machineBusySeconds() - busyBefore;
  return { file: file.path, seconds: (performance.now() - started) / 1000, machineCpuSeconds, exitCode, passed: counted(output, "pass"), failed: exitCode !== 0 && failed === 0 ? 1 : failed, skipped: counted(output, "skip"), output };
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  const all = await classifyTestFiles(ROOT);
  const profiles = readProfiles(PROFILES);
  const chosen = all
    .filter((file) => !options.unit || file.kind === "unit")
    .filter((file) => options.filters.length === 0 || options.filters.some((filter) => file.path.includes(filter)));
  if (chosen.length === 0) usage(`no test file matches ${options.filters.join(" ")}`);
  // Only a file running alone has the machine's CPU to itself: that is the profile worth keeping.
  if (options.record && options.jobs !== 1) usage("--record measures each file alone: add --jobs 1");
  const started = performance.now();
  const busyAtStart = machineBusySeconds();
  process.stderr.write(`run-tests: ${chosen.length} files (${chosen.filter((f) => f.kind === "vm").length} with VMs or servers), ${options.jobs} at a time\n`);
  const results: FileResult[] = [];
  await runScheduled(chosen, {
    jobs: options.jobs,
    cpuBudget: availableParallelism() + CPU_OVERCOMMIT,
    seconds: (file) => profileOf(file, profiles).seconds,
    share: (file) => cpuShare(profileOf(file, profiles)),
    run: async (file) => {
      const result = await runFile(file);
      results.push(result);
      const mark = result.failed > 0 ? "FAIL" : "ok";
      process.stdout.write(`\n${result.file}:\n${result.output.trimEnd()}\n`);
      process.stderr.write(`[${results.length}/${chosen.length}] ${mark} ${result.file} (${result.seconds.toFixed(1)} s, machine cpu ${result.machineCpuSeconds.toFixed(1)} s, ${result.passed} pass, ${result.failed} fail)\n`);
    },
  });
  const sum = (key: "passed" | "failed" | "skipped") => results.reduce((total, result) => total + result[key], 0);
  const failedFiles = results.filter((result) => result.failed > 0);
  const wall = (performance.now() - started) / 1000;
  const slowest = [...results].sort((a, b) => b.seconds - a.seconds).slice(0, 5);
  process.stdout.write(`\nslowest: ${slowest.map((r) => `${relative("test", r.file)} ${r.seconds.toFixed(0)} s`).join(", ")}\n`);
  for (const result of failedFiles) process.stdout.write(`\nwhy ${result.file} failed:\n${failureExcerpts(result.output).join("\n\n")}\n`);
  if (failedFiles.length > 0) process.stdout.write(`failed files:\n${failedFiles.map((r) => `  ${r.file} (exit ${r.exitCode})`).join("\n")}\n`);
  const busy = machineBusySeconds() - busyAtStart;
  process.stdout.write(`ran ${results.length} files in ${wall.toFixed(0)} s with ${options.jobs} jobs; the machine's CPUs were busy ${((100 * busy) / (wall * availableParallelism())).toFixed(0)}% (${busy.toFixed(0)} CPU s)\n`);
  if (options.record) {
    const measured = Object.fromEntries(results.map((result) => [result.file, { seconds: result.seconds, cpuSeconds: result.machineCpuSeconds }]));
    writeProfiles(PROFILES, { ...profiles, ...measured }, new Set(all.map((file) => file.path)));
  }
  // The same summary line scripts/test.sh has always printed.
  process.stdout.write(`tests: ${sum("passed")} passed, ${sum("failed")} failed, ${sum("skipped")} skipped\n`);
  return failedFiles.length > 0 ? 1 : 0;
}

process.exitCode = await main();
