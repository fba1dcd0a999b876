// The read-only `sandbox` tool for the model: the session's sandbox status (mode, VM, resources, network
// policy, which provider would run its commands) and help. It only reads; the model cannot change anything.
import { tool } from "@opencode-ai/plugin";
import { inspectClaims } from "../sdk/index";
import { instanceFor, managerOf } from "./provider";
import type { SessionTracker } from "./sessions";

const HELP = `Sandbox help (session-sandbox)
- When this session is sandboxed, every shell command (the bash tool and the user's ! shell mode) runs in the session's own VM. Subagent sessions share their root session's VM.
- The VM sees the repository at the same absolute path, plus shared OpenCode directories; nothing else of the host. /tmp is private. No network unless the sandbox policy allows it.
- If the sandbox cannot be reached or fails, commands are refused with the reason. They are never run on the host instead: report the reason to the user rather than trying to work around it.
- Only the user can turn the sandbox on or off or change its CPUs, memory and network policy (through the manager's API, SDK or admin scripts: PUT /api/session-sandbox/<session id>). This tool cannot change anything.`;

type Line = [string, unknown];
type View = Awaited<ReturnType<ReturnType<typeof managerOf>["sandbox"]["get"]>>;

/** The effective network policy in words, for the model. */
function describeNetworkPolicy(policy: View["network"]["effective"]): string {
  if (policy.mode === "none") return "none (no network access)";
  if (policy.mode === "all") return "all (any host)";
  return policy.allow.length === 0 ? "allowlist, empty (no network access)" : `allowlist: ${policy.allow.join(", ")}`;
}

export function createSandboxTool(sessions: SessionTracker) {
  return tool({
    description: "Shows this session's sandbox status (mode, VM, resources, network policy, provider) or help. Read-only: it cannot change the sandbox.",
    args: {
      action: tool.schema.enum(["status", "help"]).optional().describe("status (default) or help"),
    },
    async execute(args, context) {
      if (args.action === "help") return HELP;
      const instance = instanceFor(context.directory);
      const lines: Line[] = [["session", context.sessionID]];
      try {
        await sessions.ensureRegistered(context.sessionID);
        const manager = managerOf(instance);
        const view = await manager.sandbox.get(context.sessionID);
        const vm = (await manager.vms.list()).vms.find((entry) => entry.name === view.vmName);
        lines.push(
          ["sandboxed", view.sandboxed],
          ["mode source", view.source],
          ["sandboxing enabled on the manager", view.serverEnabled],
          ["root session", view.rootSessionID],
          ["vm", `${view.vmName} (${vm ? vm.status : "not created yet: it starts with the first command"})`],
          ["cpus", view.resources.effective.cpus],
          ["memory (MiB)", view.resources.effective.memoryMib],
          ["network", describeNetworkPolicy(view.network.effective)],
          ["network policy source", view.network.override === null ? "settings default" : "session override (set by the user)"],
        );
      } catch (error) {
        lines.push(["manager", `unavailable: ${(error as Error).message}. Shell commands are refused until it answers; they never fall back to the host.`]);
      }
      const claims = await inspectClaims({ sessionID: context.sessionID, directory: context.directory });
      for (const claim of claims) {
        lines.push([`provider ${claim.providerId}`, "failure" in claim ? `blocks commands: ${claim.failure}` : claim.claim ? `claims (${claim.claim.tier})` : "does not claim"]);
      }
      const output = lines.map(([key, value]) => `${key}: ${String(value)}`).join("\n");
      return { title: "sandbox status", output, metadata: { readOnly: true } };
    },
  });
}
