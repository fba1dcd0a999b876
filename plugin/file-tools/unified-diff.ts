// Unified diffs in the shape OpenCode puts in edit metadata and permission prompts ("Index:" header,
// 4 lines of context, "\ No newline at end of file"), with the common indentation trimmed for display,
// and the added/removed line counts. A line diff (Myers) over the lines between common ends.
type Op = { kind: " " | "-" | "+"; line: string };

/** Lines with their "\n" kept, so a last line without one differs from the same line with one. */
function splitKeep(text: string): string[] {
  return text === "" ? [] : text.split(/(?<=\n)/);
}

const allReplaced = (a: string[], b: string[]): Op[] => [...a.map((line): Op => ({ kind: "-", line })), ...b.map((line): Op => ({ kind: "+", line }))];
/** Past this many differing lines the diff is shown as "all removed, all added" (it is only a display). */
const MAX_EDIT_DISTANCE = 2_000;

/** The shortest edit script between a and b (Myers), keeping only the diagonals each step can reach. */
function myers(a: string[], b: string[]): Op[] {
  const max = a.length + b.length;
  if (max === 0) return [];
  const width = 2 * max + 2;
  const v = new Int32Array(width);
  const at = (k: number) => k + max;
  // trace[d] holds v for diagonals -d-1 … d+1 as they were before step d.
  const trace: Int32Array[] = [];
  let steps = -1;
  search: for (let d = 0; d <= Math.min(max, MAX_EDIT_DISTANCE); d++) {
    trace.push(v.slice(Math.max(0, at(-d - 1)), Math.min(width, at(d + 1) + 1)));
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[at(k - 1)]! < v[at(k + 1)]!) ? v[at(k + 1)]! : v[at(k - 1)]! + 1;
      let y = x - k;
      while (x < a.length && y < b.length && a[x] === b[y]) [x, y] = [x + 1, y + 1];
      v[at(k)] = x;
      if (x >= a.length && y >= b.length) {
        steps = d;
        break search;
      }
    }
  }
  if (steps < 0) return allReplaced(a, b);
  const ops: Op[] = [];
  let [x, y] = [a.length, b.length];
  for (let d = steps; d >= 0; d--) {
    const saved = trace[d]!;
    const get = (k: number) => saved[at(k) - Math.max(0, at(-d - 1))]!;
    const k = x - y;
    const prevK = k === -d || (k !== d && get(k - 1) < get(k + 1)) ? k + 1 : k - 1;
    const prevX = d === 0 ? 0 : get(prevK);
    const prevY = d === 0 ? 0 : prevX - prevK;
    while (x > prevX && y > prevY) {
      x--;
      y--;
      ops.push({ kind: " ", line: a[x]! });
    }
    if (d === 0) break;
    if (x === prevX) ops.push({ kind: "+", line: b[--y]! });
    else ops.push({ kind: "-", line: a[--x]! });
  }
  return ops.reverse();
}

function lineOps(before: string, after: string): Op[] {
  const a = splitKeep(before);
  const b = splitKeep(after);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let end = 0;
  while (end < a.length - start && end < b.length - start && a[a.length - 1 - end] === b[b.length - 1 - end]) end++;
  const middle = myers(a.slice(start, a.length - end), b.slice(start, b.length - end));
  return [...a.slice(0, start).map((line): Op => ({ kind: " ", line })), ...middle, ...a.slice(a.length - end).map((line): Op => ({ kind: " ", line }))];
}

/** Lines added and removed, as OpenCode reports them next to a diff. */
export function countChanges(before: string, after: string): { additions: number; deletions: number } {
  const ops = lineOps(before, after);
  return { additions: ops.filter((op) => op.kind === "+").length, deletions: ops.filter((op) => op.kind === "-").length };
}

const CONTEXT = 4;

function hunks(ops: Op[]): string[] {
  const changed = ops.flatMap((op, index) => (op.kind === " " ? [] : [index]));
  const out: string[] = [];
  let cursor = 0;
  while (cursor < changed.length) {
    let last = cursor;
    while (last + 1 < changed.length && changed[last + 1]! - changed[last]! <= 2 * CONTEXT + 1) last++;
    const from = Math.max(0, changed[cursor]! - CONTEXT);
    const to = Math.min(ops.length - 1, changed[last]! + CONTEXT);
    const before = ops.slice(0, from);
    const oldStart = before.filter((op) => op.kind !== "+").length + 1;
    const newStart = before.filter((op) => op.kind !== "-").length + 1;
    const body = ops.slice(from, to + 1);
    const oldLines = body.filter((op) => op.kind !== "+").length;
    const newLines = body.filter((op) => op.kind !== "-").length;
    out.push(`@@ -${oldLines === 0 ? oldStart - 1 : oldStart},${oldLines} +${newLines === 0 ? newStart - 1 : newStart},${newLines} @@`);
    for (const op of body) {
      out.push(op.kind + op.line.replace(/\n$/, ""));
      if (!op.line.endsWith("\n")) out.push("\\ No newline at end of file");
    }
    cursor = last + 1;
  }
  return out;
}

/** The common indentation of changed and context lines removed, as OpenCode shows diffs. */
function trimIndent(diff: string): string {
  const all = diff.split("\n");
  const body = (line: string) => /^[+\- ]/.test(line) && !line.startsWith("---") && !line.startsWith("+++");
  let indent = Infinity;
  for (const line of all.filter(body)) if (line.slice(1).trim().length > 0) indent = Math.min(indent, /^(\s*)/.exec(line.slice(1))![1]!.length);
  if (indent === Infinity || indent === 0) return diff;
  return all.map((line) => (body(line) ? line[0] + line.slice(1).slice(indent) : line)).join("\n");
}

/** `Index: <path>` … `@@ … @@` hunks, for a file going from `before` to `after`. */
export function unifiedDiff(path: string, before: string, after: string): string {
  const header = [`Index: ${path}`, "=".repeat(67), `--- ${path}`, `+++ ${path}`];
  return trimIndent([...header, ...hunks(lineOps(before, after))].join("\n") + "\n");
}
