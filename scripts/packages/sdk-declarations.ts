// The published SDK's .d.ts files: each module's declaration, emitted on its own (TypeScript's
// transpileDeclaration under isolatedDeclarations), starting at the entry points and following only the
// imports the declarations keep. The SDK's implementation imports the server's types (sdk/eden.ts); its
// declarations must not, so one that reaches outside sdk/ fails the build with the file that did.
import ts from "typescript-5";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { importsIn, resolveRelative } from "../module-imports";

const OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  strict: true,
  declaration: true,
  isolatedDeclarations: true,
};

/**
 * Relative specifiers with the `.js` a consumer's `moduleResolution: node16`/`nodenext` needs in an ES
 * module (TypeScript maps `./client.js` to `./client.d.ts`); the sources import without extensions.
 */
function withJsExtensions(declaration: string): string {
  return declaration.replace(/(from |import\()"(\.{1,2}\/[^"]+)"/g, (_whole, lead: string, specifier: string) => `${lead}"${specifier}.js"`);
}

/** Writes `<outDir>/<module>.d.ts` for every module the entries' declarations reach; returns their names. */
export function emitSdkDeclarations(sdkDir: string, entries: string[], outDir: string): string[] {
  const written: string[] = [];
  const queue = entries.map((entry) => resolve(sdkDir, entry));
  const seen = new Set<string>();
  while (queue.length > 0) {
    const source = queue.shift()!;
    if (seen.has(source)) continue;
    seen.add(source);
    const inside = relative(sdkDir, source);
    if (inside.startsWith("..")) throw new Error(`the SDK's declarations reach outside sdk/: ${inside}`);
    const target = join(outDir, source.endsWith(".d.ts") ? inside : inside.replace(/\.ts$/, ".d.ts"));
    mkdirSync(dirname(target), { recursive: true });
    let declaration: string;
    if (source.endsWith(".d.ts")) {
      declaration = readFileSync(source, "utf8");
      copyFileSync(source, target);
    } else {
      const result = ts.transpileDeclaration(readFileSync(source, "utf8"), { fileName: source, compilerOptions: OPTIONS, reportDiagnostics: true });
      const problems = (result.diagnostics ?? []).map((d) => `${inside}:${d.start ?? 0}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`);
      if (problems.length > 0) throw new Error(`the SDK's declarations cannot be emitted on their own:\n${problems.join("\n")}`);
      declaration = result.outputText;
      writeFileSync(target, withJsExtensions(declaration));
    }
    written.push(relative(outDir, target));
    for (const { specifier } of importsIn(declaration).filter((found) => found.specifier.startsWith("."))) {
      const found = resolveRelative(source, specifier);
      if (!found) throw new Error(`${inside} imports ${specifier}, which is not a module of sdk/`);
      queue.push(found);
    }
  }
  return written.sort();
}
