// Starts a real `opencode serve` (npm opencode-ai, pinned) on 127.0.0.1, isolated in temp HOME/XDG dirs,
// offline (no registry, no model catalog fetch), with a config file in the project directory.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "../..");

/** The platform binary; Bun may skip opencode-ai's postinstall, which only hard-links this file. */
export function opencodeBinary(): string {
  const arch = process.arch === "arm64" ? "arm64" : "x64";
  const candidates = [
    join(ROOT, `node_modules/opencode-linux-${arch}/bin/opencode`),
    join(ROOT, `node_modules/opencode-linux-${arch}-baseline/bin/opencode`),
    join(ROOT, "node_modules/opencode-ai/bin/opencode.exe"),
  ];
  const found = candidates.find((path) => existsSync(path));
  if (!found) throw new Error(`no opencode binary under node_modules (tried ${candidates.join(", ")}); run bun install`);
  return found;
}

export type OpencodeServer = {
  url: string;
  pid: number;
  projectDir: string;
  logLines: string[];
  /** JSON request against the server, scoped to the project directory. */
  call<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  /** The same server seen from another directory (its own instance, config and plugin options). */
  at(directory: string): OpencodeServer;
  stop(): Promise<void>;
};

export type OpencodeOptions = {
  /** Scratch root: home/ and the project live under it. */
  root: string;
  projectDir: string;
  config: Record<string, unknown>;
  env?: Record<string, string>;
  /** Runs OpenCode as this account (its scratch home is handed to it first); default: as the test. */
  runAs?: { uid: number; gid: number };
};

/** The environment of an isolated, offline OpenCode whose HOME (and XDG dirs, made here) is `home`. */
export function offlineOpencodeEnv(home: string): Record<string, string> {
  for (const dir of [".config", ".local/share", ".cache", ".local/state", "tmp"]) mkdirSync(join(home, dir), { recursive: true });
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    SHELL: "/bin/bash",
    HOME: home,
    // OpenCode (a compiled Bun program) unpacks a 5 MB native library into $TMPDIR at every start and leaves it
    // there: in the test's own scratch, it goes with the test.
    TMPDIR: join(home, "tmp"),
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_DATA_HOME: join(home, ".local/share"),
    XDG_CACHE_HOME: join(home, ".cache"),
    XDG_STATE_HOME: join(home, ".local/state"),
    OPENCODE_DISABLE_AUTOUPDATE: "1",
    OPENCODE_DISABLE_MODELS_FETCH: "1",
    OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
    OPENCODE_DISABLE_SHARE: "1",
    OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
    // Offline: a registry on a closed loopback port, and no retries, so dependency installs fail in ms.
    npm_config_registry: "http://127.0.0.1:9/",
    npm_config_fetch_retries: "0",
  };
}

export async function startOpencode({ root, projectDir, config, env = {}, runAs }: OpencodeOptions): Promise<OpencodeServer> {
  writeFileSync(join(projectDir, "opencode.json"), JSON.stringify(config, null, 2));
  const home = join(root, "home");
  const isolated = offlineOpencodeEnv(home);
  const serve = [opencodeBinary(), "serve", "--port", "0", "--hostname", "127.0.0.1", "--print-logs", "--log-level", "INFO"];
  if (runAs) Bun.spawnSync(["chown", "-R", `${runAs.uid}:${runAs.gid}`, home]);
  const argv = runAs ? ["setpriv", `--reuid=${runAs.uid}`, `--regid=${runAs.gid}`, "--init-groups", "--", ...serve] : serve;
  const proc = Bun.spawn(argv, {
    cwd: projectDir,
    env: { ...isolated, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const logLines: string[] = [];
  const listening = Promise.withResolvers<string>();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    let buffered = "";
    for await (const chunk of stream) {
      buffered += new TextDecoder().decode(chunk);
      let newline: number;
      while ((newline = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        logLines.push(line);
        const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(line);
        if (match) listening.resolve(match[1]!);
      }
    }
  };
  void pump(proc.stdout as ReadableStream<Uint8Array>);
  void pump(proc.stderr as ReadableStream<Uint8Array>);
  void proc.exited.then((code) => listening.reject(new Error(`opencode exited (${code}) before listening:\n${logLines.slice(-40).join("\n")}`)));
  const timer = setTimeout(() => listening.reject(new Error(`opencode did not listen within 60 s:\n${logLines.slice(-40).join("\n")}`)), 60_000);
  let url: string;
  try {
    url = await listening.promise.finally(() => clearTimeout(timer));
  } catch (error) {
    proc.kill("SIGKILL");
    await proc.exited;
    throw error;
  }
  const callIn = async <T>(directory: string, method: string, path: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { "content-type": "application/json", "x-opencode-directory": directory },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(120_000),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path} → ${response.status}: ${text.slice(0, 500)}`);
    return (text ? JSON.parse(text) : undefined) as T;
  };
  const server: OpencodeServer = {
    url,
    pid: proc.pid,
    projectDir,
    logLines,
    call: (method, path, body) => callIn(projectDir, method, path, body),
    at: (directory) => ({ ...server, projectDir: directory, call: (method, path, body) => callIn(directory, method, path, body) }),
    async stop() {
      proc.kill("SIGTERM");
      const killer = setTimeout(() => proc.kill("SIGKILL"), 5_000);
      await proc.exited;
      clearTimeout(killer);
    },
  };
  return server;
}
