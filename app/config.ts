// Turns the process environment into a typed Config. Pure: main.ts passes process.env, tests pass objects.
import { createHash } from "node:crypto";
import { homedir } from "node:os";
import { join } from "node:path";
import { parseLogLevel, type LogLevel } from "./log";

export type Config = {
  dataDir: string;
  port: number;
  hostname: string;
  apiToken: string | undefined;
  envCpus: number | undefined;
  envMemoryMib: number | undefined;
  envExecTimeoutMs: number | undefined;
  logLevel: LogLevel;
  /** SANDBOX_RUNTIME as given (auto|local|msb); runtime/select.ts validates it. */
  runtime: string | undefined;
  /** The guest root filesystem for the local runtime; default: the cached build of scripts/build-rootfs.sh. */
  rootfsDir: string | undefined;
  /** Shared OpenCode directories mounted into every VM (SANDBOX_SHARED_DIRS, colon-separated absolute paths). */
  sharedDirs: string[];
  msbPath: string | undefined;
  /** The OCI image msb VMs boot (SANDBOX_MSB_IMAGE); the local runtime uses the rootfs instead. */
  msbImage: string;
  /** The cgroup (in every hierarchy) under which the local runtime puts its VMs. */
  cgroupParent: string | undefined;
  /**
   * Where the runtime keeps VM state and volumes. Not inside the data dir: the VMs' unprivileged host
   * uids must traverse every parent of it, and the data dir (often under a 0700 home) must stay private.
   */
  runtimeDir: string;
};

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

/** `SANDBOX_DATA_DIR`, else `$XDG_STATE_HOME/session-sandbox`, else `~/.local/state/session-sandbox`. */
export function resolveDataDir(env: Env): string {
  if (env.SANDBOX_DATA_DIR) return env.SANDBOX_DATA_DIR;
  const stateHome = env.XDG_STATE_HOME || join(env.HOME || homedir(), ".local", "state");
  return join(stateHome, "session-sandbox");
}

/** Accepts `4G`, `512M`, or a plain number of MiB; returns MiB. */
export function parseMemoryMib(text: string): number {
  const match = /^\s*(\d+)\s*([mMgG]?)(?:i?[bB])?\s*$/.exec(text);
  if (!match) throw new ConfigError(`memory ${JSON.stringify(text)} is not a size: use 4G, 512M or a plain number of MiB`);
  const amount = Number(match[1]);
  const mib = match[2]?.toLowerCase() === "g" ? amount * 1024 : amount;
  if (!Number.isSafeInteger(mib) || mib <= 0) throw new ConfigError(`memory ${JSON.stringify(text)} must be a positive size`);
  return mib;
}

function parsePositiveInteger(name: string, text: string, allowZero = false): number {
  const value = Number(text);
  if (!/^\s*\d+\s*$/.test(text) || !Number.isSafeInteger(value) || value < (allowZero ? 0 : 1)) {
    throw new ConfigError(`${name}=${JSON.stringify(text)} must be a positive whole number`);
  }
  return value;
}

export function loadConfig(env: Env): Config {
  // Port 0 asks the OS for a free port; the "manager listening" log line says which.
  const port = env.SANDBOX_PORT ? parsePositiveInteger("SANDBOX_PORT", env.SANDBOX_PORT, true) : 7878;
  return {
    dataDir: resolveDataDir(env),
    port,
    hostname: env.SANDBOX_HOST || "127.0.0.1",
    apiToken: env.SANDBOX_API_TOKEN || undefined,
    envCpus: env.SANDBOX_CPUS ? parsePositiveInteger("SANDBOX_CPUS", env.SANDBOX_CPUS) : undefined,
    envMemoryMib: env.SANDBOX_MEMORY ? wrap("SANDBOX_MEMORY", () => parseMemoryMib(env.SANDBOX_MEMORY!)) : undefined,
    envExecTimeoutMs: env.SANDBOX_EXEC_TIMEOUT_MS
      ? parsePositiveInteger("SANDBOX_EXEC_TIMEOUT_MS", env.SANDBOX_EXEC_TIMEOUT_MS)
      : undefined,
    logLevel: wrap("SANDBOX_LOG_LEVEL", () => parseLogLevel(env.SANDBOX_LOG_LEVEL)),
    runtime: env.SANDBOX_RUNTIME || undefined,
    rootfsDir: env.SANDBOX_ROOTFS_DIR || undefined,
    sharedDirs: parseSharedDirs(env.SANDBOX_SHARED_DIRS),
    msbPath: env.MSB_PATH || undefined,
    msbImage: env.SANDBOX_MSB_IMAGE || "debian:bookworm-slim",
    cgroupParent: env.SANDBOX_CGROUP_PARENT || undefined,
    runtimeDir: env.SANDBOX_RUNTIME_DIR || defaultRuntimeDir(resolveDataDir(env)),
  };
}

function wrap<T>(name: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    throw new ConfigError(`${name}: ${(error as Error).message}`);
  }
}

function parseSharedDirs(text: string | undefined): string[] {
  const dirs = (text ?? "").split(":").filter((dir) => dir !== "");
  const relative = dirs.find((dir) => !dir.startsWith("/"));
  if (relative) throw new ConfigError(`SANDBOX_SHARED_DIRS: ${JSON.stringify(relative)} is not an absolute path`);
  return dirs;
}

/** One runtime dir per data dir, so two managers on a host never share VM state. */
export function defaultRuntimeDir(dataDir: string): string {
  return join("/var/lib/session-sandbox", `runtime-${createHash("sha256").update(dataDir).digest("hex").slice(0, 12)}`);
}
