// `bun run sessions`: every registered session with its root, parent, fork origin and directory.
import { expectPositionals, runCommand } from "./cli";
import { isoTime, timeCell } from "./format";
import { renderTable } from "./output";

if (import.meta.main) {
  await runCommand(
    {
      name: "sessions",
      help: "usage: bun run sessions [--json]\n\nLists every registered session: ID, ROOT, PARENT, FORK OF, DIRECTORY, CREATED.\nROOT is \"?\" where a stored parent chain is broken.",
      options: {},
    },
    async ({ positionals, out, client }) => {
      expectPositionals(positionals, []);
      const sessions = (await client.sessions.list()).sessions.toSorted((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
      if (out.json) {
        return out.printJson({
          sessions: sessions.map((s) => ({ id: s.id, rootSessionID: s.rootSessionID, parentID: s.parentID, forkOf: s.forkOf, directory: s.directory, createdAt: isoTime(s.createdAt) })),
        });
      }
      const columns = ["ID", "ROOT", "PARENT", "FORK OF", "DIRECTORY", "CREATED"].map((header) => ({ header }));
      const rows = sessions.map((s) => [
        out.paint.cyan(s.id),
        s.rootSessionID ?? out.paint.red("?"),
        s.parentID ?? "-",
        s.forkOf ?? "-",
        s.directory,
        timeCell(s.createdAt, out),
      ]);
      out.line(renderTable(columns, rows, out.paint));
      if (sessions.length === 0) out.line(out.paint.dim("(no sessions)"));
    },
  );
}
