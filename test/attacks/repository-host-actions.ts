// The host side of the repository attacks: what a user does next on the host (real git, an editor's
// save-by-rename, real OpenCode starting in a directory of the work tree), each bounded in time.
import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { offlineOpencodeEnv, opencodeBinary } from "../e2e/opencode-server";

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

function opencodeEnv(scratch: string): Record<string, string> {
  return offlineOpencodeEnv(join(scratch, "oc-home"));
}

/**
 * The real `opencode serve` started in `cwd`, asked for its MCP servers and config there (which loads the
 * project's config and plugins and starts its local MCP servers), then stopped. Bounded: 60 s to listen.
 */
export async function opencodeServe(cwd: string, scratch: string): Promise<{ mcp: unknown }> {
  const proc = Bun.spawn([opencodeBinary(), "serve", "--port", "0", "--hostname", "127.0.0.1", "--print-logs"], { cwd, env: opencodeEnv(scratch), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const killer = setTimeout(() => proc.kill("SIGKILL"), 90_000);
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let seen = "";
      const decoder = new TextDecoder();
      const pump = async (stream: ReadableStream<Uint8Array>) => {
        for await (const chunk of stream) {
          seen += decoder.decode(chunk);
          const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(seen);
          if (match) resolve(match[1]!);
        }
      };
      void pump(proc.stdout as ReadableStream<Uint8Array>);
      void pump(proc.stderr as ReadableStream<Uint8Array>);
      void proc.exited.then((code) => reject(new Error(`opencode serve exited (${code}) before listening: ${seen.slice(-2000)}`)));
    });
    const headers = { "x-opencode-directory": cwd };
    const mcp = await (await fetch(`${url}/mcp`, { headers, signal: AbortSignal.timeout(60_000) })).json();
    await fetch(`${url}/config`, { headers, signal: AbortSignal.timeout(60_000) });
    return { mcp };
  } finally {
    clearTimeout(killer);
    proc.kill("SIGTERM");
    await proc.exited;
  }
}

/**
 * The real OpenCode (`opencode mcp list`) started in `cwd`, offline, in its own HOME: it loads the project
 * config from `cwd` up to the worktree root and starts the local MCP servers it names.
 */
export async function opencodeMcpList(cwd: string, scratch: string): Promise<HostRun> {
  const proc = Bun.spawn([opencodeBinary(), "mcp", "list"], { cwd, env: opencodeEnv(scratch), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const killer = setTimeout(() => proc.kill("SIGKILL"), 60_000);
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(killer);
  return { exitCode, stdout, stderr };
}
