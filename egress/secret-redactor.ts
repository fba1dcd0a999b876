// Stream-safe replacement of secret values by placeholders in bytes going back to the guest.

/** `ignoreCase`: ASCII letters match in either case (hex digits of an encoded form: `%2f`, `%2F`). */
type RedactionPattern = { name: string; find: string; replacement: string; ignoreCase?: boolean };

type Compiled = { name: string; find: Buffer; replacement: Buffer; ignoreCase: boolean };

/** ASCII letters lowered; every other byte kept, so positions match the original's. */
function asciiLower(input: Buffer): Buffer {
  const out = Buffer.from(input);
  for (let i = 0; i < out.length; i++) if (out[i]! >= 0x41 && out[i]! <= 0x5a) out[i] = out[i]! + 0x20;
  return out;
}

export class SecretRedactor {
  private readonly patterns: Compiled[];
  private readonly longest: number;
  private pending: Buffer = Buffer.alloc(0);
  /** Names of the secrets replaced so far, for logging (names only). */
  readonly hits = new Set<string>();

  constructor(patterns: readonly RedactionPattern[]) {
    // Longest first, so at one position the longer value wins (leftmost-longest).
    this.patterns = patterns
      .filter((p) => p.find.length > 0)
      .map((p) => {
        const find = Buffer.from(p.find, "latin1");
        return { name: p.name, find: p.ignoreCase ? asciiLower(find) : find, replacement: Buffer.from(p.replacement, "latin1"), ignoreCase: p.ignoreCase === true };
      })
      .sort((a, b) => b.find.length - a.find.length);
    this.longest = this.patterns[0]?.find.length ?? 0;
  }

  /** Redacts what can be decided now; the undecided tail (shorter than the longest value) waits. */
  push(chunk: Uint8Array): Buffer {
    const input = this.pending.length === 0 ? Buffer.from(chunk) : Buffer.concat([this.pending, chunk]);
    this.pending = Buffer.alloc(0);
    return this.scan(input, false);
  }

  /** End of stream: whatever was held back is not a whole value, so it goes out as is. */
  flush(): Buffer {
    const rest = this.pending;
    this.pending = Buffer.alloc(0);
    return this.scan(rest, true);
  }

  /** One-shot redaction of a complete buffer (a response head). Does not touch the stream state. */
  redactAll(input: Uint8Array): Buffer {
    return this.scan(Buffer.from(input), true);
  }

  private scan(input: Buffer, final: boolean): Buffer {
    if (this.patterns.length === 0) return input;
    const out: Buffer[] = [];
    let at = 0;
    // Patterns without case are looked for in a lowered copy (same length, same positions).
    const lowered = this.patterns.some((p) => p.ignoreCase) ? asciiLower(input) : input;
    const haystack = (p: Compiled) => (p.ignoreCase ? lowered : input);
    // Next occurrence of each pattern at or after `at`; kept across iterations so a body with many
    // matches is scanned once per pattern, not once per match.
    const next = this.patterns.map((p) => haystack(p).indexOf(p.find));
    for (;;) {
      const match = this.firstMatch(haystack, at, next);
      const partial = final ? -1 : this.firstPartial(input, lowered, at);
      // A possible longer/earlier value still arriving: keep it and everything after it for the next chunk.
      if (partial !== -1 && (match === null || partial <= match.index)) {
        out.push(input.subarray(at, partial));
        this.pending = Buffer.from(input.subarray(partial));
        break;
      }
      if (match === null) {
        out.push(input.subarray(at));
        break;
      }
      out.push(input.subarray(at, match.index), match.pattern.replacement);
      this.hits.add(match.pattern.name);
      at = match.index + match.pattern.find.length;
    }
    return out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out);
  }

  private firstMatch(haystack: (pattern: Compiled) => Buffer, from: number, next: number[]): { index: number; pattern: Compiled } | null {
    let best: { index: number; pattern: Compiled } | null = null;
    for (const [i, pattern] of this.patterns.entries()) {
      let index = next[i] as number;
      if (index !== -1 && index < from) next[i] = index = haystack(pattern).indexOf(pattern.find, from);
      if (index !== -1 && (best === null || index < best.index)) best = { index, pattern };
    }
    return best;
  }

  /** Earliest position whose remaining bytes are a proper prefix of some value, or -1. */
  private firstPartial(input: Buffer, lowered: Buffer, from: number): number {
    for (let start = Math.max(from, input.length - this.longest + 1); start < input.length; start++) {
      const tail = input.subarray(start);
      const lowTail = lowered.subarray(start);
      if (this.patterns.some((p) => p.find.length > tail.length && p.find.subarray(0, tail.length).equals(p.ignoreCase ? lowTail : tail))) return start;
    }
    return -1;
  }
}
