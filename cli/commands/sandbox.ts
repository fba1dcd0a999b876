// `bun run sandbox <session> [on|off]`: show a root session's sandbox, or turn it on or off.
import { executeCommand, expectPositionals } from "../frame";
import { UsageError } from "../errors";
import { sessionSandboxJson, sessionSandboxView } from "../session-view";

export function run(argv: string[]): Promise<number> {
  return executeCommand(
    {
      name: "sandbox",
      help: `usage: bun run sandbox <session> [on|off] [--json]

Without on/off: shows the session's sandbox (mode and where it comes from, resources, VM name).
on/off: sets the mode of a root session (a child follows its root). Off removes its VM and data volume
in the background; from then on the session's commands run on the host, as without the sandbox (the
OpenCode plugin routes them; plugin/README.md). While it is on, nothing of the session runs on the host.`,
      options: {},
    },
    argv,
    async ({ positionals, out, client }) => {
      const [session, mode] = expectPositionals(positionals, ["session", "on|off"], 1) as [string, string | undefined];
      if (mode !== undefined && mode !== "on" && mode !== "off") throw new UsageError(`${JSON.stringify(mode)} is neither on nor off`, `write \`bun run sandbox ${session} on\` or \`… off\``);
      const state = mode === undefined ? await client.sandbox.get(session) : await client.sandbox.set(session, { sandboxed: mode === "on" });
      out.json ? out.printJson(sessionSandboxJson(state)) : out.line(sessionSandboxView(state, out));
    },
  );
}
