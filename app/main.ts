// The manager's entry: the only place that reads the environment, opens the database and listens.
import { dirname, join } from "node:path";
import { defaultRootfsDir } from "../runtime/local/index";
import { InvalidRuntimeSettingError, parseRuntimeRequest } from "../runtime/select";
import pkg from "../package.json" with { type: "json" };
import { loadOrCreateToken } from "./auth-token";
import { ConfigError, loadConfig, type Config } from "./config";
import { DatabaseStartupError, databasePath, openDatabase } from "./db/open";
import { MAX_STDIN_BYTES } from "./http/exec-body";
import { MAX_BODY_BYTES } from "./http/json-body";
import { guardFetch, serverErrorHandler } from "./http/server-guard";
import { websocket } from "elysia/ws";
import { createLogger, type Logger } from "./log";
import { createManager } from "./manager";
import { lockRuntimeDir } from "./runtime-dir-lock";
import { setUpRuntime } from "./runtime-setup";
import { loadGitCredentials, loadSecrets } from "./secrets-config";
import { createCredentials } from "./services/credentials";
import { runDoctor } from "./services/doctor";
import { readHostLimits } from "./services/host-limits";
import { checkAgainstHost, checkCanListen, listenError, prepareDataDir } from "./startup-checks";
import { recoverVms } from "./supervisor/recovery";
import { loadOrCreateManagerCa, ManagerCaError } from "./tls/manager-ca";
import { loadUpstreamRoots, UpstreamRootsError } from "./tls/upstream-roots";

async function start() {
  // Every check of the environment comes first: a bad value is one line and exit 78, with nothing touched.
  const config = loadConfig(process.env);
  const host = readHostLimits();
  checkAgainstHost(config, host);
  parseRuntimeRequest(config.runtime);
  const secrets = loadSecrets(process.env);
  const gitCredentials = loadGitCredentials(process.env);
  prepareDataDir(config.dataDir);
  // Before anything reads the runtime dir: recovery would remove another manager's VMs. Held until exit.
  lockRuntimeDir(config.runtimeDir, config.dataDir);
  checkCanListen(config.hostname, config.port);
  const log = createLogger(config.logLevel);
  const db = openDatabase(config.dataDir);
  const token = loadOrCreateToken(config.dataDir, config.apiToken);
  const ca = await loadOrCreateManagerCa(config.dataDir);
  const upstream = loadUpstreamRoots(config.extraCaFile);
  const rootfsDir = config.rootfsDir ?? defaultRootfsDir();
  const runtime = await setUpRuntime({ runtimeDir: config.runtimeDir, rootfsDir, runtimeEnv: config.runtime, microvmRuntimePath: config.microvmRuntimePath, cgroupParent: config.cgroupParent, execAgent: config.execAgent });
  log.info("upstream TLS roots", { source: upstream.source });
  log.info("runtime selected", { runtime: runtime.status.name, reason: runtime.status.reason, tiers: runtime.tiers, runtimeDir: config.runtimeDir });
  const manager = createManager({
    db,
    host,
    envDefaults: { cpus: config.envCpus, memoryMib: config.envMemoryMib, execTimeoutMs: config.envExecTimeoutMs, isolation: runtime.defaultIsolation },
    token,
    log,
    version: pkg.version,
    driver: runtime.driverConfig,
    runtimeUnavailable: runtime.driverConfig ? undefined : runtime.status.reason,
    tiers: runtime.tiers,
    // Each tier boots its own family of image: a rootfs directory or an OCI reference (runtime/tiers/).
    images: { builtInRootfs: rootfsDir, cacheDir: config.imageCacheDir, defaultOciImage: config.defaultOciImage, aptSources: config.aptSources },
    sharedDirs: config.sharedDirs,
    forwardHost: config.forwardHost,
    ...(config.shellTicketTtlMs === undefined ? {} : { shellTicketTtlMs: config.shellTicketTtlMs }),
    egressDir: join(config.runtimeDir, "egress"),
    ca,
    upstreamRoots: upstream.roots,
    guestExtraCas: upstream.extra,
    caBundleDir: join(config.runtimeDir, "ca-bundles"),
    protectedDirs: { dataDir: config.dataDir, runtimeDir: config.runtimeDir, rootfsCacheDir: dirname(rootfsDir), imageCacheDir: config.imageCacheDir, egressDir: join(config.runtimeDir, "egress") },
    credentials: createCredentials({ secrets, gitCredentials, env: process.env, log }),
    runtimeStatus: () => runtime.status,
    doctor: () =>
      runDoctor({
        runtime: runtime.status,
        capabilities: runtime.capabilities,
        db,
        dataDir: config.dataDir,
        runtimeDir: config.runtimeDir,
        rootfsDir,
        tokenFromEnv: config.apiToken !== undefined,
      }),
  });
  // Bundles of an earlier CA or image go; each VM's is written again before its next command needs it.
  manager.caBundles.removeAll();
  if (runtime.driver) await recoverVms(runtime.driver, manager, log);
  const leftovers = manager.images.recover();
  if (leftovers.length > 0) log.info("removed image cache leftovers of an earlier run", { entries: leftovers });
  manager.images.startGc();
  manager.supervisor.startSweeping();

  const server = listen(config, manager.app.fetch, log);
  // Elysia's WebSocket routes (the shell) upgrade through the app's server, which app.listen would set.
  manager.app.server = server;
  log.info("manager listening", { url: server.url.href, dataDir: config.dataDir, database: databasePath(config.dataDir) });

  let stopping = false;
  const shutdown = async (signal: string) => {
    // A second signal while VMs are being stopped means "now": the next start recovers what is left.
    if (stopping) process.exit(1);
    stopping = true;
    log.info("shutting down: stopping the VMs", { signal });
    server.stop(true);
    const timer = setTimeout(() => {
      log.warn("VMs did not stop within the shutdown limit; exiting, the next start recovers them", { limitMs: SHUTDOWN_LIMIT_MS });
      process.exit(1);
    }, SHUTDOWN_LIMIT_MS);
    const { stopped, failed } = await manager.shutdown();
    clearTimeout(timer);
    log.info("shut down", { stopped, failed });
    db.close();
    process.exit(failed.length > 0 ? 1 : 0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

/**
 * How long a graceful shutdown may take to stop the VMs: a container VM stops in milliseconds, a microVM's
 * runtime gives its guest 10 s; past this the manager exits anyway and the next start recovers what is left. Below the
 * Compose file's stop_grace_period (30 s), so Docker's SIGKILL never cuts a shutdown that is on time.
 */
const SHUTDOWN_LIMIT_MS = 25_000;

function listen(config: Config, fetch: (request: Request) => Response | Promise<Response>, log: Logger) {
  try {
    return Bun.serve({
      fetch: guardFetch(fetch),
      // Elysia's dispatcher to each socket's route handlers; its own type predates Bun's current one.
      websocket: websocket as unknown as Bun.WebSocketHandler<never>,
      // Never Bun's development error page: it shows source lines and host paths to anyone who connects.
      development: false,
      error: serverErrorHandler(log),
      port: config.port,
      hostname: config.hostname,
      // Bun's own limit sits above ours so that our handler answers with the JSON reason first: above a JSON
      // body's and above a command's streamed stdin (app/http/exec-body.ts), both of which the parsers count.
      maxRequestBodySize: MAX_STDIN_BYTES + MAX_BODY_BYTES * 2,
    });
  } catch (error) {
    throw listenError(config.hostname, config.port, error); // taken since checkCanListen: rare, still one line
  }
}

try {
  await start();
} catch (error) {
  if (error instanceof ConfigError || error instanceof DatabaseStartupError || error instanceof InvalidRuntimeSettingError || error instanceof ManagerCaError || error instanceof UpstreamRootsError) {
    // One line whatever the reason holds (a JSON parser's message, a path with a newline).
    process.stderr.write(`session-sandbox: cannot start: ${error.message.replace(/\s*\n\s*/g, " ")}\n`);
    process.exit(78); // EX_CONFIG
  }
  throw error;
}
