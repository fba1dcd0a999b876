// `session-sandbox rm <vm|session>`: remove one VM and its data volume (its running commands are cancelled).
import { executeCommand, expectPositionals } from "../frame";
import { vmOfTarget } from "../target";

export function run(argv: string[]): Promise<number> {
  return executeCommand(
    {
      name: "rm",
      help: `usage: bun run rm <vm|session> [--json]

Removes the VM (see \`session-sandbox vms\`), named by its name or by any session of its tree, and its
data volume; its running commands are cancelled. The session keeps its mode: its next command boots a
fresh VM.`,
      options: {},
    },
    argv,
    async ({ positionals, out, client }) => {
      const [target] = expectPositionals(positionals, ["vm|session"]) as [string];
      const { removed } = await client.vms.remove(await vmOfTarget(client, target));
      out.json ? out.printJson({ removed }) : out.line(`removed ${out.paint.cyan(removed)} and its data volume`);
    },
  );
}
