#!/usr/bin/env -S bun --no-env-file --config=/dev/null
// `session-sandbox <command> …`: the one installable command. It runs in the user's current directory,
// which may be a repository a sandbox writes: the flags above keep Bun from loading that directory's
// `.env` (a SANDBOX_URL there would send the token elsewhere) and `bunfig.toml` (a preload would run as
// the user). `--config=` must keep its `=`: `--config FILE` would take ./bunfig.toml and run FILE.
// Each subcommand is a module: the admin scripts (scripts/admin/, also `bun run <name>` in the
// repository) and the CLI's own (scripts/cli/).
// Only the manager is ever asked to act: an unknown subcommand is a usage error, never a program on PATH.
import { existsSync } from "node:fs";
import { join } from "node:path";
import packageJson from "../../package.json" with { type: "json" };
import { dispatchTo } from "../admin/cli";

const ADMIN = join(import.meta.dir, "../admin");

/** Admin scripts run on import (their guard asks runsAsCommand); the others export run(argv). */
type Subcommand = { summary: string; script: string; kind: "admin" | "module" };

const admin = (name: string, summary: string): [string, Subcommand] => [name, { summary, script: join(ADMIN, `${name}.ts`), kind: "admin" }];
const own = (name: string, summary: string): [string, Subcommand] => [name, { summary, script: join(import.meta.dir, `${name}.ts`), kind: "module" }];

export const SUBCOMMANDS = new Map<string, Subcommand>([
  admin("vms", "list the VMs: status, size, image, running commands"),
  admin("sessions", "list the registered sessions with their sandbox and VM"),
  admin("settings", "show or change the server-wide sandbox settings"),
  admin("sandbox", "show a session's sandbox, or turn it on or off"),
  admin("resources", "show or set a root session's CPUs and memory"),
  admin("network", "show or set a root session's network policy"),
  admin("isolation", "show or set a root session's isolation tier"),
  admin("images", "list, pull, choose and remove guest images"),
  admin("secrets", "the configured secrets, and a session's grants"),
  admin("ca", "the manager CA every VM trusts; rotate it"),
  admin("users", "host users with a token of their own (their sessions only)"),
  admin("rm", "remove a VM and its data volume"),
  admin("prune", "remove VMs idle for a while"),
  admin("doctor", "check everything a working sandbox needs"),
  own("exec", "run a command in a session's VM, streaming its output"),
  own("shell", "an interactive shell in a session's VM"),
  own("logs", "a session's command history: exit code, duration, output tail"),
  own("stats", "CPU, memory, pids and disk per VM"),
  own("events", "the manager's events: VMs, commands, images, sessions"),
  own("inspect", "everything the manager knows about one VM or session"),
  own("serve", "run the manager in the foreground (as root)"),
  own("install-service", "install the manager as a systemd service"),
  ["token", { summary: "print the API token (on the manager's host; creates it if needed)", script: join(import.meta.dir, "../token.ts"), kind: "admin" }],
]);

const USAGE = `usage: session-sandbox <command> [arguments] [--json] [--help]
       session-sandbox --version

${[...SUBCOMMANDS].map(([name, { summary }]) => `  ${name.padEnd(10)}${summary}`).join("\n")}

\`session-sandbox <command> --help\` describes a command. Every command talks to the manager only
(SANDBOX_URL, SANDBOX_API_TOKEN): none of them runs a program of this host.
exit codes: 0 ok, 1 the operation failed, 2 usage error, 3 the manager is unreachable
            (exec and shell: the remote command's own exit code)`;

/** Runs one subcommand on `argv`; resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    process.stdout.write(`${USAGE}\n`);
    return name === undefined ? 2 : 0;
  }
  if (name === "--version" || name === "-v" || name === "version") {
    process.stdout.write(`session-sandbox ${packageJson.version}\n`);
    return 0;
  }
  const subcommand = SUBCOMMANDS.get(name);
  if (!subcommand) {
    process.stderr.write(`session-sandbox: unknown command ${JSON.stringify(name)} — fix: see \`session-sandbox --help\`\n`);
    return 2;
  }
  // Written by others as separate modules; a build without one says so instead of failing to import.
  if (!existsSync(subcommand.script)) {
    process.stderr.write(`session-sandbox: ${name} is not available in this build\n`);
    return 2;
  }
  dispatchTo(subcommand.script, rest);
  if (name === "token" && rest.length > 0) {
    process.stderr.write("token: takes no arguments — fix: run `session-sandbox token`\n");
    return 2;
  }
  const loaded = (await import(subcommand.script)) as { run?: (argv: string[]) => Promise<number> };
  if (subcommand.kind === "module") return loaded.run!(rest);
  return typeof process.exitCode === "number" ? process.exitCode : 0;
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2));
