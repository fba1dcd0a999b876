// One agent tool call's arbiter decision, shared by the `bash` tool and the file tools: blocked → an
// error naming why (nothing runs anywhere), a winner → the provider that must run the call (marked for
// it), nobody claims (the manager said "not sandboxed") → the host, as OpenCode's built-in tools would.
import type { ToolContext } from "@opencode-ai/plugin";
import { randomUUID } from "node:crypto";
import { decideCall, listProviders, markCall, type SandboxProvider } from "../sdk/index";
import type { SessionTracker } from "./sessions";

/** A provider that can run calls (the arbiter lets only those win). */
export type RunningProvider = SandboxProvider & Required<Pick<SandboxProvider, "execute">>;

type CallRoute =
  | { kind: "host"; callID: string }
  | { kind: "provider"; callID: string; provider: RunningProvider; providerId: string; tier: string };

/** OpenCode passes the call id at runtime; it is not in the published ToolContext type. */
function callIdOf(context: ToolContext): string {
  return (context as ToolContext & { callID?: string }).callID ?? `${context.messageID}:${randomUUID()}`;
}

/** Decides the call; throws (nothing ran) when it is blocked. `what` names the call in errors. */
export async function decideRoute(sessions: SessionTracker, context: ToolContext, what: string): Promise<CallRoute> {
  const callID = callIdOf(context);
  // Registration failing is not fatal here: our claim then fails too, which blocks the call.
  await sessions.ensureRegistered(context.sessionID).catch(() => undefined);
  const decision = await decideCall({ callID, sessionID: context.sessionID, directory: context.directory });
  if (decision.blocked) {
    throw new Error(`Not run: ${decision.reason} The session may be sandboxed, so the ${what} is not run on the host either. Check the sandbox manager, then retry.`);
  }
  if (!decision.winner) return { kind: "host", callID };
  return { kind: "provider", callID, providerId: decision.winner.providerId, tier: decision.winner.claim.tier, provider: winnerOf(decision.winner.providerId) };
}

function winnerOf(providerId: string): RunningProvider {
  const winner = listProviders().find((provider): provider is RunningProvider => provider.id === providerId && typeof provider.execute === "function");
  if (!winner) throw new Error(`Not run: sandbox provider "${providerId}" won this call but cannot run commands (it has no execute). Nothing ran on the host.`);
  return winner;
}

/** Takes the call for its winner; false if someone already took it. */
export async function takeCall(route: Extract<CallRoute, { kind: "provider" }>): Promise<void> {
  if (!(await markCall(route.callID, route.providerId))) throw new Error(`Not run: call ${route.callID} was already taken by sandbox provider "${route.providerId}".`);
}
