// `session-sandbox token` (in the repository `bun run --silent token`): prints the API token (from
// SANDBOX_API_TOKEN or the data dir), creating it if needed; nothing else goes to stdout.
import { loadOrCreateToken } from "../../app/auth-token";
import { loadConfig } from "../../app/config";

export async function run(argv: string[]): Promise<number> {
  if (argv.length > 0) {
    process.stderr.write("token: takes no arguments — fix: run `session-sandbox token`\n");
    return 2;
  }
  const config = loadConfig(process.env);
  process.stdout.write(loadOrCreateToken(config.dataDir, config.apiToken) + "\n");
  return 0;
}
