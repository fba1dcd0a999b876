// What idleSuspendMinutes buys: a command to a session whose VM the idle sweep stopped (suspended: its
// processes gone, its volume and definition kept) against a command to a session whose VM was removed
// (the cold create a user pays without it), each measured to the command's output, interleaved in one
// run. The manager runs in this process with its clock injected, so "idle for 6 minutes" takes no time.
//
//   bun run bench:suspend-restart        (BENCH_RUNS, default 10)
import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLocalDriver } from "../runtime/local";
import { makeTestApp } from "../test/helpers";
import { prepareLocalRuntime } from "../test/runtime/local-target";
import { makeRepo, removeCgroupParents, stats, timed } from "./exec-support";

const RUNS = Number(process.env.BENCH_RUNS ?? 10);
const MINUTE = 60_000;
const cgroupParent = `ss-bench-suspend-${randomBytes(4).toString("hex")}`;
const tmp = mkdtempSync(join(tmpdir(), "ss-bench-suspend-"));
chmodSync(tmp, 0o711); // the VMs' host uids traverse it to their state
const stateDir = join(tmp, "state");
mkdirSync(stateDir);
const image = await prepareLocalRuntime();
const clock = { now: Date.now() };
const t = makeTestApp({ now: () => clock.now, runtime: { stateDir, cgroupParent, image } });

try {
  const repo = makeRepo(join(tmp, "repo"));
  await t.client.sessions.register({ id: "ses_bench", directory: repo });
  await t.client.settings.patch({ idleSuspendMinutes: 5 });
  const vmName = (await t.client.sandbox.get("ses_bench")).vmName;
  const statusOf = () => t.supervisor.list().find((record) => record.vmName === vmName)?.status ?? "absent";
  const command = async () => {
    const result = await t.client.run("ses_bench", { command: "cat ~/marker 2>/dev/null || echo fresh > ~/marker", cwd: repo });
    if (result.exitCode !== 0) throw new Error(`the command failed: ${result.stderr}`);
  };
  const until = async (status: string) => {
    const deadline = Date.now() + 60_000;
    while (statusOf() !== status) {
      if (Date.now() > deadline) throw new Error(`the VM did not become ${status} (it is ${statusOf()})`);
      await Bun.sleep(10);
    }
  };
  const cold: number[] = [];
  const suspended: number[] = [];
  await command(); // warm the image and the runtime's caches once
  for (let i = 0; i < RUNS; i++) {
    // Removed (what the idle sweep does without idleSuspendMinutes): the next command creates VM and volume.
    await t.supervisor.sweep(0);
    await until("absent");
    cold.push(await timed(command));
    // Suspended: idle past idleSuspendMinutes, stopped by the sweep; the next command starts it again.
    clock.now += 6 * MINUTE;
    await t.supervisor.sweep();
    await until("stopped");
    suspended.push(await timed(command));
  }
  const [c, s] = [stats(cold), stats(suspended)];
  console.log(`\nto the first command's output, ${RUNS} runs each, interleaved\n`);
  console.log(`${"path".padEnd(46)} ${"median ms".padStart(10)} ${"p95 ms".padStart(10)}`);
  console.log(`${"a. cold: VM and volume created".padEnd(46)} ${c.median.toFixed(1).padStart(10)} ${c.p95.toFixed(1).padStart(10)}`);
  console.log(`${"b. suspended: the stopped VM started".padEnd(46)} ${s.median.toFixed(1).padStart(10)} ${s.p95.toFixed(1).padStart(10)}`);
  console.log(`\nratio suspended/cold: ${(s.median / c.median).toFixed(2)}x median, ${(s.p95 / c.p95).toFixed(2)}x p95`);
} finally {
  await t.supervisor.sweep(0).catch(() => undefined);
  const driver = createLocalDriver({ stateDir, rootfsDir: image, cgroupParent });
  for (const vm of await driver.list({}).catch(() => [])) await driver.remove(vm.name);
  t.cleanup();
  rmSync(tmp, { recursive: true, force: true });
  const left = removeCgroupParents([cgroupParent]);
  if (left.length > 0) console.error(`cgroups left: ${left.join(", ")}`);
}
