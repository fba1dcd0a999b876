// `session-sandbox kill <session> <call id>`: ends a running command and its whole tree in the VM
// (DELETE …/processes/:callID), as `docker kill` ends a container's process.
import { executeCommand, expectPositionals } from "../frame";
import { sessionOfTarget } from "../target";

const HELP = `usage: bun run kill <session|vm> <call id> [--json]

Kills the running command with this call id (see \`ps\`) and everything it started in the VM, background
children included; answers once it ended.`;

export function run(argv: string[]): Promise<number> {
  return executeCommand({ name: "kill", help: HELP, options: {} }, argv, async ({ positionals, out, client }) => {
    const [target, callID] = expectPositionals(positionals, ["session|vm", "call id"]) as [string, string];
    const killed = await client.processes.kill(await sessionOfTarget(client, target), callID);
    out.json ? out.printJson(killed) : out.line(`killed ${out.paint.cyan(callID)}`);
  });
}
