// Finds msb's own `error: …` block in stderr, and holds such a block back while streaming a guest's
// stderr: in `msb exec --stream` the guest's stderr and msb's error report share one stream, and
// msb writes its report last, so only a trailing block can be msb's.

type ErrorBlock = { header: string; details: string[] };

const ANSI_ESCAPE = /\u001b\[[0-9;]*m/g;
const DETAIL_LINE = /^\s+(→|->)\s?/;

function cleanLines(text: string): string[] {
  const lines = text.replace(ANSI_ESCAPE, "").split("\n");
  while (lines.length > 0 && (lines.at(-1) ?? "").trim() === "") lines.pop();
  return lines;
}

function blockAt(lines: string[], index: number): ErrorBlock {
  const header = (lines[index] ?? "").slice("error: ".length).trim();
  return { header, details: lines.slice(index + 1).map((line) => line.replace(DETAIL_LINE, "").trim()) };
}

/** The `error:` block that ends the text (only `  → …` lines may follow its header), if any. */
export function trailingErrorBlock(text: string): ErrorBlock | undefined {
  const lines = cleanLines(text);
  for (let index = lines.length - 1; index >= 0; index--) {
    const line = lines[index] ?? "";
    if (line.startsWith("error: ")) return blockAt(lines, index);
    if (!DETAIL_LINE.test(line)) return undefined;
  }
  return undefined;
}

/** The last `error:` line of a lifecycle command's stderr and its detail lines, if any. */
export function lastErrorBlock(text: string): ErrorBlock | undefined {
  const lines = cleanLines(text);
  for (let index = lines.length - 1; index >= 0; index--) {
    if ((lines[index] ?? "").startsWith("error: ")) {
      const block = blockAt(lines, index);
      const end = block.details.findIndex((_, i) => !DETAIL_LINE.test(lines[index + 1 + i] ?? ""));
      return end < 0 ? block : { header: block.header, details: block.details.slice(0, end) };
    }
  }
  return undefined;
}

export function formatErrorBlock(block: ErrorBlock): string {
  return [block.header, ...block.details].join("; ");
}

const encoder = new TextEncoder();
const HEADER = encoder.encode("error: ");
const DETAIL = encoder.encode("  → ");
/** msb's blocks are a few lines; past this the held bytes are surely the guest's. */
const MAX_HELD_BYTES = 64 * 1024;

/** True when `line` starts with `pattern`, or, while the line is still incomplete, could still do so. */
function startsWithOrCould(line: Uint8Array, pattern: Uint8Array, complete: boolean): boolean {
  const length = Math.min(line.length, pattern.length);
  for (let i = 0; i < length; i++) if (line[i] !== pattern[i]) return false;
  return line.length >= pattern.length || !complete;
}

/**
 * Forwards stderr bytes unchanged and in order, except that a trailing run of lines that looks like
 * an msb error block is held until either more guest output shows it was not trailing (then it is
 * forwarded) or the process exits (then the caller decides: `release()` or `discard()`).
 */
export class StderrHoldback {
  #pending = new Uint8Array(0);

  constructor(private readonly forward: (chunk: Uint8Array) => void) {}

  push(chunk: Uint8Array): void {
    const joined = new Uint8Array(this.#pending.length + chunk.length);
    joined.set(this.#pending);
    joined.set(chunk, this.#pending.length);
    this.#pending = joined;
    this.#drain();
  }

  /** The bytes held so far, as text. */
  heldText(): string {
    return new TextDecoder().decode(this.#pending);
  }

  /** Drops whatever is held (it was msb's report, not the guest's output). */
  discard(): void {
    this.#pending = new Uint8Array(0);
  }

  /** Forwards whatever is held. */
  release(): void {
    if (this.#pending.length > 0) this.forward(this.#pending);
    this.#pending = new Uint8Array(0);
  }

  /** The pending buffer always starts at a line start; find where the held block begins. */
  #drain(): void {
    const bytes = this.#pending;
    let holdStart: number | undefined;
    let lineStart = 0;
    while (lineStart < bytes.length) {
      const newline = bytes.indexOf(10, lineStart);
      const complete = newline >= 0;
      const line = bytes.subarray(lineStart, complete ? newline : bytes.length);
      const isHeader = startsWithOrCould(line, HEADER, complete);
      if (holdStart === undefined ? isHeader : !startsWithOrCould(line, DETAIL, complete)) holdStart = isHeader ? lineStart : undefined;
      lineStart = complete ? newline + 1 : bytes.length;
    }
    const cut = holdStart === undefined || bytes.length - holdStart > MAX_HELD_BYTES ? bytes.length : holdStart;
    if (cut > 0) this.forward(bytes.slice(0, cut));
    this.#pending = bytes.slice(cut);
  }
}
