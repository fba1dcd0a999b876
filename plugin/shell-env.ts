// The `shell.env` hook: tags every shell OpenCode spawns for a session (`!` shell mode, the built-in bash
// tool if it ever runs) with the session's identity and the arbiter's decision, for the shim (plugin/shim).
import { randomUUID } from "node:crypto";
import { decideCall } from "../sdk/index";
import { PROVIDER_ID, type Instance } from "./provider";
import type { SessionTracker } from "./sessions";

type ShellEnvInput = { cwd: string; sessionID?: string; callID?: string };

export function createShellEnvHook(instance: Instance, sessions: SessionTracker) {
  return async (input: ShellEnvInput, output: { env: Record<string, string> }) => {
    const { config } = instance;
    const env = output.env;
    env.SANDBOX_URL = config.url;
    env.SANDBOX_MANAGER_TIMEOUT_MS = String(config.managerTimeoutMs);
    // The shim strips the token again before it ever hands control to a host shell.
    if (config.token) env.SANDBOX_API_TOKEN = config.token;
    if (config.allowHostWhenUnreachable) env.SANDBOX_ALLOW_HOST_WHEN_UNREACHABLE = "1";
    if (!input.sessionID) return; // a PTY terminal: the shim decides without a session
    env.SANDBOX_SESSION_ID = input.sessionID;
    const callID = input.callID ?? `shell:${randomUUID()}`;
    env.SANDBOX_CALL_ID = callID;
    await sessions.ensureRegistered(input.sessionID).catch(() => undefined);
    const decision = await decideCall({ callID, sessionID: input.sessionID, directory: instance.directory });
    if (decision.blocked) {
      env.SANDBOX_DECISION = "blocked";
      env.SANDBOX_BLOCKED_REASON = decision.reason;
    } else if (!decision.winner) {
      env.SANDBOX_DECISION = "host";
    } else if (decision.winner.providerId === PROVIDER_ID) {
      env.SANDBOX_DECISION = PROVIDER_ID;
    } else {
      // Another provider won, but a spawned shell cannot reach an in-process provider: refuse, never the host.
      env.SANDBOX_DECISION = "blocked";
      env.SANDBOX_BLOCKED_REASON = `sandbox provider "${decision.winner.providerId}" claims this session (${decision.winner.claim.tier}), and shell mode can only run through session-sandbox; ask the agent to run the command with its bash tool instead.`;
    }
  };
}
