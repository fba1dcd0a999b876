// The default guest image carries the toolchains of common projects: inside a real VM, through the exec API, node/npm, a C compiler, Python with venv and pip,
// ripgrep and jq are there and work — offline, with the VM's network off.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeActorFixture, type ActorFixture } from "../actors/fixture";

let f: ActorFixture;
let repo: string;
beforeAll(async () => {
  f = await makeActorFixture();
  repo = f.makeRepo("toolchain");
  await f.client.sessions.register({ id: "ses_toolchain", directory: repo });
}, 900_000);
afterAll(async () => f?.teardown(), 120_000);

const run = (command: string) => f.client.run("ses_toolchain", { command, cwd: repo, timeoutMs: 120_000 });

describe("default guest image", () => {
  test("node --version, npm --version, cc --version, python3 -m venv, rg --version, jq --version → all succeed in a VM", async () => {
    const result = await run("node --version && npm --version && cc --version | sed -n 1p && python3 -m venv /tmp/venv && /tmp/venv/bin/pip --version && rg --version | sed -n 1p && jq --version");
    expect(result.stderr).toBe("");
    expect(result.exitCode).toBe(0);
    const lines = result.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^v\d+\.\d+\.\d+$/);
    expect(lines[1]).toMatch(/^\d+\.\d+\.\d+$/);
    expect(lines[2]).toMatch(/^cc \(Debian/);
    expect(lines[3]).toMatch(/^pip \d+/);
    expect(lines[4]).toMatch(/^ripgrep \d+/);
    expect(lines[5]).toMatch(/^jq-\d/);
  }, 180_000);

  test("a real build in the repository: a C program with make, a Node script, a Python package in a venv → run in the VM", async () => {
    writeFileSync(join(repo, "hello.c"), '#include <stdio.h>\nint main(void) { printf("hello from C\\n"); return 0; }\n');
    writeFileSync(join(repo, "Makefile"), "hello: hello.c\n\tcc -O2 -o hello hello.c\n");
    writeFileSync(join(repo, "hello.mjs"), 'console.log(["hello", "from", "node"].join(" "));\n');
    writeFileSync(join(repo, "pyproject.toml"), '[project]\nname = "hellopkg"\nversion = "0.1.0"\n[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n');
    writeFileSync(join(repo, "hellopkg.py"), 'def greet():\n    return "hello from python"\n');
    const result = await run(
      "make -s hello && ./hello && node hello.mjs && python3 -m venv --system-site-packages /tmp/pyenv && /tmp/pyenv/bin/pip install -q --no-index --no-build-isolation . && /tmp/pyenv/bin/python -c 'import hellopkg; print(hellopkg.greet())'",
    );
    expect(result).toMatchObject({ exitCode: 0, stdout: "hello from C\nhello from node\nhello from python\n" });
  }, 180_000);
});
