// `bun run token`: prints the API token (from SANDBOX_API_TOKEN or the data dir), creating it if needed.
import { loadOrCreateToken } from "../app/auth-token";
import { loadConfig } from "../app/config";

const config = loadConfig(process.env);
process.stdout.write(loadOrCreateToken(config.dataDir, config.apiToken) + "\n");
