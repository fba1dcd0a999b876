// `bun run network <session> [none|all|allow <entry>...] | --clear`: a root session's network policy override.
import { executeCommand, expectPositionals } from "../frame";
import { UsageError } from "../errors";
import { sessionSandboxJson, sessionSandboxView } from "../session-view";
import type { NetworkPolicy } from "../network-arg";

/** `none`, `all`, `allow <entry>...` (entries may also be comma-separated) → the policy; nothing → show. */
function parseNetworkArguments(session: string, words: string[]): NetworkPolicy | undefined {
  const [mode, ...rest] = words;
  if (mode === undefined) return undefined;
  if (mode === "none" || mode === "all") {
    if (rest.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(rest[0])} after ${mode}`, `only \`allow\` takes entries: \`bun run network ${session} allow api.github.com\``);
    return { mode };
  }
  if (mode === "allow" || mode === "allowlist") {
    const allow = rest.flatMap((word) => word.split(",")).filter((entry) => entry !== "");
    if (allow.length === 0) throw new UsageError("`allow` needs at least one entry", `write \`bun run network ${session} allow api.github.com '*.example.com'\`, or \`none\` to allow nothing`);
    return { mode: "allowlist", allow };
  }
  throw new UsageError(`${JSON.stringify(mode)} is not none, all or allow`, `write \`bun run network ${session} none\`, \`… all\` or \`… allow <entry> [<entry> ...]\``);
}

export function run(argv: string[]): Promise<number> {
  return executeCommand(
    {
      name: "network",
      help: `usage: bun run network <session> [--json]
       bun run network <session> none|all [--json]
       bun run network <session> allow <entry> [<entry> ...] [--json]
       bun run network <session> --clear [--json]

Without a policy: shows the session's sandbox with its effective network policy, and whether it is the
session's override or the settings default. none, all, or allow (alias allowlist) with entries sets a root session's
override (a child follows its root); --clear removes it so the settings default applies again.
Entries: domains (api.github.com, *.example.com, optionally :port), IP addresses or CIDRs, or the
keywords public, private, loopback, link-local, metadata, host; the manager checks them. In allowlist
mode the metadata, private and loopback ranges stay blocked unless named. The change applies to the
session's next command.`,
      options: { clear: { type: "boolean" } },
    },
    argv,
    async ({ positionals, values, out, client }) => {
      const [session] = expectPositionals(positionals.slice(0, 1), ["session"]) as [string];
      const words = positionals.slice(1);
      if (values.clear && words.length > 0) throw new UsageError("--clear cannot be combined with a policy", `clear with \`bun run network ${session} --clear\`, or set the policy alone`);
      const policy = parseNetworkArguments(session, words);
      const change = values.clear ? null : policy;
      const state = change === undefined ? await client.sandbox.get(session) : await client.sandbox.set(session, { network: change });
      out.json ? out.printJson(sessionSandboxJson(state)) : out.line(sessionSandboxView(state, out));
    },
  );
}
