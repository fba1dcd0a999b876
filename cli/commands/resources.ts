// `bun run resources <session> --cpus N --memory 2G | --clear`: a root session's CPU and memory override.
import { executeCommand, expectPositionals } from "../frame";
import { UsageError } from "../errors";
import { parseSizeMib, parseWholeNumber } from "../parse";
import { sessionSandboxJson, sessionSandboxView } from "../session-view";

export function run(argv: string[]): Promise<number> {
  return executeCommand(
    {
      name: "resources",
      help: `usage: bun run resources <session> [--cpus N] [--memory SIZE] [--json]
       bun run resources <session> --clear [--json]

Sets a root session's override (either or both of --cpus and --memory; SIZE like 2G, 512M or MiB),
or --clear removes it so the settings apply again. Without options: shows the session's resources.
The change applies to the session's next command (a running VM is recreated, its data volume kept).`,
      options: { cpus: { type: "string" }, memory: { type: "string" }, clear: { type: "boolean" } },
    },
    argv,
    async ({ positionals, values, out, client }) => {
      const [session] = expectPositionals(positionals, ["session"]) as [string];
      if (values.clear && (values.cpus !== undefined || values.memory !== undefined)) {
        throw new UsageError("--clear cannot be combined with --cpus or --memory", "clear first, or set both values explicitly");
      }
      const cpus = values.cpus === undefined ? undefined : parseWholeNumber(values.cpus, "--cpus");
      const memoryMib = values.memory === undefined ? undefined : parseSizeMib(values.memory, "--memory");
      const change = values.clear ? null : cpus === undefined && memoryMib === undefined ? undefined : { cpus, memoryMib };
      const state = change === undefined ? await client.sandbox.get(session) : await client.sandbox.set(session, { resources: change });
      out.json ? out.printJson(sessionSandboxJson(state)) : out.line(sessionSandboxView(state, out));
    },
  );
}
