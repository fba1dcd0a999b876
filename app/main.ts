// The manager's entry: the only place that reads the environment, opens the database and listens.
import { createApp } from "./index";
import { loadOrCreateToken } from "./auth-token";
import { ConfigError, loadConfig } from "./config";
import { DatabaseStartupError, databasePath, openDatabase } from "./db/open";
import { MAX_BODY_BYTES } from "./http/json-body";
import { createLogger } from "./log";
import { createServices } from "./services";
import { readHostLimits } from "./services/host-limits";
import pkg from "../package.json" with { type: "json" };

function start() {
  const config = loadConfig(process.env);
  const log = createLogger(config.logLevel);
  const db = openDatabase(config.dataDir);
  const token = loadOrCreateToken(config.dataDir, config.apiToken);
  const services = createServices({
    db,
    host: readHostLimits(),
    envDefaults: { cpus: config.envCpus, memoryMib: config.envMemoryMib, execTimeoutMs: config.envExecTimeoutMs },
  });
  const app = createApp({
    services,
    token,
    log,
    version: pkg.version,
    runtimeStatus: () => ({ name: null, available: false, reason: "no runtime driver is configured yet; commands cannot run" }),
  });
  // Bun's own limit sits above ours so that our handler answers with the JSON reason first.
  const server = Bun.serve({ fetch: app.fetch, port: config.port, hostname: config.hostname, maxRequestBodySize: MAX_BODY_BYTES * 2 });
  log.info("manager listening", { url: server.url.href, dataDir: config.dataDir, database: databasePath(config.dataDir) });

  const shutdown = (signal: string) => {
    log.info("shutting down", { signal });
    server.stop(true);
    db.close();
    process.exit(0);
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
}

try {
  start();
} catch (error) {
  if (error instanceof ConfigError || error instanceof DatabaseStartupError) {
    process.stderr.write(`session-sandbox: cannot start: ${error.message}\n`);
    process.exit(78); // EX_CONFIG
  }
  throw error;
}
