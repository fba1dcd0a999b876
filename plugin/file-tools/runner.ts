// Where a file tool's shell jobs run, decided once per tool call by the arbiter: our provider → the
// session's VM through the SDK's exec (`sh -c <script>`, parameters in the exec's env); another provider
// → that provider's execute (parameters as inert base64 literals, since a ProviderCall has no env);
// nobody claims → a local `sh -c` on the host, the same script. A blocked decision throws: nothing runs.
import type { ToolContext } from "@opencode-ai/plugin";
import { spawn } from "node:child_process";
import type { SandboxClient } from "../../sdk/index";
import { decideRoute, takeCall, type RunningProvider } from "../call-decision";
import { instanceFor, managerOf, PROVIDER_ID } from "../provider";
import type { SessionTracker } from "../sessions";

/** A script for `sh -c`; every value it works on arrives in `env`, never inside the script text. */
export type Job = { script: string; env: Record<string, string> };
export type JobResult = { exitCode: number | null; stdout: Uint8Array; stderr: string };

export type FileRunner = {
  /** "vm", "host" or "provider:<id>", for metadata and messages. */
  where: string;
  /** The most env value bytes one job may carry (content larger than this goes in several jobs). */
  envBudgetBytes: number;
  run(job: Job): Promise<JobResult>;
};

/** A file job that takes longer than this is cancelled (where it runs) and fails the tool. */
const FILE_JOB_TIMEOUT_MS = 120_000;

/** The exec body is at most 1 MiB of JSON; leave room for the script and the JSON around it. */
const VM_ENV_BUDGET = 640 * 1024;
/** A foreign provider gets one command string (the manager's limit is 256 KiB): stay well under it. */
const PROVIDER_ENV_BUDGET = 96 * 1024;

export async function runnerFor(sessions: SessionTracker, context: ToolContext, what: string): Promise<FileRunner> {
  const route = await decideRoute(sessions, context, what);
  if (route.kind === "host") return hostRunner(context.directory, context.abort);
  await takeCall(route);
  if (route.providerId === PROVIDER_ID) return vmRunner(managerOf(instanceFor(context.directory)), context, route.callID);
  return providerRunner(route.provider, context, route.callID);
}

function vmRunner(manager: SandboxClient, context: ToolContext, callID: string): FileRunner {
  return {
    where: "vm",
    envBudgetBytes: VM_ENV_BUDGET,
    async run(job) {
      const stdout: Uint8Array[] = [];
      let stderr = "";
      const request = { command: job.script, cwd: context.directory, env: job.env, timeoutMs: FILE_JOB_TIMEOUT_MS, callID };
      for await (const event of manager.exec(context.sessionID, request, context.abort)) {
        if (event.type === "stdout") stdout.push(event.data);
        else if (event.type === "stderr") stderr += Buffer.from(event.data).toString("utf8");
        else if (event.type === "exit") return { exitCode: event.timedOut || event.cancelled ? null : event.exitCode, stdout: Buffer.concat(stdout), stderr };
      }
      throw new Error("the sandbox's exec stream ended without an exit status");
    },
  };
}

/**
 * `NAME=<value>` for the shell, from a base64 literal: no value ever becomes shell syntax.
 * Exported so a test checks that values stay data.
 */
export function envPrelude(env: Record<string, string>): string {
  return Object.entries(env)
    .map(([name, value]) => {
      if (!/^[A-Z_][A-Z0-9_]*$/.test(name)) throw new Error(`bad job variable name ${name}`);
      const literal = Buffer.from(value, "utf8").toString("base64");
      return `${name}=$(printf '%s' '${literal}' | base64 -d; printf x); ${name}=\${${name}%x}; export ${name}`;
    })
    .join("\n");
}

function providerRunner(provider: RunningProvider, context: ToolContext, callID: string): FileRunner {
  return {
    where: `provider:${provider.id}`,
    envBudgetBytes: PROVIDER_ENV_BUDGET,
    async run(job) {
      // A provider merges stdout and stderr: our scripts report in-band, so stderr is dropped.
      const command = `${envPrelude(job.env)}\n{\n${job.script}\n} 2>/dev/null`;
      const result = await provider.execute({
        callID,
        sessionID: context.sessionID,
        directory: context.directory,
        command,
        workdir: context.directory,
        timeoutMs: FILE_JOB_TIMEOUT_MS,
        abort: context.abort,
        onOutput: () => undefined,
      });
      const text = result.output === "(no output)" ? "" : result.output;
      return { exitCode: result.exit, stdout: Buffer.from(text, "utf8"), stderr: "" };
    },
  };
}

/**
 * The same scripts on the host, for sessions nobody sandboxes: a clean env, killed on abort or timeout.
 * Exported so the tests run the scripts on the host.
 */
export function hostRunner(cwd: string, abort: AbortSignal): FileRunner {
  return {
    where: "host",
    envBudgetBytes: VM_ENV_BUDGET,
    run: (job) =>
      new Promise<JobResult>((resolve, reject) => {
        const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/", LANG: "C.UTF-8", ...job.env };
        const child = spawn("/bin/sh", ["-c", job.script], { cwd, env, stdio: ["ignore", "pipe", "pipe"], signal: AbortSignal.any([abort, AbortSignal.timeout(FILE_JOB_TIMEOUT_MS)]) });
        const stdout: Buffer[] = [];
        let stderr = "";
        child.stdout.on("data", (chunk: Buffer) => stdout.push(chunk));
        child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
        child.on("error", (error) => reject(error.name === "AbortError" ? new Error(abort.aborted ? "aborted" : `timed out after ${FILE_JOB_TIMEOUT_MS} ms`) : error));
        child.on("close", (code) => resolve({ exitCode: code, stdout: Buffer.concat(stdout), stderr }));
      }),
  };
}
