// Which test files are unit and module tests and which need the machine: a file is a "vm" test when it,
// or a test helper it imports (followed through test/), boots a VM or starts a manager process, OpenCode,
// a browser, a package registry, the real msb, or a host account (or carries a `// test-kind: vm` line).
// Everything else runs in-process on temp dirs and SQLite files, and `bun run test:unit` runs only those.
import { readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

export type TestKind = "unit" | "vm";
export type TestFile = { path: string; kind: TestKind; size: number };

/** The calls that put a test on the machine's runtime, servers or accounts; or a file that says so itself. */
const NEEDS_THE_MACHINE = [
  /^\/\/ test-kind: vm$/m,
  /\bprepareLocalRuntime\(/,
  /\bmakeLocalFixture\(/,
  /\bmakeGvisorFixture\(/,
  /\bstartManager\(/,
  /\bstartTestManager\(/,
  /\bstartOpencode\(/,
  /\bstartNpmRegistry\(/,
  /\bchromium\b/,
  /\buseradd\b/,
  /\brealMsb|\breal msb\b/i,
  /\bdescribeContract\(|\bdescribeEscapes\(|\bdescribeTerminal\(/,
];

const RELATIVE_IMPORT = /(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g;

function resolveInTest(root: string, from: string, specifier: string): string | undefined {
  const base = resolve(dirname(from), specifier);
  if (!relative(join(root, "test"), base).startsWith("..")) {
    for (const candidate of [base, `${base}.ts`, join(base, "index.ts")]) {
      try {
        if (statSync(candidate).isFile()) return candidate;
      } catch {
        // not this one
      }
    }
  }
  return undefined;
}

export async function classifyTestFiles(root: string): Promise<TestFile[]> {
  const heavy = new Map<string, boolean>();
  const visiting = new Set<string>();
  const needsTheMachine = (file: string): boolean => {
    const known = heavy.get(file);
    if (known !== undefined) return known;
    if (visiting.has(file)) return false; // a cycle among helpers: decided where it started
    visiting.add(file);
    const text = readFileSync(file, "utf8");
    const result =
      NEEDS_THE_MACHINE.some((pattern) => pattern.test(text)) ||
      [...text.matchAll(RELATIVE_IMPORT)].some(([, specifier]) => {
        const helper = resolveInTest(root, file, specifier!);
        return helper !== undefined && needsTheMachine(helper);
      });
    visiting.delete(file);
    heavy.set(file, result);
    return result;
  };
  const files: TestFile[] = [];
  for await (const path of new Bun.Glob("test/**/*.test.{ts,tsx}").scan({ cwd: root })) {
    const absolute = join(root, path);
    files.push({ path, kind: needsTheMachine(absolute) ? "vm" : "unit", size: statSync(absolute).size });
  }
  return files.sort((a, b) => a.path.localeCompare(b.path));
}
