// Starts the real manager (app/main.ts) as a child process on port 0 and waits until it listens.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { tokenPath } from "../app/auth-token";

const ROOT = join(import.meta.dir, "..");

export type ManagerProcess = {
  url: string;
  /** The runtime state dir given to the manager (a sibling of the data dir unless the env names one). */
  runtimeDir: string;
  token: string;
  proc: ReturnType<typeof Bun.spawn>;
  stderrLines: string[];
  /** SIGTERM and wait. */
  stop(): Promise<void>;
  /** SIGKILL and wait: a crash. */
  kill9(): Promise<void>;
};

function managerEnv(dataDir: string, env: Record<string, string>): Record<string, string> {
  // Tests keep runtime state under /tmp (traversable by the VMs' uids), never in /var/lib; callers remove it.
  const runtimeDir = env.SANDBOX_RUNTIME_DIR ?? `${dataDir}-runtime`;
  return { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/root", SANDBOX_DATA_DIR: dataDir, SANDBOX_PORT: "0", SANDBOX_RUNTIME_DIR: runtimeDir, ...env };
}

/** `command`: how the manager is started (default `bun app/main.ts`; `session-sandbox serve` is another way). */
export async function startManager(dataDir: string, env: Record<string, string> = {}, command = ["bun", join(ROOT, "app/main.ts")]): Promise<ManagerProcess> {
  const runtimeDir = managerEnv(dataDir, env).SANDBOX_RUNTIME_DIR!;
  const proc = Bun.spawn(command, { env: managerEnv(dataDir, env), stdout: "ignore", stderr: "pipe" });
  const stderrLines: string[] = [];
  const listening = Promise.withResolvers<string>();
  void (async () => {
    let buffered = "";
    for await (const chunk of proc.stderr as ReadableStream<Uint8Array>) {
      buffered += new TextDecoder().decode(chunk);
      let newline: number;
      while ((newline = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        stderrLines.push(line);
        if (line.includes('"manager listening"')) listening.resolve((JSON.parse(line) as { url: string }).url.replace(/\/$/, ""));
      }
    }
    listening.reject(new Error(`manager exited before listening (code ${await proc.exited}):\n${stderrLines.join("\n")}${buffered}`));
  })();
  // A manager that never says it listens (bad env, wrong log level) fails the test instead of hanging it.
  const timer = setTimeout(() => {
    proc.kill("SIGKILL");
    listening.reject(new Error(`manager did not report "manager listening" within 15 s:\n${stderrLines.join("\n")}`));
  }, 15_000);
  const url = await listening.promise.finally(() => clearTimeout(timer));
  const token = env.SANDBOX_API_TOKEN ?? readFileSync(tokenPath(dataDir), "utf8").trim();
  return {
    url,
    runtimeDir,
    token,
    proc,
    stderrLines,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
    async kill9() {
      proc.kill("SIGKILL");
      await proc.exited;
    },
  };
}

/** Runs a manager that is expected to refuse to start: its exit code and stderr (killed after 15 s). */
export async function runManagerToExit(dataDir: string, env: Record<string, string> = {}): Promise<{ exitCode: number; stderr: string }> {
  const proc = Bun.spawn(["bun", join(ROOT, "app/main.ts")], { env: managerEnv(dataDir, env), stdout: "ignore", stderr: "pipe" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), 15_000);
  const stderr = await new Response(proc.stderr).text();
  const exitCode = await proc.exited;
  clearTimeout(timer);
  return { exitCode, stderr };
}
