// `bun run sessions`: every registered session with its root, parent, fork origin and directory.
import { executeCommand, expectPositionals } from "../frame";
import { isoTime, timeCell } from "../format";
import { renderTable } from "../output";

export function run(argv: string[]): Promise<number> {
  return executeCommand(
    {
      name: "sessions",
      help: "usage: bun run sessions [--json]\n\nLists every registered session: ID, ROOT, PARENT, FORK OF, SANDBOX (on/off), VM (its root's VM and status, once it exists),\nDIRECTORY, CREATED. ROOT and SANDBOX are \"?\" where a stored parent chain is broken.",
      options: {},
    },
    argv,
    async ({ positionals, out, client }) => {
      expectPositionals(positionals, []);
      const sessions = (await client.sessions.list()).sessions.toSorted((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
      // The VM a session's commands run in, if it exists now (a root's VM appears at its first command).
      const vmStatus = new Map((await client.vms.list()).vms.map((vm) => [vm.name, vm.status]));
      const vmOf = (s: (typeof sessions)[number]) => (s.vmName !== null && vmStatus.has(s.vmName) ? { name: s.vmName, status: vmStatus.get(s.vmName)! } : null);
      if (out.json) {
        return out.printJson({
          sessions: sessions.map((s) => ({
            id: s.id,
            rootSessionID: s.rootSessionID,
            parentID: s.parentID,
            forkOf: s.forkOf,
            directory: s.directory,
            createdAt: isoTime(s.createdAt),
            sandboxed: s.sandboxed,
            vmName: vmOf(s)?.name ?? null,
            vmStatus: vmOf(s)?.status ?? null,
          })),
        });
      }
      const columns = ["ID", "ROOT", "PARENT", "FORK OF", "SANDBOX", "VM", "DIRECTORY", "CREATED"].map((header) => ({ header }));
      const sandboxCell = (sandboxed: boolean | null) => (sandboxed === null ? out.paint.red("?") : sandboxed ? out.paint.green("on") : out.paint.dim("off"));
      const rows = sessions.map((s) => {
        const vm = vmOf(s);
        return [
          out.paint.cyan(s.id),
          s.rootSessionID ?? out.paint.red("?"),
          s.parentID ?? "-",
          s.forkOf ?? "-",
          sandboxCell(s.sandboxed),
          vm ? `${vm.name} (${vm.status})` : "-",
          s.directory,
          timeCell(s.createdAt, out),
        ];
      });
      out.line(renderTable(columns, rows, out.paint));
      if (sessions.length === 0) out.line(out.paint.dim("(no sessions)"));
    },
  );
}
