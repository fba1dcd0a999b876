// `session-sandbox inspect <vm|session>`: everything the manager knows about one root's sandbox, found by
// its VM's name or by any session of its tree: the session, its sandbox settings, its VM (with usage
// when the runtime reports it) and its last commands.
import type { SandboxClient } from "../../sdk/index";
import { executeCommand, expectPositionals } from "../frame";
import { sessionOfTarget } from "../target";
import { formatBytes, isoTime } from "../format";
import type { Output } from "../output";
import { sessionSandboxJson, sessionSandboxView } from "../session-view";
import { vmJson, vmsTable } from "./vms";
import { entryJson, renderEntry } from "./logs";

const RECENT_EXECS = 5;

const HELP = `usage: session-sandbox inspect <vm|session> [--json]

Everything the manager knows about one sandbox, named by its VM (ocm-session-…) or by any session of its
tree: the session (parent, root, directory), its sandbox (mode, resources, network, image, secrets, last
stop), its VM (status, size, mounts, running commands, and CPU, memory, pids and disk when the runtime
reports them) and its last ${RECENT_EXECS} commands.`;

type Vm = Awaited<ReturnType<SandboxClient["vms"]["list"]>>["vms"][number];
type VmStats = Awaited<ReturnType<SandboxClient["vms"]["stats"]>>;

function statsPairs(stats: VmStats | null): string {
  if (!stats) return "-";
  if (!stats.available) return `usage not available: ${stats.reason ?? "the runtime does not report it"}`;
  const cpu = stats.cpuSeconds === null ? "-" : `${stats.cpuSeconds.toFixed(1)} CPU s`;
  const memory = stats.memoryBytes === null ? "-" : formatBytes(stats.memoryBytes);
  const disk = stats.diskUsedBytes === null ? "-" : formatBytes(stats.diskUsedBytes);
  return `${cpu}, memory ${memory}, pids ${stats.pids ?? "-"}, disk ${disk}`;
}

export function run(argv: string[]): Promise<number> {
  return executeCommand({ name: "inspect", help: HELP, options: {} }, argv, async ({ positionals, out, client }) => {
    const [target] = expectPositionals(positionals, ["vm|session"]) as [string];
    const { vms } = await client.vms.list();
    const sessionId = await sessionOfTarget(client, target, vms);
    const [session, sandbox, { execs }] = await Promise.all([client.sessions.get(sessionId), client.sandbox.get(sessionId), client.execs.list(sessionId, { limit: RECENT_EXECS })]);
    const vm = vms.find((candidate) => candidate.name === sandbox.vmName) ?? null;
    const stats = vm ? await client.vms.stats(vm.name).catch(() => null) : null;
    if (out.json) {
      const sessionJson = { ...session, createdAt: isoTime(session.createdAt) };
      const statsJson = stats && { ...stats, at: isoTime(stats.at) };
      return void out.printJson({ session: sessionJson, sandbox: sessionSandboxJson(sandbox), vm: vm && vmJson(vm), stats: statsJson, execs: execs.map(entryJson) });
    }
    render({ session, sandbox, vm, stats, execs }, out);
  });
}

function render(view: { session: Awaited<ReturnType<SandboxClient["sessions"]["get"]>>; sandbox: Parameters<typeof sessionSandboxView>[0]; vm: Vm | null; stats: VmStats | null; execs: Parameters<typeof renderEntry>[0][] }, out: Output): void {
  const { session, sandbox, vm, stats, execs } = view;
  const heading = (text: string) => out.line(`\n${out.paint.bold(text)}`);
  out.line(`${out.paint.bold("SESSION")}  ${session.id}  parent=${session.parentID ?? "-"}  root=${session.rootSessionID}  dir=${session.directory}`);
  heading("SANDBOX");
  out.line(sessionSandboxView(sandbox, out));
  heading("VM");
  out.line(vm ? `${vmsTable([vm], out)}\nmounts: ${vm.spec?.mounts.join(", ") ?? "-"}\nusage:  ${statsPairs(stats)}` : out.paint.dim(`${sandbox.vmName} does not exist now (it boots at the session's next command)`));
  heading(`LAST ${RECENT_EXECS} COMMANDS`);
  out.line(execs.length === 0 ? out.paint.dim("(none yet)") : [...execs].reverse().map((entry) => renderEntry(entry, session.id, out)).join("\n"));
}
