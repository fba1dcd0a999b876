// The `bash` tool that replaces OpenCode's built-in one (same arguments: command, timeout, workdir). Each
// call goes to the arbiter: blocked → an error naming why, nothing runs; a winner → it runs the call
// (ours: in the session's VM); nobody claims (the manager said "not sandboxed") → the host, as built in.
import { tool } from "@opencode-ai/plugin";
import { isAbsolute, resolve } from "node:path";
import type { ProviderCall } from "../sdk/index";
import { decideRoute, takeCall } from "./call-decision";
import { runOnHost } from "./host-run";
import { tail } from "./provider";
import type { SessionTracker } from "./sessions";

const DEFAULT_TIMEOUT_MS = 120_000;

const DESCRIPTION = `Executes a given bash command with optional timeout, ensuring proper handling and security measures.

When this session is sandboxed, the command runs inside the session's sandbox VM: the repository is at the same absolute path, files outside the repository are not visible, there is no network unless the sandbox policy allows it, and nothing falls back to the host. Use the \`sandbox\` tool to see the session's sandbox status. When the session is not sandboxed, the command runs on the host.

All commands run in the current working directory by default. Use the \`workdir\` parameter if you need to run a command in a different directory. AVOID using \`cd <directory> && <command>\` patterns - use \`workdir\` instead.

IMPORTANT: This tool is for terminal operations like git, npm, docker, etc. DO NOT use it for file operations (reading, writing, editing, searching, finding files) - use the specialized tools for this instead.

Usage notes:
  - The command argument is required.
  - You can specify an optional timeout in milliseconds. If not specified, commands will time out after ${DEFAULT_TIMEOUT_MS}ms.
  - Always quote file paths that contain spaces with double quotes.
  - If the commands depend on each other and must run sequentially, use a single call with '&&' to chain them together.`;

/** The first words that make up a command's "kind", for the permission prompt's "always allow" pattern. */
function alwaysPattern(command: string): string {
  const words = command.trim().split(/\s+/).slice(0, 2);
  return `${words.join(" ")} *`;
}

export function createBashTool(sessions: SessionTracker) {
  return tool({
    description: DESCRIPTION,
    args: {
      command: tool.schema.string().describe("The command to execute"),
      timeout: tool.schema.number().int().positive().optional().describe("Optional timeout in milliseconds"),
      workdir: tool.schema
        .string()
        .optional()
        .describe("The working directory to run the command in. Defaults to the current directory. Use this instead of 'cd' commands."),
    },
    async execute(args, context) {
      const workdir = args.workdir ? (isAbsolute(args.workdir) ? args.workdir : resolve(context.directory, args.workdir)) : context.directory;
      const route = await decideRoute(sessions, context, "command");
      await context.ask({ permission: "bash", patterns: [args.command], always: [alwaysPattern(args.command)], metadata: { command: args.command } });
      const call: ProviderCall = {
        callID: route.callID,
        sessionID: context.sessionID,
        directory: context.directory,
        command: args.command,
        workdir,
        timeoutMs: args.timeout ?? DEFAULT_TIMEOUT_MS,
        abort: context.abort,
        onOutput: (soFar) => context.metadata({ title: args.command, metadata: { output: tail(soFar) } }),
      };
      if (route.kind === "host") {
        const result = await runOnHost(call);
        return { title: args.command, output: result.output, metadata: { output: tail(result.output), exit: result.exit, sandbox: false } };
      }
      const { providerId, provider } = route;
      await takeCall(route);
      const result = await provider.execute(call).catch((error: Error) => {
        throw new Error(`Not run: the sandbox (provider "${providerId}") refused or failed: ${error.message.replace(/\.?\s*$/, ".")} Nothing ran on the host.`);
      });
      return {
        title: result.title ?? args.command,
        output: result.output,
        metadata: { ...result.metadata, output: tail(result.output), exit: result.exit, sandbox: true, sandboxProvider: providerId, sandboxTier: route.tier },
      };
    },
  });
}
