// `bun run secrets [<session> [grant|revoke <NAME>...]]`: the configured secrets (names, hosts, scope) and
// which of them a root session's commands get; grant or revoke one by name. Never a value.
import type { SandboxClient } from "../../sdk/index";
import { executeCommand, expectPositionals } from "../frame";
import { UsageError } from "../errors";
import { renderPairs, renderTable, type Output } from "../output";

type Configured = Awaited<ReturnType<SandboxClient["secrets"]["list"]>>["secrets"];
type SessionSandbox = Awaited<ReturnType<SandboxClient["sandbox"]["get"]>>;

/** `grant`/`revoke` with at least one name → the change; nothing → show. */
function parseSecretsArguments(session: string, words: string[]): { verb: "grant" | "revoke"; names: string[] } | undefined {
  const [verb, ...names] = words;
  if (verb === undefined) return undefined;
  if (verb !== "grant" && verb !== "revoke") throw new UsageError(`${JSON.stringify(verb)} is neither grant nor revoke`, `write \`bun run secrets ${session} grant <NAME>\` or \`… revoke <NAME>\``);
  const split = names.flatMap((word) => word.split(",")).filter((name) => name !== "");
  if (split.length === 0) throw new UsageError(`\`${verb}\` needs at least one secret name`, "list the configured names with `bun run secrets`");
  return { verb, names: split };
}

function configuredTable(secrets: Configured, out: Output): string {
  const rows = secrets.map((s) => [out.paint.cyan(s.name), s.scope, s.hosts.join(", ")]);
  return renderTable([{ header: "NAME" }, { header: "SCOPE" }, { header: "HOSTS" }], rows, out.paint);
}

/** What the session gets of each configured secret, and grants of names no longer configured. */
function sessionRows(secrets: Configured, state: SessionSandbox, out: Output): string[][] {
  const { granted, effective } = state.secrets;
  const gets = (name: string, scope: string) => {
    if (!effective.includes(name)) return out.paint.dim("no");
    return scope === "all" ? out.paint.green("yes (scope all)") : out.paint.green("yes (granted)");
  };
  const rows = secrets.map((s) => [out.paint.cyan(s.name), s.scope, s.hosts.join(", "), gets(s.name, s.scope)]);
  const stale = granted.filter((name) => !secrets.some((s) => s.name === name));
  return [...rows, ...stale.map((name) => [name, "-", "-", out.paint.yellow("no (granted, not configured)")])];
}

function sessionSecretsView(secrets: Configured, state: SessionSandbox, out: Output): string {
  const head = renderPairs([["SESSION", out.paint.cyan(state.sessionID)], ["ROOT", state.rootSessionID]], out.paint);
  const table = renderTable([{ header: "NAME" }, { header: "SCOPE" }, { header: "HOSTS" }, { header: "THIS SESSION" }], sessionRows(secrets, state, out), out.paint);
  return `${head}\n\n${table}`;
}

export function run(argv: string[]): Promise<number> {
  return executeCommand(
    {
      name: "secrets",
      help: `usage: bun run secrets [--json]
       bun run secrets <session> [--json]
       bun run secrets <session> grant|revoke <NAME> [<NAME> ...] [--json]

Without a session: the secrets configured on the manager (SANDBOX_SECRETS), each with its scope and the
hosts its value may be sent to. Values are never shown, nor sent over the API.
With a session: which of them its commands get. Scope "all" goes to every sandboxed session; scope
"granted" only to root sessions it is granted to (a child follows its root).
grant/revoke (names may also be comma-separated) change a root session's grants. Either one cuts the VM's
open network connections at once; the guest sees the change from its next command.`,
      options: {},
    },
    argv,
    async ({ positionals, out, client }) => {
      const [session] = expectPositionals(positionals.slice(0, 1), ["session"], 1) as [string | undefined];
      const configured = (await client.secrets.list()).secrets;
      if (session === undefined) {
        if (out.json) return out.printJson({ secrets: configured });
        out.line(configuredTable(configured, out));
        if (configured.length === 0) out.line(out.paint.dim("(no secrets configured: set SANDBOX_SECRETS for the manager)"));
        return;
      }
      const change = parseSecretsArguments(session, positionals.slice(1));
      const state = change === undefined ? await client.sandbox.get(session) : await client.secrets[change.verb](session, change.names);
      if (out.json) return out.printJson({ sessionID: state.sessionID, rootSessionID: state.rootSessionID, ...state.secrets, configured });
      out.line(sessionSecretsView(configured, state, out));
    },
  );
}
