// `session-sandbox stats [<vm>] [--watch]`: CPU %, memory, pids and disk per VM, read by the manager from
// the runtime's cgroups and volumes (GET /api/vms/stats). CPU % is the CPU time used between two reads
// over the time between them, 100% being one CPU, as `docker stats` counts it.
import { cpuPercentBetween, type SandboxClient } from "../../sdk/index";
import { vmOfTarget } from "../target";
import { executeCommand, expectPositionals } from "../frame";
import { EXIT } from "../errors";
import { formatBytes } from "../format";
import { renderTable, type Output } from "../output";

type VmStats = Awaited<ReturnType<SandboxClient["vms"]["stats"]>>;
type Row = VmStats & { cpuPercent: number | null };

/** The gap between the two reads of a one-shot run, and between refreshes with --watch. */
const SAMPLE_MS = 1_000;
const WATCH_MS = 2_000;

const HELP = `usage: bun run stats [<vm|session>] [--watch] [--json]

CPU %, memory, pids and disk of every VM the manager knows (or of one, named by its name or by any
session of its tree), read from the runtime's cgroups
and each VM's home volume. CPU % is measured over ${SAMPLE_MS / 1000} s (100% = one CPU); MEMORY excludes page
cache the kernel can drop, and includes /tmp. --watch refreshes every ${WATCH_MS / 1000} s until Ctrl-C (with
--json: one JSON object per line). The msb runtime cannot report usage: its VMs show "-" and the reason.`;

async function read(client: SandboxClient, vm: string | undefined): Promise<VmStats[]> {
  return vm === undefined ? (await client.vms.allStats()).vms : [await client.vms.stats(vm)];
}

function withCpuPercent(current: VmStats[], previous: VmStats[]): Row[] {
  return current.map((now) => {
    return { ...now, cpuPercent: cpuPercentBetween(previous.find((p) => p.name === now.name), now) };
  });
}

const ofLimit = (used: number | null, limit: number | null) => (used === null ? "-" : limit === null ? formatBytes(used) : `${formatBytes(used)} / ${formatBytes(limit)}`);

function statsTable(rows: Row[], out: Output): string {
  const right = new Set(["CPU %", "MEM %", "PIDS"]);
  const columns = ["NAME", "SESSION", "STATUS", "CPU %", "MEMORY", "MEM %", "PIDS", "DISK"].map((header) => ({ header, align: right.has(header) ? ("right" as const) : ("left" as const) }));
  const percent = (value: number | null) => (value === null ? "-" : `${value.toFixed(1)}%`);
  const table = renderTable(
    columns,
    rows.map((row) => [
      out.paint.cyan(row.name),
      row.rootSessionID ?? "-",
      row.status === "running" ? out.paint.green(row.status) : out.paint.dim(row.status),
      percent(row.cpuPercent),
      ofLimit(row.memoryBytes, row.memoryLimitBytes),
      percent(row.memoryBytes !== null && row.memoryLimitBytes ? (row.memoryBytes / row.memoryLimitBytes) * 100 : null),
      row.pids === null ? "-" : String(row.pids),
      ofLimit(row.diskUsedBytes, row.diskSizeBytes),
    ]),
    out.paint,
  );
  const reasons = [...new Set(rows.flatMap((row) => (row.reason ? [row.reason] : [])))];
  const notes = rows.length === 0 ? [out.paint.dim("(no VMs)")] : reasons.map((reason) => out.paint.dim(`usage not available: ${reason}`));
  return [table, ...notes].join("\n");
}

/** Waits `ms`, or less when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** Refreshes until Ctrl-C (SIGINT) or SIGTERM, which end it normally (exit 0). */
async function watch(client: SandboxClient, vm: string | undefined, out: Output): Promise<void> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    let previous = await read(client, vm);
    await pause(SAMPLE_MS, stop.signal);
    while (!stop.signal.aborted) {
      const current = await read(client, vm);
      const rows = withCpuPercent(current, previous);
      previous = current;
      if (out.json) out.line(JSON.stringify({ vms: rows }));
      else if (out.human) out.line(`\x1b[H\x1b[2J${statsTable(rows, out)}`); // repaint in place
      else out.line(`${statsTable(rows, out)}\n`);
      await pause(WATCH_MS, stop.signal);
    }
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

export function run(argv: string[]): Promise<number> {
  return executeCommand({ name: "stats", help: HELP, options: { watch: { type: "boolean", short: "w" } } }, argv, async ({ positionals, values, out, client }) => {
    const [target] = expectPositionals(positionals, ["vm|session"], 1);
    const vm = target === undefined ? undefined : await vmOfTarget(client, target);
    if (values.watch) return void (await watch(client, vm, out));
    const first = await read(client, vm);
    await Bun.sleep(SAMPLE_MS);
    const rows = withCpuPercent(await read(client, vm), first);
    if (out.json) out.printJson({ vms: rows });
    else out.line(statsTable(rows, out));
    return EXIT.ok;
  });
}
