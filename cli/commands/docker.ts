// `bun run docker <session> [on|off|start] | --clear`: a Docker Engine in a root session's VM (docs/docker.md).
import { executeCommand } from "../frame";
import { UsageError } from "../errors";
import { sessionSandboxJson, sessionSandboxView } from "../session-view";

const ACTIONS = ["on", "off", "start"] as const;

export function run(argv: string[]): Promise<number> {
  return executeCommand(
    {
      name: "docker",
      help: `usage: bun run docker <session> [on|off] [--json]
       bun run docker <session> start [--json]
       bun run docker <session> --clear [--json]

on gives a root session's VM a Docker Engine, on a tier that can hold one (gvisor or microvm; the container
tier refuses it, with why); off stops the daemon and removes its data from the VM; --clear
follows the settings' docker default again. start starts the daemon now and waits until it answers (up to
180 s); in the VM, \`sandbox-docker start|status|log|stop\` does the same. Without an action: shows the
session's sandbox.`,
      options: { clear: { type: "boolean" } },
    },
    argv,
    async ({ positionals, values, out, client }) => {
      const [session, action, ...extra] = positionals;
      if (!session || extra.length > 0) throw new UsageError("expected <session> and at most one action", "e.g. `bun run docker ses_123 on`");
      if (values.clear && action !== undefined) throw new UsageError("--clear cannot be combined with an action", "give either on, off, start or --clear");
      if (action !== undefined && !(ACTIONS as readonly string[]).includes(action)) throw new UsageError(`${JSON.stringify(action)} is not a docker action`, `use one of ${ACTIONS.join(", ")}`);
      if (action === "start") {
        const started = await client.docker.start(session);
        return out.json ? out.printJson(started) : out.line(`docker ${started.version} answers in the VM of ${session}`);
      }
      const change = values.clear ? null : action === undefined ? undefined : action === "on";
      const state = change === undefined ? await client.sandbox.get(session) : await client.sandbox.set(session, { docker: change });
      out.json ? out.printJson(sessionSandboxJson(state)) : out.line(sessionSandboxView(state, out));
    },
  );
}
