// The runner's summary of why a file failed, from a real `bun test` run of a file with passing, failing
// and throwing tests, and from a file that dies outside any test.
import { describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { failureExcerpts } from "../../scripts/test-failures";
import { makeTempDir } from "../helpers";

function bunTestOutput(source: string): string {
  const dir = makeTempDir("ss-failures-");
  try {
    writeFileSync(join(dir, "sample.test.ts"), source);
    const run = Bun.spawnSync(["bun", "test", "./sample.test.ts"], { cwd: dir, env: { ...process.env, FORCE_COLOR: "0" } });
    return `${run.stdout.toString()}${run.stderr.toString()}`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("failureExcerpts", () => {
  test("failing tests → one excerpt each, with the error and the (fail) line, nothing of the passing test", () => {
    const output = bunTestOutput(`import { expect, test } from "bun:test";
test("passes", () => { console.log("passing noise"); expect(1).toBe(1); });
test("compares", () => { expect("left").toBe("right"); });
test("throws", () => { throw new Error("the reason"); });
`);
    const excerpts = failureExcerpts(output);
    expect(excerpts).toHaveLength(2);
    expect(excerpts[0]).toContain('Expected: "right"');
    expect(excerpts[0]).toMatch(/\(fail\) compares/);
    expect(excerpts[1]).toContain("error: the reason");
    expect(excerpts[1]).toMatch(/\(fail\) throws/);
    expect(excerpts.join("\n")).not.toContain("(pass) passes");
  });

  test("a file that fails outside any test → its last lines", () => {
    const output = bunTestOutput(`throw new Error("broken at load");\n`);
    const [excerpt] = failureExcerpts(output);
    expect(excerpt).toContain("broken at load");
  });
});
