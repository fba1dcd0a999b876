// Turns the process environment into a typed Config. Pure: main.ts passes process.env, tests pass objects.
import { resolveDataDir as resolveClientDataDir } from "../sdk/connection";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { parseLogLevel, type LogLevel } from "./log";
import { MIN_MEMORY_MIB, RANGES } from "./services/settings";

export type Config = {
  dataDir: string;
  port: number;
  hostname: string;
  /** Where forwarded ports of VMs listen (SANDBOX_FORWARD_HOST): loopback unless set; anything else is reachable by others. */
  forwardHost: string;
  /** How long a shell ticket (the browser terminal's way onto the shell WebSocket) stays redeemable (SANDBOX_SHELL_TICKET_TTL_MS). */
  shellTicketTtlMs: number | undefined;
  apiToken: string | undefined;
  envCpus: number | undefined;
  envMemoryMib: number | undefined;
  envExecTimeoutMs: number | undefined;
  logLevel: LogLevel;
  /** SANDBOX_RUNTIME as given; runtime/select.ts validates it. */
  runtime: string | undefined;
  /** The guest root filesystem for the local runtime; default: the cached build of scripts/build-rootfs.sh. */
  rootfsDir: string | undefined;
  /**
   * Where images built (recipe + packages) or pulled (OCI) on request are cached (SANDBOX_IMAGE_CACHE_DIR,
   * default <data dir>/images): beside the database that indexes them, so one manager's GC never sees another's.
   */
  imageCacheDir: string;
  /** sources.list lines extra packages are installed from (SANDBOX_APT_SOURCES); default: the Debian mirror. */
  aptSources: string | undefined;
  /** PEM CA certificates an intercepted upstream may also be signed by (SANDBOX_EXTRA_CA_FILE), besides the host's roots. */
  extraCaFile: string | undefined;
  /** Shared OpenCode directories mounted into every VM (SANDBOX_SHARED_DIRS, colon-separated absolute paths). */
  sharedDirs: string[];
  microvmRuntimePath: string | undefined;
  /** The OCI image microvm VMs boot (SANDBOX_MSB_IMAGE); the tiers that boot root filesystems use the rootfs instead. */
  defaultOciImage: string;
  /** The cgroup (in every hierarchy) under which the local runtime puts its VMs. */
  cgroupParent: string | undefined;
  /** SANDBOX_EXEC_AGENT=off: the container tier runs every command through its runtime's own exec instead of its in-VM agent. */
  execAgent: boolean;
  /**
   * Where the runtime keeps VM state and volumes. Not inside the data dir: the VMs' unprivileged host
   * uids must traverse every parent of it, and the data dir (often under a 0700 home) must stay private.
   */
  runtimeDir: string;
};

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

/** `SANDBOX_DATA_DIR`, else `$XDG_STATE_HOME/session-sandbox`, else `~/.local/state/session-sandbox`. */
/** The data directory, resolved as every client resolves the manager's (sdk/connection.ts). */
export function resolveDataDir(env: Env): string {
  return resolveClientDataDir(env);
}

/** Accepts `4G`, `512M`, or a plain number of MiB; returns MiB. Exported so a test checks each form directly. */
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

function parseInRange(name: string, text: string, min: number, max: number, unit: string): number {
  const value = parsePositiveInteger(name, text, min === 0);
  if (value < min || value > max) throw new ConfigError(`${name}=${value} is out of range: set it between ${min} and ${max} ${unit}, or unset it`);
  return value;
}

function absolutePath(name: string, text: string | undefined): string | undefined {
  if (!text) return undefined;
  if (!text.startsWith("/")) throw new ConfigError(`${name}=${JSON.stringify(text)} is not an absolute path: give the full path (e.g. /var/lib/...)`);
  return text;
}

/** Matches `pattern` or is refused with `hint` (quoting the value unless it is a secret); unset or empty is undefined. */
function matching(name: string, text: string | undefined, pattern: RegExp, hint: string, secret = false): string | undefined {
  if (!text) return undefined;
  if (!pattern.test(text)) throw new ConfigError(`${secret ? name : `${name}=${JSON.stringify(text)}`} is not valid: ${hint}`);
  return text;
}

// A bearer token travels in a header: visible ASCII only. 16+ characters so it cannot be guessed.
const TOKEN = /^[\x21-\x7e]{16,}$/;
// Path components of letters, digits, `.`, `_`, `-` that do not start with a dot: no `..`, no escaping /sys/fs/cgroup.
const CGROUP_PATH = /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/;
// An OCI reference: [registry[:port]/]name[:tag][@digest], no spaces.
const IMAGE_REFERENCE = /^[A-Za-z0-9][A-Za-z0-9._\-/:@+]{0,254}$/;
// git refuses identities with newlines or angle brackets; control characters are never meant.
const GIT_IDENTITY = /^[^\x00-\x1f\x7f<>]{1,200}$/;

export function loadConfig(env: Env): Config {
  // Port 0 asks the OS for a free port; the "manager listening" log line says which.
  const port = env.SANDBOX_PORT ? parseInRange("SANDBOX_PORT", env.SANDBOX_PORT, 0, 65535, "(0 = any free port)") : 7878;
  const dataDir = absolutePath("SANDBOX_DATA_DIR", env.SANDBOX_DATA_DIR) ?? resolveDataDir(env);
  matching("SANDBOX_GIT_NAME", env.SANDBOX_GIT_NAME, GIT_IDENTITY, "use a plain name without newlines or angle brackets");
  matching("SANDBOX_GIT_EMAIL", env.SANDBOX_GIT_EMAIL, GIT_IDENTITY, "use a plain address without newlines or angle brackets");
  return {
    dataDir,
    port,
    hostname: matching("SANDBOX_HOST", env.SANDBOX_HOST, /^[^\s/]+$/, "give an address or host name of this machine, e.g. 127.0.0.1") ?? "127.0.0.1",
    forwardHost: matching("SANDBOX_FORWARD_HOST", env.SANDBOX_FORWARD_HOST, /^[0-9A-Fa-f.:]+$/, "give an IP address of this machine, e.g. 127.0.0.1 (the default) or 0.0.0.0 for every interface") ?? "127.0.0.1",
    shellTicketTtlMs: env.SANDBOX_SHELL_TICKET_TTL_MS ? parseInRange("SANDBOX_SHELL_TICKET_TTL_MS", env.SANDBOX_SHELL_TICKET_TTL_MS, 1000, 300_000, "milliseconds (default 10000)") : undefined,
    apiToken: matching("SANDBOX_API_TOKEN", env.SANDBOX_API_TOKEN, TOKEN, "use 16 or more visible ASCII characters (e.g. `openssl rand -base64 32`), or unset it to have one generated", true),
    envCpus: env.SANDBOX_CPUS ? parsePositiveInteger("SANDBOX_CPUS", env.SANDBOX_CPUS) : undefined,
    envMemoryMib: env.SANDBOX_MEMORY ? parseEnvMemory(env.SANDBOX_MEMORY) : undefined,
    envExecTimeoutMs: env.SANDBOX_EXEC_TIMEOUT_MS
      ? parseInRange("SANDBOX_EXEC_TIMEOUT_MS", env.SANDBOX_EXEC_TIMEOUT_MS, RANGES.execTimeoutMs.min, RANGES.execTimeoutMs.max, RANGES.execTimeoutMs.unit)
      : undefined,
    logLevel: wrap("SANDBOX_LOG_LEVEL", () => parseLogLevel(env.SANDBOX_LOG_LEVEL)),
    runtime: env.SANDBOX_RUNTIME || undefined,
    rootfsDir: absolutePath("SANDBOX_ROOTFS_DIR", env.SANDBOX_ROOTFS_DIR),
    imageCacheDir: absolutePath("SANDBOX_IMAGE_CACHE_DIR", env.SANDBOX_IMAGE_CACHE_DIR) ?? join(dataDir, "images"),
    aptSources: env.SANDBOX_APT_SOURCES || undefined,
    extraCaFile: absolutePath("SANDBOX_EXTRA_CA_FILE", env.SANDBOX_EXTRA_CA_FILE),
    sharedDirs: parseSharedDirs(env.SANDBOX_SHARED_DIRS),
    microvmRuntimePath: env.MSB_PATH || undefined,
    defaultOciImage: matching("SANDBOX_MSB_IMAGE", env.SANDBOX_MSB_IMAGE, IMAGE_REFERENCE, "give an OCI image reference such as debian:bookworm-slim") ?? "debian:bookworm-slim",
    cgroupParent: matching("SANDBOX_CGROUP_PARENT", env.SANDBOX_CGROUP_PARENT, CGROUP_PATH, "use a relative cgroup path of letters, digits, '.', '_' and '-' such as session-sandbox"),
    runtimeDir: absolutePath("SANDBOX_RUNTIME_DIR", env.SANDBOX_RUNTIME_DIR) ?? defaultRuntimeDir(dataDir),
    execAgent: (matching("SANDBOX_EXEC_AGENT", env.SANDBOX_EXEC_AGENT, /^(on|off)$/, "use on (the default) or off") ?? "on") === "on",
  };
}

function parseEnvMemory(text: string): number {
  const mib = wrap("SANDBOX_MEMORY", () => parseMemoryMib(text));
  if (mib < MIN_MEMORY_MIB) throw new ConfigError(`SANDBOX_MEMORY=${JSON.stringify(text)} is below the minimum of ${MIN_MEMORY_MIB} MiB: set at least ${MIN_MEMORY_MIB}M, or unset it`);
  return mib;
}

function wrap<T>(name: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    const message = (error as Error).message;
    throw new ConfigError(message.startsWith(name) ? message : `${name}: ${message}`);
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
