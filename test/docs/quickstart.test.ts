// The README's quickstart, run as written: its ```sh quickstart blocks, in order, in one bash, against a
// manager of this test's own (SANDBOX_URL, SANDBOX_API_TOKEN and the manager's data dir, so `bun run
// --silent token` prints the same token), with the CLI on PATH as `bun link` would put it. Blocks marked
// `sh quickstart-skip` (starting the manager, installing the CLI) are shown to readers and not run here.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { SessionNotFoundError } from "../../sdk/index";
import { makeTempDir } from "../helpers";
import { ROOT, startTestManager, type TestManager } from "../e2e/fixture";
import { prepareLocalRuntime } from "../runtime/local-target";

/** The bodies of the fenced code blocks whose info string is exactly `sh quickstart`, in document order. */
export function quickstartBlocks(markdown: string): string[] {
  const blocks: string[] = [];
  for (const match of markdown.matchAll(/^```([^`\n]*)\n([\s\S]*?)^```[ \t]*$/gm)) {
    if (match[1]!.trim().split(/\s+/).join(" ") === "sh quickstart") blocks.push(match[2]!);
  }
  return blocks;
}

describe("quickstartBlocks", () => {
  test("only `sh quickstart` blocks, in order; skip, other languages and plain `sh` blocks left out", () => {
    const markdown = [
      "# Title",
      "```sh quickstart-skip",
      "bash scripts/start.sh",
      "```",
      "text with an inline ```sh quickstart``` mention",
      "```sh quickstart",
      "echo one",
      "```",
      "```json",
      '{"a": 1}',
      "```",
      "```sh",
      "echo not me",
      "```",
      "```sh quickstart",
      "echo two",
      "echo three",
      "```",
    ].join("\n");
    expect(quickstartBlocks(markdown)).toEqual(["echo one\n", "echo two\necho three\n"]);
  });
});

describe("the README's quickstart", () => {
  const dir = makeTempDir("ss-quickstart-");
  /** The TMPDIR the blocks see: the repository they make lands here, and goes with the test. */
  const tmp = join(dir, "tmp");
  const bin = join(dir, "bin");
  let manager: TestManager;

  beforeAll(async () => {
    manager = await startTestManager(await prepareLocalRuntime());
    mkdirSync(tmp);
    mkdirSync(bin);
    // What `bun link` installs: a link to the CLI's entry, run from wherever the reader is.
    symlinkSync(join(ROOT, "cli/session-sandbox.ts"), join(bin, "session-sandbox"));
  }, 300_000);
  afterAll(async () => {
    await manager?.cleanUp();
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  test("every block in order, as one bash -euo pipefail → exit 0; the exec step ran in the session's VM", async () => {
    const blocks = quickstartBlocks(readFileSync(join(ROOT, "README.md"), "utf8"));
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    const script = blocks.join("\n");
    expect(script).toContain("bun run --silent token");
    expect(script).toContain("session-sandbox exec ses_quickstart");
    const proc = Bun.spawn(["bash", "-euo", "pipefail", "-c", script], {
      cwd: ROOT,
      env: {
        PATH: `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}`,
        HOME: process.env.HOME ?? "/root",
        TMPDIR: tmp,
        SANDBOX_URL: manager.process.url,
        SANDBOX_API_TOKEN: manager.process.token,
        SANDBOX_DATA_DIR: manager.dataDir,
      },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    // `hostname` in the VM prints the VM's name on a line of its own (the vms table has more on its line).
    const vmName = `ocm-session-${createHash("sha256").update("ses_quickstart").digest("hex").slice(0, 12)}`;
    expect(stdout.split("\n")).toContain(vmName);
    // `pwd` in the VM: the repository the blocks made, at its host path.
    const repo = join(tmp, "quickstart-repo");
    expect(existsSync(join(repo, ".git"))).toBe(true);
    expect(stdout.split("\n")).toContain(repo);
    // Piped input reached the command; the forward printed a URL on this host.
    expect(stdout).toContain("TYPED ON THE HOST\n");
    expect(stdout).toMatch(/VM port 8000 → http:\/\/127\.0\.0\.1:\d+\//);
    // The last block deleted the session.
    expect(await manager.client.sessions.get("ses_quickstart").catch((error) => error)).toBeInstanceOf(SessionNotFoundError);
  }, 300_000);
});
