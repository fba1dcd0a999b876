// The code's shape, read from its own import statements: which top-level folder may import which, no
// import cycle between folders or between files, and the isolation tiers' runtimes named only where the
// tiers are built. A change that breaks one fails here with the import that did.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { importsIn, resolveRelative } from "../../scripts/module-imports";

const ROOT = join(import.meta.dir, "../..");
const FOLDERS = ["app", "runtime", "workers", "egress", "sdk", "plugin", "cli", "scripts", "bench"] as const;

type Import = { from: string; to: string; typeOnly: boolean; line: string };

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name.startsWith(".")) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (/\.(ts|tsx)$/.test(name) && !name.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

function importsOf(file: string): Import[] {
  return importsIn(readFileSync(file, "utf8")).flatMap(({ specifier, typeOnly, statement }) => {
    if (!specifier.startsWith(".")) return [];
    // A specifier that names no file still counts, for the folder it points into.
    const to = resolveRelative(file, specifier) ?? resolve(dirname(file), specifier);
    return [{ from: relative(ROOT, file), to: relative(ROOT, to), typeOnly, line: statement }];
  });
}

const folderOf = (path: string) => path.split("/")[0]!;
const existing = FOLDERS.filter((folder) => {
  try {
    return statSync(join(ROOT, folder)).isDirectory();
  } catch {
    return false;
  }
});
const files = existing.flatMap((folder) => sourceFiles(join(ROOT, folder)));
const imports = files.flatMap(importsOf);

/** Imports that leave `folder` for one of `forbidden` (type-only ones too, unless `typesAllowed`). */
function crossings(folder: string, forbidden: string[], typesAllowed: string[] = []): string[] {
  return imports
    .filter((edge) => folderOf(edge.from) === folder && forbidden.includes(folderOf(edge.to)))
    .filter((edge) => !(edge.typeOnly && typesAllowed.includes(folderOf(edge.to))))
    .map((edge) => `${edge.from}: ${edge.line}`);
}

/** Every cycle's members (strongly connected components of more than one node), by Tarjan's algorithm. */
function cycles(edges: Array<[string, string]>): string[][] {
  const next = new Map<string, string[]>();
  for (const [a, b] of edges) if (a !== b) next.set(a, [...(next.get(a) ?? []), b]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let counter = 0;
  const visit = (node: string) => {
    index.set(node, counter);
    low.set(node, counter++);
    stack.push(node);
    onStack.add(node);
    for (const to of next.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node)!, index.get(to)!));
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const node of new Set(edges.flat())) if (!index.has(node)) visit(node);
  return found;
}

describe("import rules", () => {
  test("the files were read: every top-level code folder, hundreds of imports", () => {
    expect(existing).toEqual(expect.arrayContaining(["app", "runtime", "workers", "egress", "sdk", "plugin"]));
    expect(imports.length).toBeGreaterThan(500);
  });

  test("egress/ (the proxy and its policy) imports nothing from the manager, the runtimes, the actors, the SDK or the plugin", () => {
    expect(crossings("egress", ["app", "runtime", "workers", "sdk", "plugin", "cli", "scripts"])).toEqual([]);
  });

  test("sdk/ imports nothing from the manager but types, and nothing from the runtimes, the actors, egress or the plugin", () => {
    expect(crossings("sdk", ["app", "runtime", "workers", "egress", "plugin", "cli", "scripts"], ["app"])).toEqual([]);
  });

  test("runtime/ imports only runtime/ and egress/ (its network grammar)", () => {
    expect(crossings("runtime", ["app", "workers", "sdk", "plugin", "cli", "scripts"])).toEqual([]);
  });

  test("workers/ (the actors) import no part of the manager's app, the SDK or the plugin", () => {
    expect(crossings("workers", ["app", "sdk", "plugin", "cli", "scripts"])).toEqual([]);
  });

  test("plugin/ talks to the manager only through sdk/", () => {
    expect(crossings("plugin", ["app", "runtime", "workers", "egress", "cli", "scripts"])).toEqual([]);
  });

  test("no import cycle between top-level folders (sdk/'s type-only imports of the server's routes aside)", () => {
    const edges = imports
      .filter((edge) => !(edge.typeOnly && folderOf(edge.from) === "sdk" && folderOf(edge.to) === "app"))
      .map((edge): [string, string] => [folderOf(edge.from), folderOf(edge.to)]);
    expect(cycles(edges)).toEqual([]);
  });

  test("no import cycle between files, type-only imports included", () => {
    expect(cycles(imports.map((edge): [string, string] => [edge.from, edge.to]))).toEqual([]);
  });

  test("app/ names no tier's runtime (msb, runsc, crun) outside app/runtime-setup.ts, where the tiers are built", () => {
    const naming = files
      .filter((file) => relative(ROOT, file).startsWith("app/") && relative(ROOT, file) !== "app/runtime-setup.ts")
      .flatMap((file) =>
        readFileSync(file, "utf8")
          .split("\n")
          .flatMap((line, at) => (/\b(msb|runsc|crun)\b/.test(line) ? [`${relative(ROOT, file)}:${at + 1}: ${line.trim()}`] : [])),
      );
    expect(naming).toEqual([]);
  });
});
