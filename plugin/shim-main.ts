// The shell shim's logic (plugin/shim finds Bun and runs this). OpenCode spawns its `shell` as
// `<shell> -c <command>` for `!` mode and slash-command templates, and with no args for PTY terminals.
// A sandboxed session's command goes to the manager and we exit with its exit code; without a valid
// target we print why and exit 126. Only a session the manager says is not sandboxed (or the documented
// opt-outs) reaches the user's own shell. Never the host by accident.
import { spawn } from "node:child_process";
import { createClient, ManagerUnreachableError, type SandboxClient } from "../sdk/index";
import { loadPluginConfig } from "./config";
import { userShell } from "./host-run";

const REFUSED = 126;
const env = process.env;
const args = process.argv.slice(2);
const cwd = env.SANDBOX_SHIM_CWD || process.cwd();

function refuse(reason: string): never {
  process.stderr.write(`session-sandbox: not run: ${reason}\n`);
  process.exit(REFUSED);
}

/** Hands the same arguments to the user's own shell, without the manager token. */
async function passThrough(): Promise<never> {
  const childEnv = { ...env };
  for (const key of ["SANDBOX_API_TOKEN", "SANDBOX_SHIM_CWD", "SANDBOX_DECISION", "SANDBOX_BLOCKED_REASON"]) delete childEnv[key];
  const child = spawn(userShell(env), args, { cwd, env: childEnv, stdio: "inherit" });
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.on(signal, () => child.kill(signal));
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on("close", (c, s) => resolve([c, s])));
  process.exit(code ?? 128 + (signal === "SIGKILL" ? 9 : signal === "SIGINT" ? 2 : 15));
}

/** Runs `-c <command>` in the session's VM, streaming its output; exits with the remote exit code. */
async function runInVm(manager: SandboxClient, sessionID: string, command: string): Promise<never> {
  const cancel = new AbortController();
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.on(signal, () => cancel.abort());
  try {
    for await (const event of manager.exec(sessionID, { command, cwd, callID: env.SANDBOX_CALL_ID || undefined }, cancel.signal)) {
      if (event.type === "stdout") process.stdout.write(event.data);
      else if (event.type === "stderr") process.stderr.write(event.data);
      else if (event.type === "exit") {
        if (event.timedOut) process.stderr.write("session-sandbox: the command exceeded the sandbox exec timeout and was killed\n");
        process.exit(event.cancelled ? 130 : event.timedOut ? 124 : event.exitCode);
      }
    }
  } catch (error) {
    if (cancel.signal.aborted) process.exit(143);
    refuse(`the sandbox could not run it: ${(error as Error).message}`);
  }
  refuse("the sandbox's answer ended without an exit status");
}

/** A boolean of a manager answer; an answer without one cannot say "not sandboxed", so it is a refusal. */
function flagOf(answer: unknown, key: string, what: string): boolean {
  const value = (answer as Record<string, unknown> | null)?.[key];
  if (typeof value !== "boolean") refuse(`the manager's answer about ${what} has no boolean "${key}", so it cannot be trusted: ${JSON.stringify(answer)?.slice(0, 300)}`);
  return value;
}

async function main(): Promise<never> {
  const config = loadPluginConfig(env);
  const commandAt = args.indexOf("-c");
  const command = commandAt >= 0 ? args[commandAt + 1] : undefined;
  const sessionID = env.SANDBOX_SESSION_ID;
  if (env.SANDBOX_DECISION === "blocked") refuse(env.SANDBOX_BLOCKED_REASON || "the sandbox arbiter blocked this command");
  if (!config.token) refuse(`the sandbox manager is not configured: ${config.problem}`);
  const manager = createClient({ url: config.url, token: config.token, timeoutMs: config.managerTimeoutMs });
  const unreachable = (error: unknown) => error instanceof ManagerUnreachableError && config.allowHostWhenUnreachable;

  if (!sessionID) {
    // PTY terminals, slash-command templates, the V2 runtime: OpenCode gives no session. Only a manager
    // that has sandboxing off server-wide (or the explicit opt-out) lets these reach the host.
    if (env.SANDBOX_UNTAGGED_SHELL === "host") return passThrough();
    const settings = await manager.settings.get().catch((error: unknown) => (unreachable(error) ? null : refuse(`cannot reach the sandbox manager: ${(error as Error).message}`)));
    if (settings === null || !flagOf(settings, "enabled", "the sandbox settings")) return passThrough();
    refuse("this shell has no OpenCode session identity (a PTY terminal, a slash-command template or the V2 runtime), so it cannot be sent to a session's sandbox. Set SANDBOX_UNTAGGED_SHELL=host to allow such shells on the host.");
  }
  const view = await manager.sandbox.get(sessionID).catch((error: unknown) => (unreachable(error) ? null : refuse(`cannot learn whether session ${sessionID} is sandboxed, so it is treated as sandboxed: ${(error as Error).message}`)));
  if (view === null || !flagOf(view, "sandboxed", "the session")) return passThrough();
  if (command === undefined) refuse(`session ${sessionID} is sandboxed and an interactive shell cannot be sandboxed by the shim; run commands with -c`);
  return runInVm(manager, sessionID, command);
}

await main();
