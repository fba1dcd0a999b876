// apply_patch's patch language as OpenCode 1.18.33 reads it ("*** Begin Patch" … "*** End Patch" with
// Add / Delete / Update (+ Move to) file sections and "@@" chunks), and how an update chunk list turns
// old contents into new ones (exact lines first, then ignoring trailing space, all space, typography).
export type Chunk = { oldLines: string[]; newLines: string[]; context?: string; endOfFile?: boolean };
export type Hunk = { type: "add"; path: string; contents: string } | { type: "delete"; path: string } | { type: "update"; path: string; movePath?: string; chunks: Chunk[] };

function header(lines: string[], at: number): { path: string; movePath?: string; next: number } | null {
  const line = lines[at]!;
  for (const prefix of ["*** Add File:", "*** Delete File:"]) {
    if (line.startsWith(prefix)) {
      const path = line.slice(prefix.length).trim();
      return path ? { path, next: at + 1 } : null;
    }
  }
  if (!line.startsWith("*** Update File:")) return null;
  const path = line.slice("*** Update File:".length).trim();
  let next = at + 1;
  let movePath: string | undefined;
  if (lines[next]?.startsWith("*** Move to:")) movePath = lines[next++]!.slice("*** Move to:".length).trim();
  return path ? { path, movePath, next } : null;
}

function addedContents(lines: string[], at: number): { contents: string; next: number } {
  let contents = "";
  while (at < lines.length && !lines[at]!.startsWith("***")) {
    if (lines[at]!.startsWith("+")) contents += `${lines[at]!.slice(1)}\n`;
    at++;
  }
  return { contents: contents.endsWith("\n") ? contents.slice(0, -1) : contents, next: at };
}

function updateChunks(lines: string[], at: number): { chunks: Chunk[]; next: number } {
  const chunks: Chunk[] = [];
  while (at < lines.length && !lines[at]!.startsWith("***")) {
    if (!lines[at]!.startsWith("@@")) {
      at++;
      continue;
    }
    const context = lines[at++]!.slice(2).trim() || undefined;
    const chunk: Chunk = { oldLines: [], newLines: [], context };
    while (at < lines.length && !lines[at]!.startsWith("@@") && !lines[at]!.startsWith("***")) {
      const line = lines[at++]!;
      if (line === "*** End of File") {
        chunk.endOfFile = true;
        break;
      }
      if (line.startsWith(" ")) chunk.oldLines.push(line.slice(1)), chunk.newLines.push(line.slice(1));
      else if (line.startsWith("-")) chunk.oldLines.push(line.slice(1));
      else if (line.startsWith("+")) chunk.newLines.push(line.slice(1));
    }
    chunks.push(chunk);
  }
  return { chunks, next: at };
}

/** A heredoc wrapper (`cat <<'EOF' … EOF`) around the patch is accepted and removed. */
function unwrapHeredoc(text: string): string {
  return /^(?:cat\s+)?<<['"]?(\w+)['"]?\s*\n([\s\S]*?)\n\1\s*$/.exec(text)?.[2] ?? text;
}

export function parsePatch(text: string): Hunk[] {
  const lines = unwrapHeredoc(text.trim()).split("\n");
  const begin = lines.findIndex((line) => line.trim() === "*** Begin Patch");
  const end = lines.findIndex((line) => line.trim() === "*** End Patch");
  if (begin === -1 || end === -1 || begin >= end) throw new Error("Invalid patch format: missing Begin/End markers");
  const hunks: Hunk[] = [];
  let at = begin + 1;
  while (at < end) {
    const found = header(lines, at);
    if (!found) {
      at++;
      continue;
    }
    const line = lines[at]!;
    if (line.startsWith("*** Add File:")) {
      const { contents, next } = addedContents(lines, found.next);
      hunks.push({ type: "add", path: found.path, contents });
      at = next;
    } else if (line.startsWith("*** Delete File:")) {
      hunks.push({ type: "delete", path: found.path });
      at = found.next;
    } else {
      const { chunks, next } = updateChunks(lines, found.next);
      hunks.push({ type: "update", path: found.path, movePath: found.movePath, chunks });
      at = next;
    }
  }
  return hunks;
}

const typographic = (text: string) =>
  text
    .replace(/[\u2018\u2019\u201A\u201B]/g, "'")
    .replace(/[\u201C\u201D\u201E\u201F]/g, '"')
    .replace(/[\u2010\u2011\u2012\u2013\u2014\u2015]/g, "-")
    .replace(/\u2026/g, "...")
    .replace(/\u00A0/g, " ");

function findWith(lines: string[], want: string[], from: number, endOfFile: boolean, same: (a: string, b: string) => boolean): number {
  const matchesAt = (at: number) => want.every((line, k) => same(lines[at + k]!, line));
  if (endOfFile) {
    const at = lines.length - want.length;
    if (at >= from && matchesAt(at)) return at;
  }
  for (let at = from; at <= lines.length - want.length; at++) if (matchesAt(at)) return at;
  return -1;
}

function findLines(lines: string[], want: string[], from: number, endOfFile = false): number {
  if (want.length === 0) return -1;
  const comparisons = [(a: string, b: string) => a === b, (a: string, b: string) => a.trimEnd() === b.trimEnd(), (a: string, b: string) => a.trim() === b.trim(), (a: string, b: string) => typographic(a.trim()) === typographic(b.trim())];
  for (const same of comparisons) {
    const at = findWith(lines, want, from, endOfFile, same);
    if (at !== -1) return at;
  }
  return -1;
}

/** The new text of a file (BOM already removed) after an update's chunks; throws OpenCode's errors. */
export function applyChunks(path: string, text: string, chunks: Chunk[]): string {
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  const replacements: Array<[number, number, string[]]> = [];
  let from = 0;
  for (const chunk of chunks) {
    if (chunk.context) {
      const at = findLines(lines, [chunk.context], from);
      if (at === -1) throw new Error(`Failed to find context '${chunk.context}' in ${path}`);
      from = at + 1;
    }
    if (chunk.oldLines.length === 0) {
      replacements.push([lines.at(-1) === "" ? lines.length - 1 : lines.length, 0, chunk.newLines]);
      continue;
    }
    let [oldLines, newLines] = [chunk.oldLines, chunk.newLines];
    let at = findLines(lines, oldLines, from, chunk.endOfFile);
    if (at === -1 && oldLines.at(-1) === "") {
      oldLines = oldLines.slice(0, -1);
      if (newLines.at(-1) === "") newLines = newLines.slice(0, -1);
      at = findLines(lines, oldLines, from, chunk.endOfFile);
    }
    if (at === -1) throw new Error(`Failed to find expected lines in ${path}:\n${chunk.oldLines.join("\n")}`);
    replacements.push([at, oldLines.length, newLines]);
    from = at + oldLines.length;
  }
  replacements.sort((a, b) => a[0] - b[0]);
  const result = [...lines];
  for (const [at, remove, insert] of replacements.reverse()) result.splice(at, remove, ...insert);
  if (result.length === 0 || result.at(-1) !== "") result.push("");
  return result.join("\n");
}
