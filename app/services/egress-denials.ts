// What one VM's egress proxy refused lately, numbered, so a command can ask what was refused while it ran
// (exec-runs.ts says it on the command's stderr). Bounded: of a guest that retries refused connections in
// a loop, only the latest refusals are kept.
import type { EgressDenial } from "../../egress/index";

/** Refusals kept per VM; a command hears of at most a few of them anyway. */
const KEPT = 64;

export class DenialJournal {
  private next = 0;
  private readonly recent: Array<{ seq: number; denial: EgressDenial }> = [];

  add(denial: EgressDenial): void {
    this.recent.push({ seq: this.next++, denial });
    if (this.recent.length > KEPT) this.recent.shift();
  }

  mark(): number {
    return this.next;
  }

  /** The refusals numbered from `mark` on that are still kept, each target and rule once (a retry is no news). */
  since(mark: number): EgressDenial[] {
    const seen = new Map<string, EgressDenial>();
    for (const { seq, denial } of this.recent) {
      const key = `${denial.target}\u0000${denial.rule}`;
      if (seq >= mark && !seen.has(key)) seen.set(key, denial);
    }
    return [...seen.values()];
  }
}
