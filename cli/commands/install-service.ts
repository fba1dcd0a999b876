// `session-sandbox install-service [--print]`: the manager as a systemd system service. The unit runs
// `session-sandbox serve` as root with its data in /var/lib/session-sandbox; it is written to
// /etc/systemd/system and enabled when systemd runs this machine, else printed with what to do.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const UNIT_PATH = "/etc/systemd/system/session-sandbox.service";
const CLI = join(import.meta.dir, "../session-sandbox.ts");

const HELP = `usage: session-sandbox install-service [--print]

Writes ${UNIT_PATH} (the manager as a system service: \`session-sandbox serve\` as root, data in
/var/lib/session-sandbox), then \`systemctl daemon-reload\` and \`systemctl enable --now session-sandbox\`.
--print   print the unit instead of installing it`;

/**
 * The unit for this installation: this Bun and this CLI by absolute path (systemd runs no shell and has
 * its own PATH), the CLI's flags so nothing is read from a working directory.
 */
function serviceUnit(bun: string, cli = CLI): string {
  return `# session-sandbox: written by \`session-sandbox install-service\`; remove with
#   systemctl disable --now session-sandbox && rm ${UNIT_PATH}
[Unit]
Description=session-sandbox manager: a sandbox VM for every OpenCode root session
After=network.target

[Service]
Type=simple
ExecStart=${bun} --no-env-file --config=/dev/null ${cli} serve
WorkingDirectory=/
Environment=SANDBOX_DATA_DIR=/var/lib/session-sandbox
StateDirectory=session-sandbox
StateDirectoryMode=0700
# The manager creates its VMs' cgroups and moves their processes out of its own: it manages its subtree.
Delegate=yes
# SIGTERM to the manager alone: it stops what runs in its VMs and exits; whatever is left gets SIGKILL.
KillMode=mixed
TimeoutStopSec=90
Restart=on-failure
RestartSec=2
LimitNOFILE=1048576

[Install]
WantedBy=multi-user.target
`;
}

export async function run(argv: string[]): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  const unknown = argv.find((arg) => arg !== "--print");
  if (unknown !== undefined) {
    process.stderr.write(`install-service: unknown argument ${JSON.stringify(unknown)} — fix: see \`session-sandbox install-service --help\`\n`);
    return 2;
  }
  const unit = serviceUnit(process.execPath);
  if (argv.includes("--print")) {
    process.stdout.write(unit);
    return 0;
  }
  if (process.getuid?.() !== 0) {
    process.stderr.write("install-service: the manager runs as root, and only root can install its service — fix: run it with sudo (or --print to see the unit)\n");
    return 1;
  }
  writeFileSync(UNIT_PATH, unit, { mode: 0o644 });
  process.stdout.write(`wrote ${UNIT_PATH}\n`);
  // /run/systemd/system exists only while systemd is the init (sd_booted()).
  if (!existsSync("/run/systemd/system")) {
    process.stdout.write("systemd does not run this machine: start the manager with `session-sandbox serve` (or your init's equivalent)\n");
    return 0;
  }
  for (const args of [["daemon-reload"], ["enable", "--now", "session-sandbox"]]) {
    const result = Bun.spawnSync(["systemctl", ...args], { stdout: "inherit", stderr: "pipe" });
    if (result.exitCode !== 0) {
      process.stderr.write(`install-service: systemctl ${args.join(" ")} failed: ${result.stderr.toString().trim()}\n`);
      return 1;
    }
  }
  process.stdout.write("enabled and started: systemctl status session-sandbox; the token: sudo session-sandbox token\n");
  return 0;
}
