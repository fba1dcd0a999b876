// `session-sandbox ps <session>`: the commands running now in the session's VM (GET …/processes),
// background ones and foreground ones in progress, with their call ids for `logs -f` and `kill`.
import { executeCommand, expectPositionals } from "../frame";
import { formatBytes, isoTime, timeCell } from "../format";
import { renderTable } from "../output";
import { sessionOfTarget } from "../target";

const HELP = `usage: bun run ps <session|vm> [--json]

The commands running now in the session's VM (a root session: its whole tree's), oldest first: call id,
when it started, whether it runs in the background (exec -d), how much it printed, and the command.
Follow one with \`logs <session> <call id> -f\`; end one (its whole tree) with \`kill <session> <call id>\`.`;

export function run(argv: string[]): Promise<number> {
  return executeCommand({ name: "ps", help: HELP, options: {} }, argv, async ({ positionals, out, client }) => {
    const [target] = expectPositionals(positionals, ["session|vm"]) as [string];
    const session = await sessionOfTarget(client, target);
    const { processes } = await client.processes.list(session);
    if (out.json) return void out.printJson({ processes: processes.map((p) => ({ ...p, startedAt: isoTime(p.startedAt) })) });
    if (processes.length === 0) return void out.line(out.paint.dim("(nothing runs)"));
    const columns = ["CALL ID", "STARTED", "MODE", "OUTPUT", "COMMAND"].map((header) => ({ header, align: "left" as const }));
    out.line(
      renderTable(
        columns,
        processes.map((p) => [out.paint.cyan(p.callID), timeCell(p.startedAt, out), p.background ? "background" : "foreground", formatBytes(p.outputBytes), p.command.split("\n")[0]!.slice(0, 80)]),
        out.paint,
      ),
    );
  });
}
