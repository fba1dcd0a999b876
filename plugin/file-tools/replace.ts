// The `edit` tool's replacement, with the same strategies and messages as OpenCode 1.18.33: the exact
// text first, then progressively looser matches (trimmed lines, first/last-line anchors with similar
// middles, collapsed whitespace, shifted indentation, unescaped sequences, trimmed ends, context
// blocks). A match must be unique unless replaceAll; a match far larger than oldString is refused.
type Candidates = (content: string, find: string) => Iterable<string>;

const lines = (text: string) => text.split("\n");
const dropTrailingEmpty = (list: string[]) => (list.length > 0 && list.at(-1) === "" ? list.slice(0, -1) : list);

/** The exact text of lines [first, last] of `content`. */
function span(contentLines: string[], first: number, last: number): string {
  return contentLines.slice(first, last + 1).join("\n");
}

function levenshtein(a: string, b: string): number {
  if (a === "" || b === "") return Math.max(a.length, b.length);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length]!;
}

const exact: Candidates = (_content, find) => [find];

function* trimmedLines(content: string, find: string) {
  const have = lines(content);
  const want = dropTrailingEmpty(lines(find));
  for (let i = 0; i + want.length <= have.length; i++) {
    if (want.every((line, k) => have[i + k]!.trim() === line.trim())) yield span(have, i, i + want.length - 1);
  }
}

/** Middle lines' mean similarity (1 - edit distance / length) between a candidate block and `want`. */
function middleSimilarity(have: string[], first: number, blockLength: number, want: string[]): number {
  const compared = Math.min(want.length - 2, blockLength - 2);
  if (compared <= 0) return 1;
  let total = 0;
  for (let k = 1; k < want.length - 1 && k < blockLength - 1; k++) {
    const a = have[first + k]!.trim();
    const b = want[k]!.trim();
    const longest = Math.max(a.length, b.length);
    if (longest > 0) total += 1 - levenshtein(a, b) / longest;
  }
  return total / compared;
}

function* blockAnchors(content: string, find: string) {
  const want = dropTrailingEmpty(lines(find));
  if (lines(find).length < 3) return;
  const have = lines(content);
  const [top, bottom] = [want[0]!.trim(), want.at(-1)!.trim()];
  const slack = Math.max(1, Math.floor(want.length * 0.25));
  const blocks: Array<[number, number]> = [];
  for (let i = 0; i < have.length; i++) {
    if (have[i]!.trim() !== top) continue;
    for (let j = i + 2; j < have.length; j++) {
      if (have[j]!.trim() !== bottom) continue;
      if (Math.abs(j - i + 1 - want.length) <= slack) blocks.push([i, j]);
      break;
    }
  }
  let best: [number, number] | null = null;
  let bestScore = -1;
  for (const [i, j] of blocks) {
    const score = middleSimilarity(have, i, j - i + 1, want);
    if (score > bestScore) [best, bestScore] = [[i, j], score];
  }
  if (best && bestScore >= 0.65) yield span(have, best[0], best[1]);
}

function* collapsedWhitespace(content: string, find: string) {
  const collapse = (text: string) => text.replace(/\s+/g, " ").trim();
  const want = collapse(find);
  const have = lines(content);
  for (const line of have) {
    if (collapse(line) === want) yield line;
    else if (collapse(line).includes(want)) {
      const words = find.trim().split(/\s+/).map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
      const found = new RegExp(words.join("\\s+")).exec(line);
      if (found) yield found[0];
    }
  }
  const count = lines(find).length;
  if (count > 1) for (let i = 0; i + count <= have.length; i++) if (collapse(span(have, i, i + count - 1)) === want) yield span(have, i, i + count - 1);
}

function* shiftedIndentation(content: string, find: string) {
  const dedent = (text: string) => {
    const all = lines(text);
    const filled = all.filter((line) => line.trim().length > 0);
    if (filled.length === 0) return text;
    const indent = Math.min(...filled.map((line) => /^(\s*)/.exec(line)![1]!.length));
    return all.map((line) => (line.trim().length === 0 ? line : line.slice(indent))).join("\n");
  };
  const want = dedent(find);
  const have = lines(content);
  const count = lines(find).length;
  for (let i = 0; i + count <= have.length; i++) if (dedent(span(have, i, i + count - 1)) === want) yield span(have, i, i + count - 1);
}

const UNESCAPES: Record<string, string> = { n: "\n", t: "\t", r: "\r", "'": "'", '"': '"', "`": "`", "\\": "\\", "\n": "\n", $: "$" };
const unescape = (text: string) => text.replace(/\\(n|t|r|'|"|`|\\|\n|\$)/g, (_, char: string) => UNESCAPES[char]!);

function* unescaped(content: string, find: string) {
  const want = unescape(find);
  if (content.includes(want)) yield want;
  const have = lines(content);
  const count = lines(want).length;
  for (let i = 0; i + count <= have.length; i++) if (unescape(span(have, i, i + count - 1)) === want) yield span(have, i, i + count - 1);
}

function* trimmedEnds(content: string, find: string) {
  const want = find.trim();
  if (want === find) return;
  if (content.includes(want)) yield want;
  const have = lines(content);
  const count = lines(find).length;
  for (let i = 0; i + count <= have.length; i++) if (span(have, i, i + count - 1).trim() === want) yield span(have, i, i + count - 1);
}

function* contextBlock(content: string, find: string) {
  const want = dropTrailingEmpty(lines(find));
  if (lines(find).length < 3) return;
  const have = lines(content);
  const [top, bottom] = [want[0]!.trim(), want.at(-1)!.trim()];
  for (let i = 0; i < have.length; i++) {
    if (have[i]!.trim() !== top) continue;
    for (let j = i + 2; j < have.length; j++) {
      if (have[j]!.trim() !== bottom) continue;
      if (j - i + 1 === want.length) {
        let compared = 0;
        let same = 0;
        for (let k = 1; k < want.length - 1; k++) {
          const [a, b] = [have[i + k]!.trim(), want[k]!.trim()];
          if (a.length > 0 || b.length > 0) {
            compared++;
            if (a === b) same++;
          }
        }
        if (compared === 0 || same / compared >= 0.5) {
          yield span(have, i, j);
          break;
        }
      }
      break;
    }
  }
}

function* everyOccurrence(content: string, find: string) {
  for (let at = content.indexOf(find); at >= 0; at = content.indexOf(find, at + find.length)) yield find;
}

const STRATEGIES: Candidates[] = [exact, trimmedLines, blockAnchors, collapsedWhitespace, shiftedIndentation, unescaped, trimmedEnds, contextBlock, everyOccurrence];

/** A loose match spanning far more than oldString would replace text the model never saw. */
function spansTooMuch(match: string, find: string): boolean {
  const findLines = lines(find).length;
  if (lines(match).length >= Math.max(findLines + 3, findLines * 2)) return true;
  if (findLines === 1) return false;
  return match.trim().length > Math.max(find.trim().length + 500, find.trim().length * 4);
}

export function replaceText(content: string, oldString: string, newString: string, replaceAll = false): string {
  if (oldString === newString) throw new Error("No changes to apply: oldString and newString are identical.");
  if (oldString === "") throw new Error("oldString cannot be empty when editing an existing file. Provide the exact text to replace, or use write for an intentional full-file replacement.");
  let found = false;
  for (const strategy of STRATEGIES) {
    for (const candidate of strategy(content, oldString)) {
      const at = content.indexOf(candidate);
      if (at < 0) continue;
      found = true;
      if (spansTooMuch(candidate, oldString)) {
        throw new Error("Refusing replacement because the matched span is much larger than oldString. Re-read the file and provide the full exact oldString for the intended replacement.");
      }
      if (replaceAll) return content.split(candidate).join(newString);
      if (at !== content.lastIndexOf(candidate)) continue;
      return content.slice(0, at) + newString + content.slice(at + candidate.length);
    }
  }
  if (!found) throw new Error("Could not find oldString in the file. It must match exactly, including whitespace, indentation, and line endings.");
  throw new Error("Found multiple matches for oldString. Provide more surrounding context to make the match unique.");
}
