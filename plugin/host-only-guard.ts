// Refuses, for a session that is (or may be) sandboxed, the built-in tools that can only work on the host
// and would start project-controlled programs there: `lsp` (OpenCode's experimental tool, enabled by
// OPENCODE_EXPERIMENTAL_LSP_TOOL) spawns language servers found in the repository, e.g.
// node_modules/.bin/biome, which a guest can write. Unsandboxed sessions keep them.
import type { ToolContext } from "@opencode-ai/plugin";
import { decideRoute } from "./call-decision";
import type { SessionTracker } from "./sessions";

const HOST_ONLY_TOOLS = new Set(["lsp"]);

/** `directory`: the OpenCode instance's directory (the hook's input does not carry one). */
export function createHostOnlyGuard(sessions: SessionTracker, directory: string) {
  return async (input: { tool: string; sessionID: string; callID: string }) => {
    if (!HOST_ONLY_TOOLS.has(input.tool)) return;
    const context = { sessionID: input.sessionID, callID: input.callID, directory, messageID: "" } as unknown as ToolContext;
    const route = await decideRoute(sessions, context, `${input.tool} call`);
    if (route.kind === "provider") {
      throw new Error(`Not run: the ${input.tool} tool starts programs on the host, outside this session's sandbox (provider "${route.providerId}"), so it is refused for sandboxed sessions. Use the bash tool to run such checks inside the sandbox.`);
    }
  };
}
