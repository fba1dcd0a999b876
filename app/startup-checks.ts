// What a pure parse of the environment cannot judge: values against this host (CPUs, memory), a data dir
// that must be creatable, an address that must be free to listen on. Each failure is a ConfigError, which
// main.ts reports as one line with exit 78 before anything is logged, locked or touched.
import { mkdirSync } from "node:fs";
import { ConfigError, type Config } from "./config";
import type { HostLimits } from "./services/host-limits";
import { MIN_CPUS, MIN_MEMORY_MIB } from "./services/settings";

/** SANDBOX_CPUS and SANDBOX_MEMORY must fit this host; the settings service would refuse them later anyway. */
export function checkAgainstHost(config: Pick<Config, "envCpus" | "envMemoryMib">, host: HostLimits): void {
  if (config.envCpus !== undefined && config.envCpus > host.cpus) {
    throw new ConfigError(`SANDBOX_CPUS=${config.envCpus} is more than this host's ${host.cpus} CPUs: set it between ${MIN_CPUS} and ${host.cpus}, or unset it`);
  }
  if (config.envMemoryMib !== undefined && config.envMemoryMib > host.memoryMib) {
    throw new ConfigError(
      `SANDBOX_MEMORY (${config.envMemoryMib} MiB) is more than this host's ${host.memoryMib} MiB: set it between ${MIN_MEMORY_MIB}M and ${host.memoryMib}M, or unset it`,
    );
  }
}

/** Creates the data dir (0700) now, so an unusable SANDBOX_DATA_DIR is named instead of failing deep inside. */
export function prepareDataDir(dataDir: string): void {
  try {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw new ConfigError(`the data dir ${dataDir} cannot be created (${(error as Error).message}): set SANDBOX_DATA_DIR to a directory this user can create and write`);
  }
}

/**
 * Binds SANDBOX_HOST:SANDBOX_PORT once and lets go, so a busy port or a foreign address stops startup
 * before recovery touches any VM. Bun.serve binds the same address moments later.
 */
export function checkCanListen(hostname: string, port: number): void {
  try {
    Bun.listen({ hostname, port, socket: { data: () => undefined } }).stop(true);
  } catch (error) {
    throw listenError(hostname, port, error);
  }
}

/** Turns a failed bind into the one-line reason, naming the variable to change. */
export function listenError(hostname: string, port: number, error: unknown): ConfigError {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "EADDRINUSE") return new ConfigError(`port ${port} on ${hostname} is already in use: stop what listens there, or set SANDBOX_PORT to a free port (0 = any)`);
  if (code === "ENOTFOUND") return new ConfigError(`SANDBOX_HOST=${JSON.stringify(hostname)} does not resolve: use an address of this host, e.g. 127.0.0.1`);
  if (code === "EADDRNOTAVAIL") return new ConfigError(`SANDBOX_HOST=${hostname} is not an address of this host: use one it has, e.g. 127.0.0.1`);
  if (code === "EACCES") return new ConfigError(`port ${port} needs privileges this user lacks: set SANDBOX_PORT to 1024 or above`);
  return new ConfigError(`cannot listen on ${hostname}:${port} (${(error as Error).message}): check SANDBOX_HOST and SANDBOX_PORT`);
}
