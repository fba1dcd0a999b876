// The cross-plugin sandbox arbiter: one registry on globalThis that every sandbox provider (ours, a loop
// plugin, a third party) shares, even when several copies of this module are loaded. Each shell call is
// decided once: the highest claim tier wins, ties go to the most recent claim; a claim that fails blocks.
export const ARBITER_KEY: unique symbol = Symbol.for("opencode.sandbox-arbiter.v1");
export const ARBITER_VERSION = 1;
export const CLAIM_TIERS = ["workload", "explicit", "default"] as const;
export type ClaimTier = (typeof CLAIM_TIERS)[number];
/** `at`: when the claim's reason began (e.g. the toggle time, ms since epoch); the newest wins a tie. */
export type Claim = { tier: ClaimTier; at: number };
export type ClaimInput = { sessionID: string; directory: string };

/** What the winner gets to run: the agent's call, as the `bash` tool received it. */
export type ProviderCall = {
  callID: string;
  sessionID: string;
  directory: string;
  command: string;
  /** Absolute working directory. */
  workdir: string;
  timeoutMs: number;
  abort: AbortSignal;
  /** Streams partial output to the running tool part. */
  onOutput(textSoFar: string): void;
};
export type ProviderResult = { output: string; exit: number | null; title?: string; metadata?: Record<string, unknown> };

export type SandboxProvider = {
  id: string;
  /** Side-effect free: may this provider run the session's commands, and how strongly? */
  claim(input: ClaimInput): Claim | null | Promise<Claim | null>;
  /** Runs a call this provider won. A provider without it cannot win a call someone else must run. */
  execute?(call: ProviderCall): Promise<ProviderResult>;
};

export type Decision =
  | { blocked: false; callID: string; winner: { providerId: string; claim: Claim } | null }
  | { blocked: true; callID: string; reason: string };

type Registry = {
  version: typeof ARBITER_VERSION;
  providers: Map<string, SandboxProvider>;
  /** callID → decision (a promise, so concurrent askers share one decision); Map order = LRU order. */
  decisions: Map<string, Promise<Decision>>;
  /** callID → the provider that marked (took) the call. */
  marks: Map<string, string>;
  maxDecisions: number;
  claimTimeoutMs: number;
};

export const DEFAULT_CLAIM_TIMEOUT_MS = 15_000;
export const DEFAULT_MAX_DECISIONS = 1_000;

/** The shared registry, created on first use. Looked up on every call: never cache it in a module. */
export function getArbiter(): Registry {
  const holder = globalThis as unknown as Record<symbol, unknown>;
  const existing = holder[ARBITER_KEY] as Registry | undefined;
  if (existing) {
    if (existing.version !== ARBITER_VERSION || !(existing.providers instanceof Map) || !(existing.decisions instanceof Map)) {
      throw new Error(`the sandbox arbiter registry on globalThis has version ${String(existing.version)}, this code speaks ${ARBITER_VERSION}`);
    }
    return existing;
  }
  const created: Registry = {
    version: ARBITER_VERSION,
    providers: new Map(),
    decisions: new Map(),
    marks: new Map(),
    maxDecisions: DEFAULT_MAX_DECISIONS,
    claimTimeoutMs: DEFAULT_CLAIM_TIMEOUT_MS,
  };
  holder[ARBITER_KEY] = created;
  return created;
}

/** Registers (or replaces, by id) a provider; returns a function that unregisters exactly this one. */
export function registerProvider(provider: SandboxProvider): () => void {
  if (!provider || typeof provider.id !== "string" || provider.id === "" || typeof provider.claim !== "function") {
    throw new TypeError("a sandbox provider needs a non-empty string id and a claim function");
  }
  getArbiter().providers.set(provider.id, provider);
  return () => {
    const { providers } = getArbiter();
    if (providers.get(provider.id) === provider) providers.delete(provider.id);
  };
}

export function listProviders(): SandboxProvider[] {
  return [...getArbiter().providers.values()];
}

/** Test and embedding knobs: the claim timeout (default 15 s) and the decision cache size (default 1,000). */
export function configureArbiter(change: { claimTimeoutMs?: number; maxDecisions?: number }): void {
  const registry = getArbiter();
  if (change.claimTimeoutMs !== undefined) registry.claimTimeoutMs = change.claimTimeoutMs;
  if (change.maxDecisions !== undefined) registry.maxDecisions = Math.max(1, change.maxDecisions);
}

function isClaim(value: unknown): value is Claim {
  if (typeof value !== "object" || value === null) return false;
  const { tier, at } = value as Record<string, unknown>;
  return CLAIM_TIERS.includes(tier as ClaimTier) && typeof at === "number" && Number.isFinite(at);
}

type Asked = { providerId: string; claim: Claim | null } | { providerId: string; failure: string };

async function ask(provider: SandboxProvider, input: ClaimInput, timeoutMs: number): Promise<Asked> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), timeoutMs)));
  try {
    const answer = await Promise.race([Promise.resolve().then(() => provider.claim(input)), timedOut]);
    if (answer === "timeout") return { providerId: provider.id, failure: `its claim took longer than ${timeoutMs} ms` };
    if (answer === null) return { providerId: provider.id, claim: null };
    if (!isClaim(answer)) return { providerId: provider.id, failure: `its claim returned an invalid value ${JSON.stringify(answer)?.slice(0, 200)}` };
    return { providerId: provider.id, claim: { tier: answer.tier, at: answer.at } };
  } catch (error) {
    return { providerId: provider.id, failure: `its claim failed: ${(error as Error)?.message ?? String(error)}` };
  } finally {
    clearTimeout(timer);
  }
}

/** Highest tier, then newest `at`, then provider id (so the answer never depends on load order). */
function pickWinner(claims: Array<{ providerId: string; claim: Claim }>): { providerId: string; claim: Claim } | null {
  const rank = (tier: ClaimTier) => CLAIM_TIERS.length - CLAIM_TIERS.indexOf(tier);
  const sorted = [...claims].sort(
    (a, b) => rank(b.claim.tier) - rank(a.claim.tier) || b.claim.at - a.claim.at || (a.providerId < b.providerId ? -1 : a.providerId > b.providerId ? 1 : 0),
  );
  return sorted[0] ?? null;
}

async function evaluate(callID: string, input: ClaimInput, timeoutMs: number): Promise<Decision> {
  const answers = await Promise.all(listProviders().map((provider) => ask(provider, input, timeoutMs)));
  const failures = answers.filter((answer): answer is Extract<Asked, { failure: string }> => "failure" in answer);
  if (failures.length > 0) {
    const reason = failures.map((failure) => `sandbox provider "${failure.providerId}" blocked the call: ${failure.failure}`).join("; ");
    return { blocked: true, callID, reason: `${reason}. Nothing was run.` };
  }
  const claims = answers.flatMap((answer) => ("claim" in answer && answer.claim ? [{ providerId: answer.providerId, claim: answer.claim }] : []));
  return { blocked: false, callID, winner: pickWinner(claims) };
}

/** Decides a call once: later askers with the same call id get the cached decision (bounded LRU). */
export function decideCall(call: { callID: string } & ClaimInput): Promise<Decision> {
  const registry = getArbiter();
  const cached = registry.decisions.get(call.callID);
  if (cached) {
    registry.decisions.delete(call.callID);
    registry.decisions.set(call.callID, cached);
    return cached;
  }
  const decision = evaluate(call.callID, { sessionID: call.sessionID, directory: call.directory }, registry.claimTimeoutMs);
  registry.decisions.set(call.callID, decision);
  while (registry.decisions.size > registry.maxDecisions) {
    const oldest = registry.decisions.keys().next().value as string;
    registry.decisions.delete(oldest);
    registry.marks.delete(oldest);
  }
  return decision;
}

/** Claims the right to run a decided call. True once, and only for the decision's winner. */
export async function markCall(callID: string, providerId: string): Promise<boolean> {
  const registry = getArbiter();
  const decision = await registry.decisions.get(callID);
  if (!decision || decision.blocked || decision.winner?.providerId !== providerId) return false;
  if (registry.marks.has(callID)) return false;
  registry.marks.set(callID, providerId);
  return true;
}

/** Who, if anyone, marked the call. */
export function markedBy(callID: string): string | null {
  return getArbiter().marks.get(callID) ?? null;
}

/** Every provider's current claim for a session, without deciding or caching anything (for status views). */
export async function inspectClaims(input: ClaimInput): Promise<Asked[]> {
  const registry = getArbiter();
  return Promise.all(listProviders().map((provider) => ask(provider, input, registry.claimTimeoutMs)));
}
