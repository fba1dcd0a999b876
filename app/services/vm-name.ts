// The VM name the design fixes: `ocm-session-` + the first 12 hex chars of sha256(rootSessionID).
import { createHash } from "node:crypto";

export function vmNameFor(rootSessionId: string): string {
  return `ocm-session-${createHash("sha256").update(rootSessionId).digest("hex").slice(0, 12)}`;
}
