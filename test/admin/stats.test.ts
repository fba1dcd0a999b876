// `stats` end to end: the real manager over the real local runtime, the command run as `bun run --silent
// stats` in a child process (table, --json, one VM, --watch ended by Ctrl-C), and its exported run(argv).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { run } from "../../cli/commands/stats";
import { ROOT, parseJson, startAdminManager, type AdminManager } from "./fixture";

type StatsJson = { vms: { name: string; rootSessionID: string | null; status: string; available: boolean; cpuPercent: number | null; memoryBytes: number | null; memoryLimitBytes: number | null; pids: number | null; diskUsedBytes: number | null; diskSizeBytes: number | null }[] };

let m: AdminManager;
let vm: string;
let repo: string;

beforeAll(async () => {
  m = await startAdminManager({ vms: true });
  repo = m.makeRepo("stats");
  await m.client.sessions.register({ id: "ses_stats", directory: repo });
  vm = (await m.client.sandbox.get("ses_stats")).vmName;
  // About 30 s of one busy CPU, in the background, ending on its own.
  expect(await m.client.run("ses_stats", { command: "timeout 30 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo started", cwd: repo })).toMatchObject({ exitCode: 0 });
}, 600_000);
afterAll(async () => m?.cleanup(), 120_000);

describe("stats", () => {
  test("piped → one row per VM: CPU % of a busy VM, memory of its limit, pids, disk", async () => {
    const result = await m.run("stats");
    expect(result).toMatchObject({ exitCode: 0, stderr: "" });
    const [header, row, ...rest] = result.stdout.trimEnd().split("\n");
    expect(header!.split(/\s{2,}/)).toEqual(["NAME", "SESSION", "STATUS", "CPU %", "MEMORY", "MEM %", "PIDS", "DISK"]);
    expect(rest).toEqual([]);
    const cells = row!.split(/\s{2,}/);
    expect(cells.slice(0, 3)).toEqual([vm, "ses_stats", "running"]);
    expect(Number(cells[3]!.replace("%", ""))).toBeGreaterThan(10); // one busy CPU is 100% (less on a loaded host; an idle VM reads 0.0%)
    expect(cells[4]).toMatch(/^[\d.]+[KMG]iB \/ 2GiB$/);
    expect(cells[7]).toMatch(/^[\d.]+[KMG]iB \/ [\d.]+GiB$/);
  });

  test("<vm> --json → that VM's numbers, cpuPercent computed from two reads", async () => {
    const { vms } = parseJson<StatsJson>(await m.run("stats", [vm, "--json"]));
    expect(vms).toHaveLength(1);
    expect(vms[0]).toMatchObject({ name: vm, rootSessionID: "ses_stats", status: "running", available: true, memoryLimitBytes: 2048 * 1024 * 1024 });
    expect(vms[0]!.cpuPercent).toBeGreaterThanOrEqual(0);
    expect(vms[0]!.pids).toBeGreaterThanOrEqual(1);
    expect(vms[0]!.diskSizeBytes).toBeGreaterThan(3 << 30);
  });

  test("unknown VM → exit 1, the manager's reason and where to look", async () => {
    const result = await m.run("stats", ["ocm-session-000000000000"]);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain("no VM named");
    expect(result.stderr).toContain("bun run vms");
  });

  test("--watch → a table every 2 s until Ctrl-C, then exit 0", async () => {
    const proc = Bun.spawn(["bun", "cli/session-sandbox.ts", "stats", "--watch"], { cwd: ROOT, env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/root", ...m.env }, stdout: "pipe", stderr: "pipe" });
    const reader = proc.stdout.getReader();
    const decoder = new TextDecoder();
    let text = "";
    while ((text.match(/^NAME/gm) ?? []).length < 2) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    proc.kill("SIGINT");
    expect(await proc.exited).toBe(0);
    expect((text.match(new RegExp(vm, "g")) ?? []).length).toBeGreaterThanOrEqual(2);
    expect(await new Response(proc.stderr).text()).toBe("");
  });

  test("run(argv) → the exit code, never process.exit: --help 0, an extra argument 2", async () => {
    expect(await run(["--help"])).toBe(0);
    expect(await run(["a", "b"])).toBe(2);
  });
});
