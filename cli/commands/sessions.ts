// `session-sandbox sessions [create <dir> | rm <id>]`: every registered session with its root, parent, fork
// origin and directory; or register a root session for a directory (what the OpenCode plugin does for each
// session it sees), or delete one with its tree (a root's VM and volume go with it).
import { resolve } from "node:path";
import { ulid } from "ulid";
import { UsageError } from "../errors";
import { executeCommand, expectPositionals } from "../frame";
import { isoTime, timeCell } from "../format";
import { renderTable } from "../output";

export function run(argv: string[]): Promise<number> {
  return executeCommand(
    {
      name: "sessions",
      help: `usage: bun run sessions [--json | -q]
       bun run sessions create <dir> [--id ID] [--json]
       bun run sessions rm <id> [--json]

Lists every registered session: ID, ROOT, PARENT, FORK OF, SANDBOX (on/off), ACTIVITY (what its agent is
doing as the OpenCode plugin reports: busy, idle, retry #N, question, permission, and for how long; "-"
when nothing was reported), VM (its root's VM and status, once it exists), DIRECTORY, CREATED. A working
session (busy, retry; green) holds its root's VM: the idle sweep and the cap leave it alone. ROOT and SANDBOX are "?" where a stored parent chain is broken.
-q (--quiet) prints only the ids, one per line (as \`docker ps -q\`; shell completion uses it).
create registers a root session for <dir> (an id of its own unless --id), as the OpenCode plugin does for
each session; rm deletes a session and its children, and a root's VM and data volume with it.`,
      options: { id: { type: "string" }, quiet: { type: "boolean", short: "q" } },
    },
    argv,
    async ({ positionals, values, out, client }) => {
      const [action, ...rest] = positionals;
      if (action === "create") {
        const [dir] = expectPositionals(rest, ["dir"]) as [string];
        const session = await client.sessions.register({ id: values.id ?? `ses_${ulid().toLowerCase()}`, directory: resolve(dir) });
        return out.json ? out.printJson(session) : out.line(`registered ${out.paint.cyan(session.id)} for ${session.directory}`);
      }
      if (action === "rm") {
        const [id] = expectPositionals(rest, ["id"]) as [string];
        const deleted = await client.sessions.delete(id);
        return out.json ? out.printJson(deleted) : out.line(`deleted ${deleted.deleted.map((gone) => out.paint.cyan(gone)).join(", ")}`);
      }
      if (action !== undefined) throw new UsageError(`unknown action ${JSON.stringify(action)}`, "session-sandbox sessions [create <dir> | rm <id>]");
      if (values.id !== undefined) throw new UsageError("--id goes with create", "session-sandbox sessions create <dir> --id ID");
      const sessions = (await client.sessions.list()).sessions.toSorted((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
      if (values.quiet) return void process.stdout.write(sessions.map((s) => `${s.id}\n`).join(""));
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
            activity: s.activity && { ...s.activity, since: isoTime(s.activity.since), reportedAt: isoTime(s.activity.reportedAt) },
            vmName: vmOf(s)?.name ?? null,
            vmStatus: vmOf(s)?.status ?? null,
          })),
        });
      }
      const columns = ["ID", "ROOT", "PARENT", "FORK OF", "SANDBOX", "ACTIVITY", "VM", "DIRECTORY", "CREATED"].map((header) => ({ header }));
      const sandboxCell = (sandboxed: boolean | null) => (sandboxed === null ? out.paint.red("?") : sandboxed ? out.paint.green("on") : out.paint.dim("off"));
      const activityCell = (activity: (typeof sessions)[number]["activity"]) => {
        if (!activity) return "-";
        const what = activity.state === "retry" ? `retry #${activity.attempt ?? "?"}` : activity.state;
        const painted = activity.holds ? out.paint.green(what) : activity.state === "idle" ? out.paint.dim(what) : out.paint.yellow(what);
        return `${painted} ${timeCell(activity.since, out)}`;
      };
      const rows = sessions.map((s) => {
        const vm = vmOf(s);
        return [
          out.paint.cyan(s.id),
          s.rootSessionID ?? out.paint.red("?"),
          s.parentID ?? "-",
          s.forkOf ?? "-",
          sandboxCell(s.sandboxed),
          activityCell(s.activity),
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
