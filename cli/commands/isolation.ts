// `bun run isolation <session> [auto|container|gvisor|microvm] | --clear`: a root session's isolation tier.
import { ISOLATION_CHOICES, isIsolationChoice } from "../../runtime/isolation";
import { executeCommand } from "../frame";
import { UsageError } from "../errors";
import { sessionSandboxJson, sessionSandboxView } from "../session-view";

export function run(argv: string[]): Promise<number> {
  return executeCommand(
    {
      name: "isolation",
      help: `usage: bun run isolation <session> [auto|container|gvisor|microvm] [--json]
       bun run isolation <session> --clear [--json]

Sets a root session's isolation tier (auto: the strongest that works on this host), or --clear removes the
override so the settings' isolation applies again. Without a tier: shows the session's sandbox. \`bun run doctor\`
says which tiers work here. The change applies to the session's next command: its VM is recreated in the new
tier. Each tier keeps its own home volume: the old tier's stays (moving back finds it) until the VM is removed.`,
      options: { clear: { type: "boolean" } },
    },
    argv,
    async ({ positionals, values, out, client }) => {
      const [session, tier, ...extra] = positionals;
      if (!session || extra.length > 0) throw new UsageError("expected <session> and at most one tier", "e.g. `bun run isolation ses_123 gvisor`");
      if (values.clear && tier !== undefined) throw new UsageError("--clear cannot be combined with a tier", "give either a tier or --clear");
      if (tier !== undefined && !isIsolationChoice(tier)) throw new UsageError(`${JSON.stringify(tier)} is not an isolation tier`, `use one of ${ISOLATION_CHOICES.join(", ")}`);
      const change = values.clear ? null : tier;
      const state = change === undefined ? await client.sandbox.get(session) : await client.sandbox.set(session, { isolation: change });
      out.json ? out.printJson(sessionSandboxJson(state)) : out.line(sessionSandboxView(state, out));
    },
  );
}
