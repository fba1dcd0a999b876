// Our arbiter provider ("session-sandbox"): its claim is the manager's word on the session's mode, and it
// runs the calls it wins in the session's VM through the SDK's exec stream. One per process: every
// OpenCode directory instance adds its own manager connection, looked up by directory.
import { boundedOutput } from "./bounded-output";
import {
  createClient,
  ManagerUnreachableError,
  registerProvider,
  SessionNotFoundError,
  type Claim,
  type ClaimInput,
  type ProviderCall,
  type ProviderResult,
  type SandboxClient,
  type SandboxProvider,
} from "../sdk/index";
import type { PluginConfig } from "./config";

export const PROVIDER_ID = "session-sandbox";

export type Instance = {
  directory: string;
  config: PluginConfig;
  manager: SandboxClient | null;
  /** Registers a session (and its parents) again: the manager forgot it (deleted, or a database reset). */
  reregister?: (sessionID: string) => Promise<void>;
};

const instances = new Map<string, Instance>();

export function addInstance(directory: string, config: PluginConfig): Instance {
  const manager = config.token ? createClient({ url: config.url, token: config.token, timeoutMs: config.managerTimeoutMs }) : null;
  const instance = { directory, config, manager };
  instances.set(directory, instance);
  registerProvider(provider); // idempotent: same id, same object
  return instance;
}

export function removeInstance(directory: string): void {
  instances.delete(directory);
}

/** The instance serving a directory; any instance as a fallback (one server, one manager, in practice). */
export function instanceFor(directory: string): Instance {
  const found = instances.get(directory) ?? [...instances.values()].at(-1);
  if (!found) throw new Error("the session-sandbox plugin has no instance for this directory");
  return found;
}

/** The manager client, or an error that says how to configure it. */
export function managerOf(instance: Instance): SandboxClient {
  if (!instance.manager) throw new Error(`the sandbox manager is not configured: ${instance.config.problem}`);
  return instance.manager;
}

/**
 * The manager's view of a session. A 404 for a session this process registered means the manager forgot
 * it (DELETE /api/sessions/:id, or a database reset): register it again, parents first, and ask once more.
 */
async function sandboxViewOf(instance: Instance, manager: SandboxClient, sessionID: string) {
  try {
    return await manager.sandbox.get(sessionID);
  } catch (error) {
    if (!(error instanceof SessionNotFoundError) || !instance.reregister) throw error;
    await instance.reregister(sessionID);
    return manager.sandbox.get(sessionID);
  }
}

/** The manager's mode → a claim: explicit toggle → `explicit`, on by default → `default`, off → null. */
async function claimFromManager(instance: Instance, input: ClaimInput): Promise<Claim | null> {
  const manager = managerOf(instance);
  try {
    const view = await sandboxViewOf(instance, manager, input.sessionID);
    if (!view.sandboxed) return null;
    // A child reports "inherited": the root's own source decides the tier.
    const root = view.source === "inherited" ? await manager.sandbox.get(view.rootSessionID) : view;
    const explicit = root.source === "explicit" || (root.source === "fork" && root.toggledAt !== null);
    return { tier: explicit ? "explicit" : "default", at: root.toggledAt ?? 0 };
  } catch (error) {
    if (error instanceof ManagerUnreachableError && instance.config.allowHostWhenUnreachable) return null; // the documented opt-out
    throw new Error(`could not learn whether session ${input.sessionID} is sandboxed, so it is treated as sandboxed: ${(error as Error).message}`);
  }
}

/** Keeps the tail the UI shows, like the built-in tool (the full output goes back to OpenCode). */
const METADATA_OUTPUT_CHARS = 30_000;
export const tail = (text: string) => (text.length <= METADATA_OUTPUT_CHARS ? text : `...\n\n${text.slice(-METADATA_OUTPUT_CHARS)}`);

/** How often the live view of a running command's output is refreshed. */
const LIVE_OUTPUT_EVERY_MS = 250;

/** Runs a won call in the session's VM: streams output, honours the timeout, cancels in the VM on abort. */
async function executeInVm(instance: Instance, call: ProviderCall): Promise<ProviderResult> {
  const manager = managerOf(instance);
  const decoder = new TextDecoder();
  const output = boundedOutput();
  let vmName = "";
  // The manager enforces the timeout in the VM; this guard only catches a manager that stops answering.
  const guard = AbortSignal.timeout(call.timeoutMs + 15_000);
  const signal = AbortSignal.any([call.abort, guard]);
  const notes: string[] = [];
  let exit: number | null = null;
  let shownAt = -Infinity;
  try {
    for await (const event of manager.exec(call.sessionID, { command: call.command, cwd: call.workdir, timeoutMs: call.timeoutMs, callID: call.callID }, signal)) {
      if (event.type === "started") vmName = event.vmName;
      else if (event.type === "stdout" || event.type === "stderr") {
        output.append(decoder.decode(event.data, { stream: true }));
        // The live view, a few times a second: each is a copy of everything kept.
        if (performance.now() - shownAt >= LIVE_OUTPUT_EVERY_MS) {
          shownAt = performance.now();
          call.onOutput(output.text());
        }
      } else {
        exit = event.timedOut || event.cancelled ? null : event.exitCode;
        if (event.timedOut) notes.push(`shell tool terminated command after exceeding timeout ${call.timeoutMs} ms. If this command is expected to take longer and is not waiting for interactive input, retry with a larger timeout value in milliseconds.`);
        if (event.cancelled) notes.push("User aborted the command");
      }
    }
  } catch (error) {
    if (!call.abort.aborted && !guard.aborted) throw error;
    notes.push(call.abort.aborted ? "User aborted the command" : "the sandbox manager stopped answering; the command was cancelled in the VM");
  }
  output.append(decoder.decode());
  let shown = output.text() || "(no output)";
  if (notes.length > 0) shown += `\n\n<shell_metadata>\n${notes.join("\n")}\n</shell_metadata>`;
  return { output: shown, exit, metadata: { vmName } };
}

const provider: SandboxProvider = {
  id: PROVIDER_ID,
  claim: (input) => claimFromManager(instanceFor(input.directory), input),
  execute: (call) => executeInVm(instanceFor(call.directory), call),
};
