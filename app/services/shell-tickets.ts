// Short-lived, single-use tickets for the shell WebSocket. A browser cannot set an Authorization header on a
// WebSocket, and the long-lived API token must never go into a URL (logs, history, Referer): the page asks
// for a ticket with its token (POST …/shell/tickets), then opens the socket with ?ticket=. A ticket works
// once, for the one session it was issued for, for TICKET_TTL_MS, and carries who asked for it.
import { randomBytes } from "node:crypto";
import type { Principal } from "./users";

/** Long enough for a page to open its socket, short enough that a leaked one is worth nothing. */
export const TICKET_TTL_MS = 10_000;
/** Tickets held at most (unredeemed ones expire; a flood of requests cannot grow this without bound). */
const MAX_OPEN_TICKETS = 1000;

type Issued = { sessionId: string; principal: Principal; expiresAt: number };

export function createShellTickets({ ttlMs = TICKET_TTL_MS, now = Date.now }: { ttlMs?: number; now?: () => number } = {}) {
  const open = new Map<string, Issued>();

  const sweep = () => {
    for (const [ticket, issued] of open) if (issued.expiresAt <= now()) open.delete(ticket);
    // Still full: the oldest go first (a Map keeps insertion order).
    for (const ticket of open.keys()) {
      if (open.size < MAX_OPEN_TICKETS) break;
      open.delete(ticket);
    }
  };

  return {
    issue(sessionId: string, principal: Principal): { ticket: string; expiresAt: number } {
      sweep();
      const ticket = randomBytes(32).toString("base64url");
      const expiresAt = now() + ttlMs;
      open.set(ticket, { sessionId, principal, expiresAt });
      return { ticket, expiresAt };
    },
    /** Who the ticket was issued to, once: a used, expired, unknown or other session's ticket is undefined. */
    redeem(ticket: string, sessionId: string): Principal | undefined {
      const issued = open.get(ticket);
      if (!issued || issued.sessionId !== sessionId) return undefined;
      open.delete(ticket);
      return issued.expiresAt > now() ? issued.principal : undefined;
    },
  };
}

export type ShellTickets = ReturnType<typeof createShellTickets>;
