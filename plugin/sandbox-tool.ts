// The `sandbox` tool for the model: the session's sandbox status (mode, VM, resources, network policy,
// which provider would run its commands), help, forwarded ports, and the VM's Docker Engine. It cannot change
// the sandbox; what it opens is a port forward, inbound only and on the host's loopback (unless the operator
// chose another address), so that the model can give the user the URL of a dev server it started in the VM,
// and it starts the Docker Engine the user gave the session (docs/docker.md).
import { tool } from "@opencode-ai/plugin";
import { inspectClaims } from "../sdk/index";
import { instanceFor, managerOf } from "./provider";
import type { SessionTracker } from "./sessions";

const HELP = `Sandbox help (session-sandbox)
- When this session is sandboxed, every shell command (the bash tool and the user's ! shell mode) runs in the session's own VM. Subagent sessions share their root session's VM.
- The VM sees the repository at the same absolute path, plus shared OpenCode directories; nothing else of the host. /tmp is private. No network unless the sandbox policy allows it.
- If the sandbox cannot be reached or fails, commands are refused with the reason. They are never run on the host instead: report the reason to the user rather than trying to work around it.
- A server you start in the VM (npm run dev, python3 -m http.server 8000) listens inside the VM only. To let the user open it, start it in the background, then call this tool with action "forward" and its port: the answer is a URL on the user's machine. Forwards close when the VM stops.
- Docker: when the user turned it on for this session (its VM must be on the gvisor or microvm tier), call this tool with action "docker" to start the Docker Engine before docker commands; in the VM, \`sandbox-docker start|status|log\` does the same.
- Only the user can turn the sandbox on or off or change its CPUs, memory and network policy (through the manager's API, SDK or admin scripts: PUT /api/session-sandbox/<session id>). This tool cannot change them.`;

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
    description:
      "Shows this session's sandbox status (mode, VM, resources, network policy, provider) or help; forwards a port of the session's VM (a dev server you started there) to the user's machine and answers its URL, or lists the forwards; starts the VM's Docker Engine when the user turned Docker on. It cannot change the sandbox itself.",
    args: {
      action: tool.schema.enum(["status", "help", "forward", "ports", "docker"]).optional().describe("status (default), help, forward (a port of the VM: give `port`), ports (the forwards) or docker (start the VM's Docker Engine)"),
      port: tool.schema.number().int().min(1).max(65535).optional().describe("with forward: the port the server listens on inside the VM"),
    },
    async execute(args, context) {
      if (args.action === "help") return HELP;
      if (args.action === "forward" || args.action === "ports") return forwardTool(sessions, args.action, args.port, context);
      if (args.action === "docker") return dockerTool(sessions, context);
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
          ["docker", view.docker.effective ? "on (start it with action docker)" : "off (only the user can turn it on)"],
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

/** The forward and ports actions: the URL to give the user, or why there is none. */
async function forwardTool(sessions: SessionTracker, action: "forward" | "ports", port: number | undefined, context: { sessionID: string; directory: string }) {
  const manager = managerOf(instanceFor(context.directory));
  try {
    await sessions.ensureRegistered(context.sessionID);
    if (action === "ports") {
      const { ports } = await manager.ports.list(context.sessionID);
      const output = ports.length === 0 ? "no port of this session's VM is forwarded" : ports.map((p) => `VM port ${p.port} → ${p.url}`).join("\n");
      return { title: "forwarded ports", output, metadata: { ports } };
    }
    if (port === undefined) return { title: "forward", output: "give the port the server listens on inside the VM, e.g. port: 8000", metadata: {} };
    const existing = (await manager.ports.list(context.sessionID)).ports.find((p) => p.port === port);
    const forward = existing ?? (await manager.ports.open(context.sessionID, { port }));
    return { title: `port ${port} forwarded`, output: `VM port ${port} is reachable at ${forward.url} on the user's machine (give the user this URL). It closes when the VM stops.`, metadata: { forward } };
  } catch (error) {
    return { title: "forward failed", output: `the port could not be forwarded: ${(error as Error).message}`, metadata: {} };
  }
}

/** The docker action: the Docker Engine answers, or why it does not (off, a tier without it, no dockerd in the image). */
async function dockerTool(sessions: SessionTracker, context: { sessionID: string; directory: string }) {
  try {
    await sessions.ensureRegistered(context.sessionID);
    const { version } = await managerOf(instanceFor(context.directory)).docker.start(context.sessionID);
    return { title: "docker ready", output: `the VM's Docker Engine ${version} answers: docker and docker compose work in this session's commands`, metadata: { version } };
  } catch (error) {
    return { title: "docker unavailable", output: `Docker could not be started: ${(error as Error).message}`, metadata: {} };
  }
}
