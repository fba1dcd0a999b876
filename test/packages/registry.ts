// An npm registry on loopback for the package tests: verdaccio (a dev dependency), no uplinks, anyone may
// publish. Its storage, config and the npm settings pointing at it live in one temp directory; stop() ends
// the process this started, by PID.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "../..");

export type Registry = {
  url: string;
  /** Environment for npm: this registry, its own cache and user config, nothing from ~/.npmrc. */
  env: Record<string, string>;
  stop(): Promise<void>;
};

async function freeLoopbackPort(): Promise<number> {
  const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = server.port;
  server.stop(true);
  return port;
}

export async function startRegistry(dir: string): Promise<Registry> {
  mkdirSync(dir, { recursive: true });
  const port = await freeLoopbackPort();
  const url = `http://127.0.0.1:${port}/`;
  const config = join(dir, "config.yaml");
  writeFileSync(
    config,
    [
      `storage: ${join(dir, "storage")}`,
      "auth:",
      "  htpasswd:",
      `    file: ${join(dir, "htpasswd")}`,
      "uplinks: {}", // nothing is fetched from any other registry
      "packages:",
      "  '**':",
      "    access: $all",
      "    publish: $all",
      "max_body_size: 100mb", // the CLI's tarball bundles its dependencies
      "log: { type: stdout, format: json, level: warn }",
      "",
    ].join("\n"),
  );
  const npmrc = join(dir, "npmrc");
  // npm refuses to publish without credentials; this registry takes anyone's, so any token will do.
  writeFileSync(npmrc, `registry=${url}\n//127.0.0.1:${port}/:_authToken=test\nupdate-notifier=false\nfund=false\naudit=false\n`);
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: dir,
    NPM_CONFIG_USERCONFIG: npmrc,
    npm_config_registry: url,
    npm_config_cache: join(dir, "npm-cache"),
    npm_config_fetch_retries: "0",
  };
  const proc = Bun.spawn([join(ROOT, "node_modules/.bin/verdaccio"), "--config", config, "--listen", `127.0.0.1:${port}`], {
    env: { PATH: env.PATH, HOME: dir },
    stdout: "pipe",
    stderr: "pipe",
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    const ping = await fetch(`${url}-/ping`).catch(() => null);
    if (ping?.ok) break;
    if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`verdaccio did not answer on ${url}: ${await new Response(proc.stderr).text()}`);
    }
    await Bun.sleep(100);
  }
  return {
    url,
    env,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}
