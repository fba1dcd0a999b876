// Which test files are unit and module tests and which need the machine: a file is a "vm" test when it,
// or a test helper it imports (followed through test/), boots a VM or starts a manager process, OpenCode,
// a browser, a package registry, the real msb, or a host account (or carries a `// test-kind: vm` line).
// Everything else runs in-process on temp dirs and SQLite files, and `bun run test:unit` runs only those.
import { readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { importsIn, resolveRelative } from "./module-imports";

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
      importsIn(text).some(({ specifier }) => {
        const helper = resolveRelative(file, specifier);
        // Followed through test helpers only: the code under test boots nothing by being imported.
        return helper !== undefined && !relative(join(root, "test"), helper).startsWith("..") && needsTheMachine(helper);
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
