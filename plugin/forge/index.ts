// The reference workload provider ("forge"): a loop plugin that claims `workload` for the sessions it runs
// loops in and runs their shell calls in the session's sandbox VM. Built on sdk/ alone (the arbiter
// helpers and the typed client), to prove a third party can take part without our plugin's internals.
// A loop session is one whose title starts with the loop prefix (default "[forge]"), or a child of one.
import type { Plugin } from "@opencode-ai/plugin";
import { connectionOptionsFrom, resolveConnection } from "../../sdk/connection";
import { createClient, registerProvider, SessionConflictError, SessionNotFoundError, type ProviderCall, type SandboxClient, type SandboxProvider } from "../../sdk/index";

type Loop = { startedAt: number };
type OpencodeLookup = (id: string) => Promise<{ id: string; directory: string; parentID?: string } | null>;

/** Module state: one provider per process, whatever the number of OpenCode directory instances. */
const loops = new Map<string, Loop>();
let manager: SandboxClient | null = null;
let lookup: OpencodeLookup = async () => null;

async function ensureRegistered(client: SandboxClient, id: string, depth = 0): Promise<void> {
  try {
    await client.sessions.get(id);
    return;
  } catch (error) {
    if (!(error instanceof SessionNotFoundError) || depth > 32) throw error;
  }
  const info = await lookup(id);
  if (!info) throw new Error(`forge: OpenCode does not know session ${id}`);
  if (info.parentID) await ensureRegistered(client, info.parentID, depth + 1);
  await client.sessions.register({ id, parentID: info.parentID ?? null, directory: info.directory }).catch((error) => {
    if (!(error instanceof SessionConflictError)) throw error;
  });
}

async function execute(call: ProviderCall) {
  if (!manager) throw new Error("forge: no sandbox manager configured (SANDBOX_URL, SANDBOX_API_TOKEN)");
  await ensureRegistered(manager, call.sessionID);
  const decoder = new TextDecoder();
  let output = "";
  let exit: number | null = null;
  let vmName = "";
  for await (const event of manager.exec(call.sessionID, { command: call.command, cwd: call.workdir, timeoutMs: call.timeoutMs, callID: call.callID }, call.abort)) {
    if (event.type === "started") vmName = event.vmName;
    else if (event.type === "stdout" || event.type === "stderr") call.onOutput((output += decoder.decode(event.data, { stream: true })));
    else exit = event.timedOut || event.cancelled ? null : event.exitCode;
  }
  return { output: output + decoder.decode() || "(no output)", exit, metadata: { vmName, forgeLoop: true } };
}

const provider: SandboxProvider = {
  id: "forge",
  claim: ({ sessionID }) => {
    const loop = loops.get(sessionID);
    return loop ? { tier: "workload", at: loop.startedAt } : null;
  },
  execute,
};

export const ForgeProvider: Plugin = async (input, options = {}) => {
  const prefix = typeof options.titlePrefix === "string" ? options.titlePrefix : "[forge]";
  // The SDK's one resolver: these options, then SANDBOX_URL/HOST/PORT, SANDBOX_API_TOKEN(_FILE), the data dir's token file.
  const connection = resolveConnection(connectionOptionsFrom(options));
  if (connection.token && !connection.urlProblem) manager = createClient({ url: connection.url, token: connection.token });
  lookup = async (id) => (await input.client.session.get({ path: { id }, query: { directory: input.directory } })).data ?? null;
  registerProvider(provider);
  return {
    event: async ({ event }) => {
      if (event.type === "session.created") {
        const { id, title, parentID } = event.properties.info;
        if (title.startsWith(prefix) || (parentID && loops.has(parentID))) loops.set(id, { startedAt: Date.now() });
      } else if (event.type === "session.deleted") {
        loops.delete(event.properties.info.id);
      }
    },
  };
};
