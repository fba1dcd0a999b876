// The relative imports a TypeScript file makes, read from its text, and the file each names: shared by the
// test runner (which tests need the machine, scripts/test-kinds.ts), the import rules test and the SDK's
// declaration build. Bare package specifiers are not followed.
import { statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

export type ModuleImport = { specifier: string; typeOnly: boolean; statement: string };

const IMPORT = /^\s*(import|export)\s+(type\s+)?(?:[^"';]*?\s+from\s+)?["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/gm;

/** Every import, export-from and literal `import("…")` of the text; `typeOnly` for `import type` and `export type`. */
export function importsIn(text: string): ModuleImport[] {
  return [...text.matchAll(IMPORT)].map((match) => ({ specifier: (match[3] ?? match[4])!, typeOnly: match[2] !== undefined, statement: match[0].trim() }));
}

/** The file a relative specifier of `fromFile` names (as written, `.ts`, `.tsx`, `.d.ts` or `index.ts`); undefined for a package or a missing file. */
export function resolveRelative(fromFile: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) return undefined;
  const base = resolve(dirname(fromFile), specifier);
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, `${base}.d.ts`, join(base, "index.ts")]) {
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not this one
    }
  }
  return undefined;
}
