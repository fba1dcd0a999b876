// `bun run rm <vm>`: remove one VM and its data volume (its running commands are cancelled).
import { executeCommand, expectPositionals } from "../frame";

export function run(argv: string[]): Promise<number> {
  return executeCommand(
    {
      name: "rm",
      help: `usage: bun run rm <vm> [--json]

Removes the VM (see \`bun run vms\`) and its data volume; its running commands are cancelled. The
session keeps its mode: its next command boots a fresh VM.`,
      options: {},
    },
    argv,
    async ({ positionals, out, client }) => {
      const [name] = expectPositionals(positionals, ["vm"]) as [string];
      const { removed } = await client.vms.remove(name);
      out.json ? out.printJson({ removed }) : out.line(`removed ${out.paint.cyan(removed)} and its data volume`);
    },
  );
}
