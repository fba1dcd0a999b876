// Runs a command on the host the way OpenCode's built-in bash tool does: the user's shell with `-c`, in
// its own process group (killed as a group on timeout or abort), stdout and stderr merged in arrival order.
// Used only when the arbiter says no provider claims the call, i.e. the manager said "not sandboxed".
import { spawn } from "node:child_process";
import { realpathSync } from "node:fs";
import { basename, join } from "node:path";
import type { ProviderCall, ProviderResult } from "../sdk/index";

const SHIM_PATH = join(import.meta.dir, "shim");

/** The user's own shell: SANDBOX_USER_SHELL, else $SHELL, else /bin/bash — never our shim. */
export function userShell(env: Record<string, string | undefined> = process.env): string {
  const candidate = env.SANDBOX_USER_SHELL || env.SHELL || "/bin/bash";
  try {
    if (realpathSync(candidate) === realpathSync(SHIM_PATH) || basename(candidate) === "shim") return "/bin/bash";
  } catch {
    return "/bin/bash";
  }
  return candidate;
}

export async function runOnHost(call: ProviderCall): Promise<ProviderResult> {
  const child = spawn(userShell(), ["-c", call.command], { cwd: call.workdir, env: process.env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const notes: string[] = [];
  const append = (chunk: Buffer) => {
    output += chunk.toString("utf8");
    call.onOutput(output);
  };
  child.stdout.on("data", append);
  child.stderr.on("data", append);
  const killGroup = (note: string) => {
    notes.push(note);
    try {
      process.kill(-child.pid!, "SIGTERM");
      setTimeout(() => {
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          // already gone
        }
      }, 3_000).unref();
    } catch {
      // already gone
    }
  };
  const timer = setTimeout(
    () => killGroup(`shell tool terminated command after exceeding timeout ${call.timeoutMs} ms. If this command is expected to take longer and is not waiting for interactive input, retry with a larger timeout value in milliseconds.`),
    call.timeoutMs,
  );
  const onAbort = () => killGroup("User aborted the command");
  call.abort.addEventListener("abort", onAbort, { once: true });
  const exit = await new Promise<number | null>((resolve) => {
    child.on("error", (error) => {
      output += `failed to start ${userShell()}: ${error.message}`;
      resolve(null);
    });
    child.on("close", (code) => resolve(code));
  });
  clearTimeout(timer);
  call.abort.removeEventListener("abort", onAbort);
  let shown = output || "(no output)";
  if (notes.length > 0) shown += `\n\n<shell_metadata>\n${notes.join("\n")}\n</shell_metadata>`;
  return { output: shown, exit };
}
