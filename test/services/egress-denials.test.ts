// The per-VM journal of egress refusals that a command's stderr notes are read from.
import { describe, expect, test } from "bun:test";
import type { EgressDenial } from "../../egress/index";
import { DenialJournal } from "../../app/services/egress-denials";

const denial = (host: string, rule = `no rule matches ${host}:443`): EgressDenial => ({ kind: "connect", target: `${host}:443`, rule, reason: `${host} is not in the allowlist` });

describe("DenialJournal", () => {
  test("a mark → only the refusals after it, in order", () => {
    const journal = new DenialJournal();
    journal.add(denial("before.test"));
    const mark = journal.mark();
    journal.add(denial("a.test"));
    journal.add(denial("b.test"));
    expect(journal.since(mark).map((d) => d.target)).toEqual(["a.test:443", "b.test:443"]);
    expect(journal.since(journal.mark())).toEqual([]);
  });

  test("a retried target → named once; the same target refused by another rule → named again", () => {
    const journal = new DenialJournal();
    const mark = journal.mark();
    for (let i = 0; i < 10; i++) journal.add(denial("retry.test"));
    journal.add(denial("retry.test", "block private 10.0.0.0/8"));
    expect(journal.since(mark).map((d) => d.rule)).toEqual(["no rule matches retry.test:443", "block private 10.0.0.0/8"]);
  });

  test("a guest that refuses itself in a loop → the journal keeps the latest 64 only", () => {
    const journal = new DenialJournal();
    const mark = journal.mark();
    for (let i = 0; i < 1000; i++) journal.add(denial(`h${i}.test`));
    const kept = journal.since(mark);
    expect(kept).toHaveLength(64);
    expect(kept.at(-1)?.target).toBe("h999.test:443");
  });
});
