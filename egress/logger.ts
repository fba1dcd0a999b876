// The logger the proxy writes to: any object with these four methods (the manager passes its own).
// Declared here so the egress package depends on nothing in app/.
export type EgressLogger = Record<"debug" | "info" | "warn" | "error", (message: string, fields?: Record<string, unknown>) => void>;
