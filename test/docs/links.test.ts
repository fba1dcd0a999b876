// The documentation's own links: every relative link and image in the README, docs/ and the folders'
// READMEs names a file of the repository, and every #anchor a heading of that file (as GitHub makes
// anchors from headings), so text moved between files never leaves a link behind.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { ROOT } from "../e2e/fixture";

const FILES = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
  "egress/README.md",
  "plugin/README.md",
  "workers/README.md",
];

/** Markdown without its fenced code blocks and inline code, where brackets are not links. */
function prose(markdown: string): string {
  return markdown.replace(/^( *)```[\s\S]*?^\1```/gm, "").replace(/`[^`\n]*`/g, "");
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const match of markdown.replace(/^( *)```[\s\S]*?^\1```/gm, "").matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const text = match[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, "$1");
    const slug = text.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/ /g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** The relative link targets of a file: `[text](target)` and `![alt](target)`, without external URLs. */
function links(markdown: string): string[] {
  return [...prose(markdown).matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((target) => !/^[a-z]+:/i.test(target));
}

describe("anchorsOf", () => {
  test("headings → GitHub's anchors: punctuation and backticks dropped, repeats numbered", () => {
    const anchors = anchorsOf("# Network, secrets and git credentials\n## `local`, the embedded runtime\n## Tests\n## Tests\n```\n# not a heading\n```\n");
    expect([...anchors]).toEqual(["network-secrets-and-git-credentials", "local-the-embedded-runtime", "tests", "tests-1"]);
  });
});

describe("documentation links", () => {
  for (const file of FILES) {
    test(`${file} → every relative link and anchor resolves`, () => {
      const markdown = readFileSync(join(ROOT, file), "utf8");
      const broken: string[] = [];
      for (const target of links(markdown)) {
        const [path = "", anchor] = target.split("#");
        const resolved = path === "" ? join(ROOT, file) : join(ROOT, dirname(file), decodeURIComponent(path));
        if (!resolved.startsWith(`${ROOT}/`) || !existsSync(resolved)) {
          broken.push(`${target}: no such file ${relative(ROOT, resolved)}`);
          continue;
        }
        if (anchor !== undefined && resolved.endsWith(".md") && statSync(resolved).isFile() && !anchorsOf(readFileSync(resolved, "utf8")).has(anchor)) {
          broken.push(`${target}: no heading with anchor #${anchor} in ${relative(ROOT, resolved)}`);
        }
      }
      expect(broken).toEqual([]);
    });
  }

  test("the README links to every page of docs/ and to nothing outside the repository", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const linked = new Set(links(readme).map((target) => target.split("#")[0]));
    const pages = FILES.filter((file) => file.startsWith("docs/"));
    expect(pages.filter((page) => !linked.has(page))).toEqual([]);
    expect(readme).not.toContain("../");
  });
});
