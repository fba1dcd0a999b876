// The file tools' parts that need no OpenCode: output formats (as OpenCode 1.18.33 prints them, captured
// from its built-in tools), glob patterns, edit matching, patches, diffs, read-before-write, and the
// shell scripts themselves, run by the host runner against a temp repository.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { formatMatches } from "../../plugin/file-tools/grep-tool";
import { globToRegex } from "../../plugin/file-tools/glob-pattern";
import { globFiles, grepFiles, probe, readFile, writeBytes } from "../../plugin/file-tools/jobs";
import { applyChunks, parsePatch } from "../../plugin/file-tools/patch";
import { attachableMime, formatDirectory, formatFileWindow, looksBinary, notFoundMessage } from "../../plugin/file-tools/read-format";
import { createReadStamps } from "../../plugin/file-tools/read-stamps";
import { replaceText } from "../../plugin/file-tools/replace";
import { envPrelude, hostRunner, type FileRunner } from "../../plugin/file-tools/runner";
import { countChanges, unifiedDiff } from "../../plugin/file-tools/unified-diff";
import { makeTempDir } from "../helpers";

describe("read output", () => {
  test("a whole file → numbered lines and the end-of-file notice", () => {
    expect(formatFileWindow("/p/a.txt", ["alpha", "beta", "gamma"], 3, 1, 2000).output).toBe(
      "<path>/p/a.txt</path>\n<type>file</type>\n<content>\n1: alpha\n2: beta\n3: gamma\n\n(End of file - total 3 lines)\n</content>",
    );
  });

  test("an empty file → no lines, total 0; offset 2 of it → out of range", () => {
    expect(formatFileWindow("/p/e", [], 0, 1, 2000).output).toBe("<path>/p/e</path>\n<type>file</type>\n<content>\n\n\n(End of file - total 0 lines)\n</content>");
    expect(() => formatFileWindow("/p/e", [], 0, 2, 2000)).toThrow("Offset 2 is out of range for this file (0 lines)");
    expect(() => formatFileWindow("/p/a", [], 3, 9, 2000)).toThrow("Offset 9 is out of range for this file (3 lines)");
  });

  test("a window → the showing-lines notice with the next offset", () => {
    const window = formatFileWindow("/p/a.txt", ["beta"], 3, 2, 1);
    expect(window.output).toBe("<path>/p/a.txt</path>\n<type>file</type>\n<content>\n2: beta\n\n(Showing lines 2-2 of 3. Use offset=3 to continue.)\n</content>");
    expect(window.truncated).toBe(true);
  });

  test("long lines cut at 2000 characters; output capped before 50 KB", () => {
    expect(formatFileWindow("/p/l", ["L".repeat(2500)], 1, 1, 2000).output).toContain(`1: ${"L".repeat(2000)}... (line truncated to 2000 chars)\n`);
    const lines = Array.from({ length: 1500 }, (_, i) => `${"w".repeat(60)} ${i}`);
    const capped = formatFileWindow("/p/big", lines, 1500, 1, 2000).output;
    expect(capped).toEndWith(`788: ${"w".repeat(60)} 787\n789: ${"w".repeat(60)} 788\n\n(Output capped at 50 KB. Showing lines 1-789. Use offset=790 to continue.)\n</content>`);
  });

  test("a directory → sorted entries and the count; a window → the showing-entries notice", () => {
    expect(formatDirectory("/p", ["src/", "a.txt", ".env"], 1, 2000).output).toBe("<path>/p</path>\n<type>directory</type>\n<entries>\n.env\na.txt\nsrc/\n\n(3 entries)\n</entries>");
    expect(formatDirectory("/p", ["a", "b", "c", "d"], 2, 2).output).toBe("<path>/p</path>\n<type>directory</type>\n<entries>\nb\nc\n\n(Showing 2 of 4 entries. Use 'offset' parameter to read beyond entry 4)\n</entries>");
  });

  test("not found → similar names from the same directory, at most three", () => {
    expect(notFoundMessage("/p/a.tx", "/p", ["a.txt", "b.txt"])).toBe("File not found: /p/a.tx\n\nDid you mean one of these?\n/p/a.txt");
    expect(notFoundMessage("/p/zz", "/p", ["a.txt"])).toBe("File not found: /p/zz");
  });

  test("binary by extension or content; images and PDFs by magic or extension", () => {
    expect(looksBinary("/p/x.dat", Buffer.from("text"))).toBe(true);
    expect(looksBinary("/p/x", Buffer.from([104, 0, 105]))).toBe(true);
    expect(looksBinary("/p/x.txt", Buffer.from("plain text\n"))).toBe(false);
    expect(attachableMime("/p/x", Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))).toBe("image/png");
    expect(attachableMime("/p/fake.png", Buffer.from("not png"))).toBe("image/png");
    expect(attachableMime("/p/doc", Buffer.from("%PDF-1.4"))).toBe("application/pdf");
    expect(attachableMime("/p/x.bmp", Buffer.from("BM"))).toBeNull();
  });
});

describe("grep output", () => {
  test("grouped by file, ripgrep's line terminator kept, truncation notices", () => {
    const matches = [
      { path: "/p/a.ts", line: 1, text: "x\n" },
      { path: "/p/a.ts", line: 3, text: "y x\n" },
      { path: "/p/b.ts", line: 2, text: "x\r\n" },
    ];
    expect(formatMatches(matches, false)).toBe("Found 3 matches\n/p/a.ts:\n  Line 1: x\n\n  Line 3: y x\n\n\n/p/b.ts:\n  Line 2: x\r\n");
    expect(formatMatches(matches.slice(0, 1), true)).toBe("Found 1 matches (more matches available)\n/p/a.ts:\n  Line 1: x\n\n\n(Results truncated. Consider using a more specific path or pattern.)");
  });
});

describe("glob patterns (ripgrep --glob semantics)", () => {
  const matches = (glob: string, path: string) => {
    const { regex, invert } = globToRegex(glob);
    return new RegExp(regex).test(path) !== invert;
  };
  test.each([
    ["*.ts", "a.ts", true],
    ["*.ts", "src/deep/a.ts", true],
    ["*.ts", "a.tsx", false],
    ["src/*.ts", "src/a.ts", true],
    ["src/*.ts", "src/deep/a.ts", false],
    ["src/*.ts", "lib/src/a.ts", false],
    ["**/*.ts", "a.ts", true],
    ["**/*.ts", "x/y/a.ts", true],
    ["src/**/*.ts", "src/a.ts", true],
    ["src/**/*.ts", "src/x/y/a.ts", true],
    ["src/**", "src/x/y", true],
    ["*.{ts,tsx}", "a.tsx", true],
    ["*.{ts,tsx}", "a.js", false],
    ["file?.txt", "file1.txt", true],
    ["file?.txt", "file12.txt", false],
    ["[ab].c", "a.c", true],
    ["[!ab].c", "c.c", true],
    ["[!ab].c", "a.c", false],
    ["a+b(1).txt", "a+b(1).txt", true],
    ["!*.md", "a.ts", true],
    ["!*.md", "a.md", false],
    ["/top.ts", "top.ts", true],
    ["/top.ts", "sub/top.ts", false],
  ])("%p on %p → %p", (glob, path, expected) => {
    expect(matches(glob, path)).toBe(expected);
  });
});

describe("edit matching (OpenCode's strategies and messages)", () => {
  test("exact and unique → replaced; replaceAll → every occurrence, literally", () => {
    expect(replaceText("foo bar\nbaz\n", "baz", "qux")).toBe("foo bar\nqux\n");
    expect(replaceText("foo bar foo\n", "foo", "$&", true)).toBe("$& bar $&\n");
  });
  test("several matches, none, identical strings, empty oldString → OpenCode's errors", () => {
    expect(() => replaceText("foo foo", "foo", "x")).toThrow("Found multiple matches for oldString. Provide more surrounding context to make the match unique.");
    expect(() => replaceText("foo", "bar", "x")).toThrow("Could not find oldString in the file. It must match exactly, including whitespace, indentation, and line endings.");
    expect(() => replaceText("foo", "foo", "foo")).toThrow("No changes to apply: oldString and newString are identical.");
    expect(() => replaceText("foo", "", "x")).toThrow("oldString cannot be empty when editing an existing file.");
  });
  test("looser matches: trimmed lines, shifted indentation, escaped newlines, anchors with similar middles", () => {
    expect(replaceText("  if (a) {\n    b();\n  }\n", "if (a) {\n  b();\n}", "done")).toBe("done\n");
    expect(replaceText("line one\nline two\n", "line one\\nline two", "joined")).toBe("joined\n");
    const block = "function f() {\n  const a = 1;\n  const b = 2;\n  return a + b;\n}\n";
    expect(replaceText(block, "function f() {\n  const a = 1;\n  const b = 3;\n  return a + b;\n}", "gone")).toBe("gone\n");
  });
});

describe("apply_patch language", () => {
  test("add, update with move, delete → parsed; chunks applied with context", () => {
    const hunks = parsePatch("*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** Update File: b.txt\n*** Move to: c.txt\n@@ fn()\n x\n-y\n+Y\n*** Delete File: d.txt\n*** End Patch");
    expect(hunks).toEqual([
      { type: "add", path: "a.txt", contents: "one\ntwo" },
      { type: "update", path: "b.txt", movePath: "c.txt", chunks: [{ oldLines: ["x", "y"], newLines: ["x", "Y"], context: "fn()" }] },
      { type: "delete", path: "d.txt" },
    ]);
    expect(applyChunks("b.txt", "start\nfn()\nx\ny\n", [{ oldLines: ["x", "y"], newLines: ["x", "Y"], context: "fn()" }])).toBe("start\nfn()\nx\nY\n");
  });
  test("no markers, unknown lines → OpenCode's errors", () => {
    expect(() => parsePatch("garbage")).toThrow("Invalid patch format: missing Begin/End markers");
    expect(() => applyChunks("/p/b.txt", "a\nb\n", [{ oldLines: ["zzz"], newLines: ["y"] }])).toThrow("Failed to find expected lines in /p/b.txt:\nzzz");
  });
});

describe("diffs", () => {
  test("an edit → OpenCode's Index header, hunk and counts", () => {
    expect(unifiedDiff("/p/e.txt", "foo bar foo\nbaz\n", "foo bar foo\nqux\n")).toBe(
      `Index: /p/e.txt\n${"=".repeat(67)}\n--- /p/e.txt\n+++ /p/e.txt\n@@ -1,2 +1,2 @@\n foo bar foo\n-baz\n+qux\n`,
    );
    expect(unifiedDiff("/p/n.txt", "", "made\n")).toBe(`Index: /p/n.txt\n${"=".repeat(67)}\n--- /p/n.txt\n+++ /p/n.txt\n@@ -0,0 +1,1 @@\n+made\n`);
    expect(countChanges("a\nb\nc\n", "a\nB\nc\nd\n")).toEqual({ additions: 2, deletions: 1 });
  });
  test("far apart changes → separate hunks with 4 lines of context; a missing final newline is marked", () => {
    const before = Array.from({ length: 30 }, (_, i) => `l${i}`).join("\n") + "\n";
    const after = before.replace("l2\n", "L2\n").replace("l27\n", "L27\n");
    expect(unifiedDiff("/f", before, after).match(/^@@.*@@$/gm)).toEqual(["@@ -1,7 +1,7 @@", "@@ -24,7 +24,7 @@"]);
    expect(unifiedDiff("/f", "a", "b")).toEndWith("@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n");
  });
});

describe("read-before-write", () => {
  test("never read → refused; read → allowed; changed since → refused; off by OPENCODE_DISABLE_FILETIME_CHECK", () => {
    const stamps = createReadStamps({});
    expect(() => stamps.assertFresh("s", "/p/a", { sha256: "1", mtimeSeconds: 0 })).toThrow("You must read file /p/a before overwriting it. Use the Read tool first");
    stamps.record("s", "/p/a", "1");
    stamps.assertFresh("s", "/p/a", { sha256: "1", mtimeSeconds: 0 });
    expect(() => stamps.assertFresh("s", "/p/a", { sha256: "2", mtimeSeconds: 0 })).toThrow(/^File \/p\/a has been modified since it was last read\.\nLast modification: 1970-01-01T00:00:00\.000Z\nLast read: /);
    expect(() => stamps.assertFresh("other", "/p/a", { sha256: "1", mtimeSeconds: 0 })).toThrow("You must read file");
    createReadStamps({ OPENCODE_DISABLE_FILETIME_CHECK: "true" }).assertFresh("s", "/p/a", { sha256: "1", mtimeSeconds: 0 });
  });
});

describe("the scripts, on the host shell", () => {
  let dir: string;
  let runner: FileRunner;
  beforeAll(() => {
    dir = makeTempDir("ss-file-tools-");
    Bun.spawnSync(["git", "init", "-q", dir]);
    const put = (rel: string, content: string | Uint8Array) => {
      mkdirSync(join(dir, rel, ".."), { recursive: true });
      writeFileSync(join(dir, rel), content);
    };
    put("a.txt", "alpha\nbeta\r\ngamma\rdelta");
    put("src/x.ts", "export const x = 1;\n");
    put("src/deep/y.ts", "const y = 'x';\n");
    put(".hidden/h.ts", "hidden x\n");
    put("ignored/i.ts", "x\n");
    put(".gitignore", "ignored/\n");
    put("-dash.ts", "x dash\n");
    put("bin.b", new Uint8Array([120, 0, 10]));
    symlinkSync("/etc", join(dir, "etc-link"));
    symlinkSync("/nonexistent", join(dir, "dangling"));
    runner = hostRunner(dir, new AbortController().signal);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const window = { offset: 1, limit: 2000, lineBytes: 8004, capBytes: 110_000 };

  test("read → lines split at \\n, \\r\\n and \\r as OpenCode splits them; a directory → its entries; a dangling link → missing", async () => {
    expect(await readFile(runner, join(dir, "a.txt"), window)).toMatchObject({ kind: "file", lines: ["alpha", "beta", "gamma", "delta"], count: 4, size: 23 });
    const listing = await readFile(runner, dir, window);
    expect(listing.kind === "dir" && listing.entries.sort()).toEqual(["-dash.ts", ".git/", ".gitignore", ".hidden/", "a.txt", "bin.b", "dangling", "etc-link/", "ignored/", "src/"]);
    expect((await readFile(runner, join(dir, "dangling"), window)).kind).toBe("missing");
  });

  test("glob → ignored, hidden and symlinked files skipped, names starting with - handled", async () => {
    const found = await globFiles(runner, dir, globToRegex("*.ts"), 100);
    expect(found.kind === "ok" && found.paths.sort()).toEqual(["-dash.ts", "src/deep/y.ts", "src/x.ts"]);
    expect((await globFiles(runner, join(dir, "a.txt"), globToRegex("*"), 100)).kind).toBe("notdir");
  });

  test("grep → hidden files searched, ignored and binary files skipped, one file alone, a bad regex reported", async () => {
    const found = await grepFiles(runner, { target: dir, pattern: "\\bx\\b" }, 100, 12_000);
    expect(found.kind === "ok" && found.matches.map((m) => `${m.path}:${m.line}:${m.text}`).sort()).toEqual(["-dash.ts:1:x dash", ".hidden/h.ts:1:hidden x", "src/deep/y.ts:1:const y = 'x';", "src/x.ts:1:export const x = 1;"]);
    expect(await grepFiles(runner, { target: join(dir, "src/x.ts"), pattern: "x" }, 100, 12_000)).toMatchObject({ kind: "ok", target: "file", matches: [{ path: "x.ts", line: 1 }] });
    expect((await grepFiles(runner, { target: dir, pattern: "(" }, 100, 12_000)).kind).toBe("badpattern");
  });

  test("write → several jobs when the content exceeds one job's env; refused when the file changed since the probe", async () => {
    const small: FileRunner = { ...runner, envBudgetBytes: 1 }; // one 60 KiB chunk per job
    const content = Buffer.alloc(1_000_000, "0123456789abcdef\n");
    expect(await writeBytes(small, join(dir, "new/dir/big.txt"), content, "absent")).toMatchObject({ ok: true });
    expect(readFileSync(join(dir, "new/dir/big.txt")).equals(content)).toBe(true);
    const before = await probe(runner, join(dir, "a.txt"));
    expect(before.kind).toBe("file");
    expect(await writeBytes(runner, join(dir, "a.txt"), Buffer.from("x"), "0".repeat(64))).toMatchObject({ ok: false, changed: before.kind === "file" ? before.sha256 : "" });
  });

  test("a provider's command → the env prelude restores every value byte for byte", async () => {
    const values = { OCF_A: "it's \"quoted\" $(rm -rf /) `x`\n\n", OCF_B: "", OCF_C: "ünïcode\ttab\\" };
    const script = `${envPrelude(values)}\nprintf '%s\\0' "$OCF_A" "$OCF_B" "$OCF_C"`;
    const out = Bun.spawnSync(["/bin/sh", "-c", script], { env: { PATH: process.env.PATH } }).stdout.toString();
    expect(out.split("\0").slice(0, 3)).toEqual(Object.values(values));
  });
});
