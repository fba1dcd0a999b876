// `session-sandbox serve`: the manager in the foreground, configured by the environment
// (docs/configuration.md). It needs root (namespaces, cgroups, mounts): `session-sandbox install-service`
// runs it as a system service. Started through the CLI's own flags, it loads no `.env` or `bunfig.toml`
// from the directory it is started in.
const HELP = `usage: session-sandbox serve

Runs the manager in the foreground until SIGTERM or Ctrl-C (it stops its VMs' commands cleanly first).
It needs root. Every setting comes from the environment: SANDBOX_DATA_DIR, SANDBOX_HOST, SANDBOX_PORT,
SANDBOX_RUNTIME, … (docs/configuration.md). As a system service: session-sandbox install-service.`;

export async function run(argv: string[]): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  if (argv.length > 0) {
    process.stderr.write(`serve: takes no arguments, got ${JSON.stringify(argv[0])} — fix: configure the manager with its environment variables (see \`session-sandbox serve --help\`)\n`);
    return 2;
  }
  // The manager starts on import and keeps the process alive while it listens; a bad setting exits 78.
  await import("../../app/main");
  return 0;
}
