// A command's output as the plugin hands it back to OpenCode, bounded: a guest printing gigabytes must not
// set OpenCode's memory (the manager holds the guest back for a slow reader, but this reader is fast). The
// first and the last MAX_KEPT_CHARS / 2 characters are kept, with a line saying how much was left out
// between them. OpenCode shortens long tool output for the agent itself; this bound is far above its own.
const MAX_KEPT_CHARS = 8 * 1024 * 1024;

type BoundedOutput = {
  append(text: string): void;
  /** The output kept so far, with the note of what was left out when anything was. Costs a copy of it. */
  text(): string;
  /** Characters left out from the middle so far. */
  omitted(): number;
};

export function boundedOutput(maxChars = MAX_KEPT_CHARS): BoundedOutput {
  const half = Math.floor(maxChars / 2);
  let head = "";
  /** The tail as it came, whole chunks only dropped from its front: no copy per append. */
  const tail: string[] = [];
  let tailChars = 0;
  let dropped = 0;
  const excess = () => Math.max(0, tailChars - half);
  return {
    append(text) {
      if (head.length < half) {
        const room = half - head.length;
        head += text.slice(0, room);
        text = text.slice(room);
      }
      if (!text) return;
      tail.push(text);
      tailChars += text.length;
      while (tail.length > 1 && tailChars - tail[0]!.length >= half) {
        const first = tail.shift()!;
        tailChars -= first.length;
        dropped += first.length;
      }
    },
    text() {
      const left = dropped + excess();
      const kept = tail.join("").slice(excess());
      return left > 0 ? `${head}\n\n[session-sandbox: ${left} characters of output left out here; the first and last ${half} are kept]\n\n${kept}` : head + kept;
    },
    omitted: () => dropped + excess(),
  };
}
