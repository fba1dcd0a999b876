#!/usr/bin/env -S bun --no-env-file --config=/dev/null
// `session-sandbox <command> …`: the one installable command. It runs in the user's current directory,
// which may be a repository a sandbox writes: the flags above keep Bun from loading that directory's
// `.env` (a SANDBOX_URL there would send the token elsewhere) and `bunfig.toml` (a preload would run as
// the user). `--config=` must keep its `=`: `--config FILE` would take ./bunfig.toml and run FILE.
// Each subcommand is a module of commands/ that exports run(argv) and does nothing on import; in the
// repository, `bun run <name>` (package.json) runs the same module through this file.
// Only the manager is ever asked to act: an unknown subcommand is a usage error, never a program on PATH.
import { existsSync } from "node:fs";
import { join } from "node:path";
import packageJson from "../package.json" with { type: "json" };

type Subcommand = { summary: string; script: string };

const command = (name: string, summary: string): [string, Subcommand] => [name, { summary, script: join(import.meta.dir, "commands", `${name}.ts`) }];

export const SUBCOMMANDS = new Map<string, Subcommand>([
  command("vms", "list the VMs: status, size, image, running commands"),
  command("sessions", "list the registered sessions with their sandbox and VM"),
  command("settings", "show or change the server-wide sandbox settings"),
  command("sandbox", "show a session's sandbox, or turn it on or off"),
  command("resources", "show or set a root session's CPUs and memory"),
  command("network", "show or set a root session's network policy"),
  command("isolation", "show or set a root session's isolation tier"),
  command("docker", "a Docker Engine in a session's VM: on, off, start"),
  command("images", "list, pull, choose and remove guest images"),
  command("secrets", "the configured secrets, and a session's grants"),
  command("ca", "the manager CA every VM trusts; rotate it"),
  command("users", "host users with a token of their own (their sessions only)"),
  command("rm", "remove a VM and its data volume"),
  command("prune", "remove VMs idle for a while"),
  command("doctor", "check everything a working sandbox needs"),
  command("exec", "run a command in a session's VM, streaming its output"),
  command("shell", "an interactive shell in a session's VM"),
  command("cp", "copy files into or out of a session's VM, like docker cp"),
  command("ps", "the commands running in a session's VM, background ones too"),
  command("kill", "end a running command and its whole tree in the VM"),
  command("port-forward", "forward a port of a session's VM (a dev server) to this host"),
  command("ports", "the forwarded ports of a session's VM; close one"),
  command("logs", "a session's command history: exit code, duration, output tail"),
  command("stats", "CPU, memory, pids and disk per VM"),
  command("events", "the manager's events: VMs, commands, images, sessions"),
  command("inspect", "everything the manager knows about one VM or session"),
  command("serve", "run the manager in the foreground (as root)"),
  command("install-service", "install the manager as a systemd service"),
  command("token", "print the API token (on the manager's host; creates it if needed)"),
  command("completion", "a completion script for bash, zsh or fish"),
]);

/** The widest name and two spaces: every summary starts in one column. */
const NAME_WIDTH = Math.max(...[...SUBCOMMANDS.keys()].map((name) => name.length)) + 2;

const USAGE = `usage: session-sandbox <command> [arguments] [--json] [--help]
       session-sandbox --version

${[...SUBCOMMANDS].map(([name, { summary }]) => `  ${name.padEnd(NAME_WIDTH)}${summary}`).join("\n")}

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
  const loaded = (await import(subcommand.script)) as { run: (argv: string[]) => Promise<number> };
  return loaded.run(rest);
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2));
