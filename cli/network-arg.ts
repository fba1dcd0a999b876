// How the CLI writes a network policy: `none`, `all`, `allowlist:<entry>,<entry>` or the policy as JSON
// (`settings set network=…`), and how tables show one. The manager checks the entries.
import type { SandboxClient } from "../sdk/index";
import { UsageError } from "./errors";

export type NetworkPolicy = Awaited<ReturnType<SandboxClient["settings"]["get"]>>["network"];

/** `none`, `all`, `allowlist:api.github.com,*.example.com`, or the policy as JSON; the manager checks entries. */
export function parseNetworkPolicy(text: string, what: string): NetworkPolicy {
  if (text === "none" || text === "all") return { mode: text };
  if (text.startsWith("allowlist:")) return { mode: "allowlist", allow: text.slice("allowlist:".length).split(",").filter((entry) => entry !== "") };
  if (text.trim().startsWith("{")) {
    try {
      return JSON.parse(text) as NetworkPolicy;
    } catch {
      // fall through to the usage error
    }
  }
  throw new UsageError(`${what} ${JSON.stringify(text)} is not a network policy`, "write none, all, or allowlist:api.github.com,*.example.com");
}

export function describeNetwork(policy: NetworkPolicy): string {
  if (policy.mode !== "allowlist") return policy.mode;
  return policy.allow.length === 0 ? "allowlist (empty: nothing allowed)" : `allowlist: ${policy.allow.join(", ")}`;
}
