// `session-sandbox users [add <name> [--install] | rm <name>]`: host users with a token of their own
// (docs/non-root.md). The manager's own token only. `add --install`, run as root on the manager's host,
// writes the new token where that user's clients look first (~/.local/state/session-sandbox/api-token),
// as that user: root never writes into a home directory it does not own.
import { executeCommand, expectPositionals } from "../frame";
import { UsageError } from "../errors";
import { timeCell } from "../format";
import { renderTable } from "../output";

/** Writes `token` to the account's default token file, as the account itself (umask 077: the file is 0600). */
function installToken(name: string, token: string): string {
  const script = 'umask 077 && dir="$HOME/.local/state/session-sandbox" && mkdir -p "$dir" && cat > "$dir/api-token.tmp" && mv -f "$dir/api-token.tmp" "$dir/api-token" && echo "$dir/api-token"';
  const [, , uid, gid, , home] = Bun.spawnSync(["getent", "passwd", name], { stdout: "pipe" }).stdout.toString().trim().split(":");
  if (!home) throw new UsageError(`this host has no account ${JSON.stringify(name)}`, "run `users add --install` on the manager's host");
  const result = Bun.spawnSync(["setpriv", `--reuid=${uid}`, `--regid=${gid}`, "--init-groups", "--", "env", "-i", `HOME=${home}`, "PATH=/usr/bin:/bin", "sh", "-c", script], {
    stdin: new TextEncoder().encode(token),
    stdout: "pipe",
    stderr: "pipe",
  });
  if (result.exitCode !== 0) throw new Error(`could not write the token as ${name}: ${result.stderr.toString().trim()}`);
  return result.stdout.toString().trim();
}

export function run(argv: string[]): Promise<number> {
  return executeCommand(
    {
      name: "users",
      help: `usage: bun run users [--json]
       bun run users add <name> [--install] [--json]
       bun run users rm <name> [--json]

The host users with a token of their own. Such a token may register and use its own sessions only, and
only for directories that user can read, write and enter; everything else needs the manager's own token.
add prints the new token once (only its hash is kept); --install (as root, on the manager's host) writes it
to the user's ~/.local/state/session-sandbox/api-token instead, where their OpenCode plugin, shell shim
and CLI find it. rm takes the token away at once; the user's sessions stay until deleted.`,
      options: { install: { type: "boolean" } },
    },
    argv,
    async ({ positionals, values, out, client }) => {
      const [verb, name] = expectPositionals(positionals, ["add|rm", "name"], 2) as [string | undefined, string | undefined];
      if (verb === undefined) {
        const { users } = await client.users.list();
        if (out.json) return out.printJson({ users });
        out.line(renderTable([{ header: "USER" }, { header: "UID" }, { header: "SESSIONS" }, { header: "ADDED" }], users.map((u) => [u.name, String(u.uid), String(u.sessions), timeCell(u.createdAt, out)]), out.paint));
        if (users.length === 0) out.line(out.paint.dim("(no users: `session-sandbox users add <name> --install` gives one a token)"));
        return;
      }
      if (name === undefined) throw new UsageError(`\`${verb}\` needs a user name`, "write `session-sandbox users add <name>`");
      if (verb === "rm") {
        const removed = await client.users.remove(name);
        return out.json ? out.printJson(removed) : out.line(`removed the token of ${name}`);
      }
      if (verb !== "add") throw new UsageError(`${JSON.stringify(verb)} is neither add nor rm`, "write `session-sandbox users add <name>` or `… rm <name>`");
      const added = await client.users.add(name);
      if (values.install) {
        const path = installToken(name, added.token);
        return out.json ? out.printJson({ name: added.name, uid: added.uid, tokenFile: path }) : out.line(`${name} (uid ${added.uid}) has a token of their own in ${path}`);
      }
      if (out.json) return out.printJson(added);
      out.line(added.token);
      process.stderr.write(`the token of ${name} (uid ${added.uid}), shown once: give it to them as SANDBOX_API_TOKEN, or add it again with --install\n`);
    },
  );
}
