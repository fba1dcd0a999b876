// What a user's token may ask (docs/non-root.md): its own sessions and their VMs, the settings to read, and
// registering a session. Everything else needs the manager's own token. A request is matched before it is
// routed, so a path not listed here is refused: a route added later is the manager's only until it is.
import { ForbiddenError, VmNotFoundError } from "../errors";
import type { SessionAccess } from "../services/session-access";
import type { Principal, UsersService } from "../services/users";
import { vmNameFor } from "../vm-identity";

/** any: every user (the route narrows what it answers); session / vm: the one named in the path, if theirs. */
type Scope = "any" | "session" | "vm";
type Rule = { methods: string[]; pattern: RegExp; scope: Scope };

const USER_RULES: Rule[] = [
  { methods: ["GET"], pattern: /^\/api\/openapi\.json$/, scope: "any" },
  { methods: ["GET"], pattern: /^\/api\/settings\/sandbox(?:\/defaults)?$/, scope: "any" },
  { methods: ["GET", "POST"], pattern: /^\/api\/sessions$/, scope: "any" },
  { methods: ["GET", "DELETE"], pattern: /^\/api\/sessions\/([^/]+)$/, scope: "session" },
  { methods: ["POST"], pattern: /^\/api\/sessions\/([^/]+)\/exec$/, scope: "session" },
  { methods: ["POST"], pattern: /^\/api\/sessions\/([^/]+)\/activity$/, scope: "session" },
  { methods: ["GET"], pattern: /^\/api\/sessions\/([^/]+)\/shell$/, scope: "session" },
  { methods: ["POST"], pattern: /^\/api\/sessions\/([^/]+)\/shell\/tickets$/, scope: "session" },
  { methods: ["GET", "PUT"], pattern: /^\/api\/sessions\/([^/]+)\/files$/, scope: "session" },
  { methods: ["GET", "POST"], pattern: /^\/api\/sessions\/([^/]+)\/ports$/, scope: "session" },
  { methods: ["POST"], pattern: /^\/api\/sessions\/([^/]+)\/docker\/start$/, scope: "session" },
  { methods: ["GET"], pattern: /^\/api\/sessions\/([^/]+)\/processes(?:\/[^/]+\/logs)?$/, scope: "session" },
  { methods: ["DELETE"], pattern: /^\/api\/sessions\/([^/]+)\/processes\/[^/]+$/, scope: "session" },
  { methods: ["DELETE"], pattern: /^\/api\/sessions\/([^/]+)\/ports\/[^/]+$/, scope: "session" },
  { methods: ["GET"], pattern: /^\/api\/sessions\/([^/]+)\/execs$/, scope: "session" },
  { methods: ["POST"], pattern: /^\/api\/sessions\/([^/]+)\/execs\/[^/]+\/cancel$/, scope: "session" },
  { methods: ["GET", "PUT"], pattern: /^\/api\/session-sandbox\/([^/]+)$/, scope: "session" },
  { methods: ["GET"], pattern: /^\/api\/vms(?:\/stats)?$/, scope: "any" },
  { methods: ["GET"], pattern: /^\/api\/vms\/([^/]+)\/stats$/, scope: "vm" },
];

function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment; // the route's own validation answers a malformed one
  }
}

export type UserAccess = {
  users: Pick<UsersService, "authenticate" | "rootsOf">;
  sessionAccess: Pick<SessionAccess, "requireUsable">;
};

/**
 * Which VMs the principal may see, by name: every one for the manager's token, else its own roots' VMs.
 * The roots are read once, when it is made: one query per request, not per VM listed.
 */
export function vmFilterFor(users: Pick<UsersService, "rootsOf">, principal: Principal): (vmName: string) => boolean {
  if (principal.kind === "admin") return () => true;
  const own = new Set(users.rootsOf(principal.uid).map(vmNameFor));
  return (vmName) => own.has(vmName);
}

/** Throws unless the user may make this request; a session or VM of someone else's is a 404, as an unknown one. */
export function authorizeUser(access: UserAccess, principal: Principal & { kind: "user" }, method: string, path: string): void {
  const rule = USER_RULES.find((r) => r.methods.includes(method) && r.pattern.test(path));
  if (!rule) throw new ForbiddenError(`${method} ${path}`);
  const named = rule.pattern.exec(path)?.[1];
  if (rule.scope === "session" && named) access.sessionAccess.requireUsable(principal, decoded(named));
  if (rule.scope === "vm" && named && !vmFilterFor(access.users, principal)(decoded(named))) throw new VmNotFoundError(decoded(named));
}

