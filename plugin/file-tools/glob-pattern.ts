// Glob patterns as ripgrep's `--glob` reads them (gitignore style), turned into a POSIX extended regex
// over paths relative to the search directory: a pattern without "/" matches a file name at any depth,
// one with "/" is anchored; `*` and `?` stay within a path component, `**` crosses them; `[…]`, `{a,b}`
// and a leading `!` (exclude) work as in ripgrep.
const ERE_SPECIAL = new Set([..."\\^$.|?*+()[]{}"]);
const literal = (char: string) => (ERE_SPECIAL.has(char) ? `\\${char}` : char);

/** The index just past a bracket expression starting at `start` ("["), or -1 if it never closes. */
function bracketEnd(pattern: string, start: number): number {
  let at = start + 1;
  if (pattern[at] === "!" || pattern[at] === "^") at++;
  if (pattern[at] === "]") at++;
  while (at < pattern.length && pattern[at] !== "]") at++;
  return at < pattern.length ? at + 1 : -1;
}

function bracket(body: string): string {
  const negated = body.startsWith("!") || body.startsWith("^");
  const members = (negated ? body.slice(1) : body).replaceAll("\\", "");
  // "/" never matches inside a component; a "]" first is literal, as in POSIX.
  if (!negated) return `[${members}]`;
  return members.startsWith("]") ? `[^]/${members.slice(1)}]` : `[^/${members}]`;
}

function translate(pattern: string): string {
  let out = "";
  for (let at = 0; at < pattern.length; at++) {
    const char = pattern[at]!;
    if (char === "*" && pattern[at + 1] === "*") {
      const atStart = at === 0 || pattern[at - 1] === "/";
      const next = pattern[at + 2];
      if (atStart && next === "/") {
        out += "(.*/)?";
        at += 2;
      } else if (atStart && next === undefined) {
        out += ".*";
        at += 1;
      } else {
        out += "[^/]*";
        at += 1;
      }
    } else if (char === "*") out += "[^/]*";
    else if (char === "?") out += "[^/]";
    else if (char === "[") {
      const end = bracketEnd(pattern, at);
      if (end < 0) out += "\\[";
      else {
        out += bracket(pattern.slice(at + 1, end - 1));
        at = end - 1;
      }
    } else if (char === "{") {
      const end = pattern.indexOf("}", at);
      if (end < 0) out += "\\{";
      else {
        out += `(${pattern.slice(at + 1, end).split(",").map(translate).join("|")})`;
        at = end;
      }
    } else if (char === "\\" && at + 1 < pattern.length) out += literal(pattern[++at]!);
    else out += literal(char);
  }
  return out;
}

/** The extended regex for a glob, and whether it excludes (a leading "!"). */
export function globToRegex(glob: string): { regex: string; invert: boolean } {
  let pattern = glob;
  const invert = pattern.startsWith("!");
  if (invert) pattern = pattern.slice(1);
  if (pattern.endsWith("/")) pattern += "**"; // a directory: everything under it
  const anchored = pattern.slice(0, -1).includes("/") || pattern.startsWith("/");
  pattern = pattern.replace(/^\/+/, "");
  return { regex: `${anchored ? "^" : "(^|/)"}${translate(pattern)}$`, invert };
}
