// `bun run vms`: every VM the manager knows — name, session, status, size, times, why it last stopped.
import type { SandboxClient } from "../../sdk/index";
import { executeCommand, expectPositionals } from "../frame";
import { formatMib, isoOrNull, isoTime, timeCell } from "../format";
import { renderTable, type Output } from "../output";

type Vm = Awaited<ReturnType<SandboxClient["vms"]["list"]>>["vms"][number];

/** The --json shape of one VM: flat, stable keys, ISO 8601 times. */
export function vmJson(vm: Vm) {
  return {
    name: vm.name,
    rootSessionID: vm.rootSessionID,
    status: vm.status,
    cpus: vm.spec?.cpus ?? null,
    memoryMib: vm.spec?.memoryMib ?? null,
    tmpSizeMib: vm.spec?.tmpSizeMib ?? null,
    mounts: vm.spec?.mounts ?? [],
    image: vm.spec?.image ?? null,
    createdAt: isoOrNull(vm.createdAt),
    lastUsedAt: isoTime(vm.lastUsedAt),
    runningExecs: vm.runningExecs,
    lastStopReason: vm.lastStopReason,
  };
}

function statusCell(status: Vm["status"], out: Output): string {
  if (status === "running") return out.paint.green(status);
  if (status === "stopped" || status === "absent") return out.paint.dim(status);
  return out.paint.yellow(status);
}

export function vmsTable(vms: Vm[], out: Output): string {
  const columns = ["NAME", "SESSION", "STATUS", "EXECS", "CPUS", "MEMORY", "CREATED", "LAST USED", "LAST STOP REASON"].map((header) => ({
    header,
    align: header === "EXECS" || header === "CPUS" || header === "MEMORY" ? ("right" as const) : ("left" as const),
  }));
  const rows = vms.map((vm) => [
    out.paint.cyan(vm.name),
    vm.rootSessionID ?? "-",
    statusCell(vm.status, out),
    vm.runningExecs > 0 ? out.paint.yellow(String(vm.runningExecs)) : "0",
    vm.spec ? String(vm.spec.cpus) : "-",
    vm.spec ? formatMib(vm.spec.memoryMib) : "-",
    timeCell(vm.createdAt, out),
    timeCell(vm.lastUsedAt, out),
    vm.lastStopReason ?? "-",
  ]);
  return renderTable(columns, rows, out.paint);
}

const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

export function run(argv: string[]): Promise<number> {
  return executeCommand(
    {
      name: "vms",
      help: "usage: bun run vms [--json]\n\nLists every VM the manager knows: NAME, SESSION, STATUS, EXECS (commands running now), CPUS, MEMORY, CREATED, LAST USED,\nLAST STOP REASON.",
      options: {},
    },
    argv,
    async ({ positionals, out, client }) => {
      expectPositionals(positionals, []);
      const vms = (await client.vms.list()).vms.toSorted(byName);
      if (out.json) return out.printJson({ vms: vms.map(vmJson) });
      out.line(vmsTable(vms, out));
      if (vms.length === 0) out.line(out.paint.dim("(no VMs)"));
    },
  );
}
