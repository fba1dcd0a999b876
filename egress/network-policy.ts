// A root session's network policy: what its VM may reach. Defined here, with the proxy that enforces it;
// the runtime drivers and the manager import it from here.
export type NetworkPolicy = { mode: "none" } | { mode: "allowlist"; allow: string[] } | { mode: "all" };
