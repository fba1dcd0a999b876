// Shell tickets on their own: once, for one session, until they expire; bounded however many are asked for.
import { describe, expect, test } from "bun:test";
import { createShellTickets } from "../../app/services/shell-tickets";

const admin = { kind: "admin" } as const;

describe("shell tickets", () => {
  test("a ticket → its principal once, for its session only; then nothing", () => {
    const tickets = createShellTickets();
    const { ticket } = tickets.issue("ses_a", admin);
    expect(tickets.redeem(ticket, "ses_b")).toBeUndefined(); // another session's: refused, and still unused
    expect(tickets.redeem(ticket, "ses_a")).toEqual(admin);
    expect(tickets.redeem(ticket, "ses_a")).toBeUndefined();
  });

  test("past its life → refused", () => {
    let now = 1_000;
    const tickets = createShellTickets({ ttlMs: 10_000, now: () => now });
    const { ticket, expiresAt } = tickets.issue("ses_a", admin);
    expect(expiresAt).toBe(11_000);
    now = 11_000;
    expect(tickets.redeem(ticket, "ses_a")).toBeUndefined();
  });

  test("tickets are 256-bit random, and at most 1000 are held", () => {
    const tickets = createShellTickets();
    const first = tickets.issue("ses_a", admin).ticket;
    expect(Buffer.from(first, "base64url").byteLength).toBe(32);
    for (let i = 0; i < 1500; i++) tickets.issue("ses_a", admin);
    expect(tickets.redeem(first, "ses_a")).toBeUndefined(); // the oldest went
  });
});
