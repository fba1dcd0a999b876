// One COPY of a Dockerfile build, planned on the host and done in the build VM. The host expands the
// sources' wildcards and walks what each takes, leaving out what .dockerignore excludes (build-context.ts:
// no symlink followed, nothing opened), and writes each directory's list of entries into the build's tools
// directory (mounted read-only in the VM). The VM then copies exactly those entries with the mounted static
// busybox (tar without recursion, so a left-out file inside a copied directory stays out), keeping modes and
// symlinks; what it creates is root's unless --chown says otherwise, as in Docker. Docker's placement rules: a directory's contents go into the destination; a file goes
// to the destination, or into it when it is a directory, ends in `/`, or there are several sources; ADD
// unpacks a file that is a tar archive (plain, gzip, bzip2 or xz, told by its content) into the destination.
import { lstatSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { hasWildcard, type BuildStep, type StepSource } from "./dockerfile";
import { resolveInRoot } from "../../runtime/local/rootfs";
import { linkedParentOf, walkContext, WHOLE_CONTEXT, type ContextFilter } from "./build-context";
import { stepFailure } from "./build-error";

type CopyStep = Extract<BuildStep, { kind: "copy" }>;

/** One shell word, whatever `value` holds: single-quoted, each `'` written as `'\\''`. */
export const shellQuote = (value: string) => `'${value.replaceAll("'", "'\\''")}'`;
const quote = shellQuote;

function refuse(source: StepSource, reason: string): never {
  throw stepFailure(source, reason);
}

/**
 * The context paths a source names: itself, or what its wildcards match, one path part at a time
 * (`src/*.ts` lists `src` only), never through a symlinked directory and never what the filter leaves out.
 */
function expand(contextDir: string, source: string, filter: ContextFilter): string[] {
  const parts = source === "." ? ["."] : source.split("/");
  let matched = [""];
  for (const part of parts) {
    const next: string[] = [];
    for (const base of matched) {
      const join_ = (name: string) => (base === "" ? name : `${base}/${name}`);
      if (!hasWildcard(part)) {
        next.push(part === "." ? "." : join_(part));
        continue;
      }
      const dir = join(contextDir, base || ".");
      if (!lstatSync(dir, { throwIfNoEntry: false })?.isDirectory()) continue;
      const glob = new Bun.Glob(part);
      for (const name of readdirSync(dir).sort()) if (glob.match(name) && !filter.excludes(join_(name))) next.push(join_(name));
    }
    matched = next;
  }
  return matched;
}

/** The entries under directory `path` that the filter keeps, relative to it, parents first. */
function entriesUnder(contextDir: string, path: string, filter: ContextFilter): string[] {
  const entries: string[] = [];
  const prefix = path === "." ? "" : `${path}/`;
  walkContext(contextDir, [path], filter, (relative, _absolute, stats) => {
    if (stats && relative !== path) entries.push(relative.slice(prefix.length));
  }, () => {});
  return entries;
}

/**
 * A COPY --from's sources with their symlinks resolved inside that image, as BuildKit follows them
 * (`/bin/sh` of a merged-/usr image is `/usr/bin/dash`); a wildcard source is left to the wildcard's match.
 */
export function withSymlinksResolved(step: CopyStep, root: string): CopyStep {
  return { ...step, sources: step.sources.map((source) => (hasWildcard(source) ? source : resolveInRoot(root, source)?.path.slice(1) || source)) };
}

/**
 * ADD's test of the file "$f": a tar archive, by its first bytes (busybox tar does not guess a compression),
 * is unpacked into dest; the lines open an `if` whose `else` copies it as a file.
 */
const ARCHIVE_LINES = (bb: string, dest: string) => [
  `magic=$(${bb} head -c 6 "$f" | ${bb} od -An -tx1 | ${bb} tr -d ' \\n')`,
  `case $magic in 1f8b*) z=-z ;; 425a68*) z=-j ;; fd377a585a00) z=-J ;; *) z= ;; esac`,
  `if ${bb} tar $z -tf "$f" >/dev/null 2>&1; then`,
  `  ${bb} mkdir -p ${dest} && ${bb} tar $z -xf "$f" --numeric-owner -C ${dest}`,
];

/**
 * The guest script of a COPY step; its directories' entry lists are written into `toolsDir` (as
 * `copy-<index>-<n>.list`). Throws ImageBuildError (with the line) for a source that is not in the context.
 */
export function copyScript(step: CopyStep, index: number, build: { contextDir: string; filter: ContextFilter; toolsDir: string; busybox: string }): string {
  const { contextDir, filter, toolsDir } = build;
  const bb = quote(build.busybox);
  const dest = quote(step.dest);
  const intoDir = step.dest.endsWith("/") || step.sources.length > 1 || step.sources.some(hasWildcard);
  const lines = ["set -e", intoDir ? `${bb} mkdir -p ${dest}` : `${bb} mkdir -p ${quote(dirname(step.dest))}`];
  const apply = (target: string) => [step.chown ? `${bb} chown -R ${quote(step.chown)} ${target}` : "", step.chmod ? `${bb} chmod -R ${quote(step.chmod)} ${target}` : ""].filter(Boolean);
  let lists = 0;
  for (const source of step.sources) {
    const matches = expand(contextDir, source, filter);
    if (matches.length === 0) refuse(step.source, `COPY ${source} matches no file of the build context${filter === WHOLE_CONTEXT ? "" : " (or .dockerignore leaves them out)"}`);
    for (const path of matches) {
      // Its parents must be directories, not symlinks: through one, nothing is copied.
      const stats = linkedParentOf(contextDir, path) !== undefined || filter.excludes(path) ? undefined : lstatSync(join(contextDir, path), { throwIfNoEntry: false });
      if (!stats) refuse(step.source, `COPY source ${path} is not in the build context, or .dockerignore leaves it out`);
      const from = quote(join(contextDir, path));
      if (stats.isDirectory()) {
        const list = join(toolsDir, `copy-${index}-${++lists}.list`);
        // "./" before each name: none then reads as a tar option; NUL-separated: any name is one entry.
        writeFileSync(list, entriesUnder(contextDir, path, filter).map((entry) => `./${entry}\0`).join(""), { mode: 0o644 });
        lines.push(`${bb} mkdir -p ${dest}`, `cd ${from}`);
        // -o: extracted as root's, not the source's owner (the repository's, another stage's users).
        lines.push(`BB=${bb} DEST=${dest} ${bb} xargs -0 -r ${bb} sh -c 'set -e -o pipefail; "$BB" tar -cf - --no-recursion "$@" | "$BB" tar -xof - -C "$DEST"' sh < ${quote(list)}`);
        lines.push(...apply(dest));
      } else if (step.extract) {
        lines.push(`f=${from}`, ...ARCHIVE_LINES(bb, dest), ...apply(dest), "else");
        const into = `${bb} cp -a "$f" ${dest}/ && t=${dest}/${quote(path.split("/").at(-1)!)}`;
        lines.push(intoDir ? `  ${into}` : `  if [ -d ${dest} ]; then ${into}; else ${bb} cp -a "$f" ${dest} && t=${dest}; fi`, `  ${bb} chown -h 0:0 "$t"`, ...apply('"$t"').map((line) => `  ${line}`), "fi");
      } else {
        const into = `${bb} cp -a ${from} ${dest}/ && t=${dest}/${quote(path.split("/").at(-1)!)}`;
        lines.push(intoDir ? into : `if [ -d ${dest} ]; then ${into}; else ${bb} cp -a ${from} ${dest} && t=${dest}; fi`);
        lines.push(`${bb} chown -h 0:0 "$t"`, ...apply('"$t"'));
      }
    }
  }
  return lines.join("\n");
}
