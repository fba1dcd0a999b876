// The host side of the repository attacks: what a user does next on the host (real git, an editor's
// save-by-rename, real OpenCode starting in a directory of the work tree), each bounded in time.
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { opencodeBinary } from "../e2e/opencode-server";

export type HostRun = { exitCode: number; stdout: string; stderr: string };

/** Host git, as the repository's owner runs it: the user's own HOME and config, no terminal prompts. */
export function hostGit(cwd: string, ...args: string[]): HostRun {
  const result = Bun.spawnSync(["git", ...args], {
    cwd,
    env: { ...process.env, GIT_TERMINAL_PROMPT: "0", GIT_EDITOR: "true", GIT_AUTHOR_NAME: "host", GIT_AUTHOR_EMAIL: "host@example.com", GIT_COMMITTER_NAME: "host", GIT_COMMITTER_EMAIL: "host@example.com" },
    stdout: "pipe",
    stderr: "pipe",
    timeout: 60_000,
  });
  return { exitCode: result.exitCode ?? -1, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

/** An editor's "safe save": the new content written to a temporary file, renamed over the old one. */
export function saveByRename(path: string, content: string): void {
  const temp = `${path}.tmp-${process.pid}`;
  writeFileSync(temp, content);
  renameSync(temp, path);
}

/**
 * The real OpenCode (`opencode mcp list`) started in `cwd`, offline, in its own HOME: it loads the project
 * config from `cwd` up to the worktree root and starts the local MCP servers it names.
 */
export async function opencodeMcpList(cwd: string, scratch: string): Promise<HostRun> {
  const home = join(scratch, "oc-home");
  for (const dir of [".config", ".local/share", ".cache", ".local/state"]) mkdirSync(join(home, dir), { recursive: true });
  const proc = Bun.spawn([opencodeBinary(), "mcp", "list"], {
    cwd,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      XDG_CONFIG_HOME: join(home, ".config"),
      XDG_DATA_HOME: join(home, ".local/share"),
      XDG_CACHE_HOME: join(home, ".cache"),
      XDG_STATE_HOME: join(home, ".local/state"),
      OPENCODE_DISABLE_AUTOUPDATE: "1",
      OPENCODE_DISABLE_MODELS_FETCH: "1",
      OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
      OPENCODE_DISABLE_SHARE: "1",
      OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
      npm_config_registry: "http://127.0.0.1:9/",
      npm_config_fetch_retries: "0",
    },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const killer = setTimeout(() => proc.kill("SIGKILL"), 60_000);
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(killer);
  return { exitCode, stdout, stderr };
}
