// The ring that keeps a running command's latest output for its followers: order, the bound, what a slow
// follower is told, and the end.
import { describe, expect, test } from "bun:test";
import { OutputRing, type RingItem } from "../../app/services/output-ring";

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (items: RingItem[]) => items.map((item) => ("skipped" in item ? `[skipped ${item.skipped}]` : `${item.stream === "stderr" ? "!" : ""}${new TextDecoder().decode(item.data)}`)).join("");

async function collect(generator: AsyncGenerator<RingItem>): Promise<RingItem[]> {
  const items: RingItem[] = [];
  for await (const item of generator) items.push(item);
  return items;
}

describe("OutputRing", () => {
  test("stdout and stderr in the order they came; without follow, what is held now", async () => {
    const ring = new OutputRing(100);
    ring.push("stdout", bytes("a"));
    ring.push("stderr", bytes("b"));
    ring.push("stdout", bytes("c"));
    expect(text(await collect(ring.read(false)))).toBe("a!bc");
    expect([ring.totalBytes, ring.droppedBytes]).toEqual([3, 0]);
  });

  test("past its bound → the oldest chunks go; a reader starts at the oldest held byte", async () => {
    const ring = new OutputRing(10);
    for (const part of ["0123", "4567", "89ab", "cdef"]) ring.push("stdout", bytes(part));
    expect(text(await collect(ring.read(false)))).toBe("89abcdef");
    expect([ring.totalBytes, ring.droppedBytes]).toEqual([16, 8]);
  });

  test("follow → the held output, then what comes, until close; a follower that fell behind is told how much it missed", async () => {
    const ring = new OutputRing(8);
    ring.push("stdout", bytes("held"));
    const follower = ring.read(true);
    expect(text([(await follower.next()).value as RingItem])).toBe("held");
    const next = follower.next();
    ring.push("stdout", bytes("AAAA"));
    expect(text([(await next).value as RingItem])).toBe("AAAA");
    // It stops reading while 12 more bytes come: 8 fit.
    for (const part of ["BBBB", "CCCC", "DDDD"]) ring.push("stdout", bytes(part));
    ring.close();
    expect(text(await collect(follower))).toBe("[skipped 4]CCCCDDDD");
  });

  test("a million one-byte writes → bounded, and a reader is not quadratic", async () => {
    const ring = new OutputRing(1024);
    for (let i = 0; i < 1_000_000; i++) ring.push("stdout", bytes("x"));
    ring.close();
    const items = await collect(ring.read(true));
    expect(items.length).toBe(1024);
    expect(ring.droppedBytes).toBe(1_000_000 - 1024);
  });
});
