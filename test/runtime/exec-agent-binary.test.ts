// The exec agent's build (runtime/local/exec-agent-binary.ts) and the doctor's read-only view of it: built
// once per source version into a shared directory, static (it runs in any image), and when it cannot be
// built the doctor says why and that commands then run with crun exec.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { ensureExecAgent, execAgentStatus } from "../../runtime/local/exec-agent-binary";

const dir = mkdtempSync(join(tmpdir(), "ss-agent-bin-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PT_INTERP = 3;

/** The p_type of each program header of a 64-bit little-endian ELF file. */
function programHeaderTypes(elf: Buffer): number[] {
  expect(elf.subarray(0, 4).toString("latin1")).toBe("\x7fELF");
  const offset = Number(elf.readBigUInt64LE(0x20));
  const size = elf.readUInt16LE(0x36);
  return Array.from({ length: elf.readUInt16LE(0x38) }, (_, i) => elf.readUInt32LE(offset + i * size));
}

/** With gcc (and everything else) off PATH. */
function withoutPath<T>(run: () => T): T {
  const saved = process.env.PATH;
  process.env.PATH = "/nonexistent";
  try {
    return run();
  } finally {
    process.env.PATH = saved;
  }
}

describe("exec agent binary", () => {
  test("not built yet → the doctor says gcc will build it; without gcc → why, and that commands run with crun exec", () => {
    expect(execAgentStatus(dir)).toEqual({ ok: true, detail: `not built yet; gcc builds it into ${dir} on the first VM operation` });
    const missing = withoutPath(() => execAgentStatus(dir));
    expect(missing.ok).toBe(false);
    expect(missing.detail).toMatch(/gcc is not installed.*crun exec/);
    expect(withoutPath(() => ensureExecAgent(dir))).toEqual({ problem: "gcc is not installed (scripts/install-runtime-deps.sh installs it)" });
  });

  test("built once, world-readable and executable, statically linked; the same path again without building", () => {
    const built = ensureExecAgent(dir);
    expect(built.problem).toBeUndefined();
    const path = built.path!;
    expect(statSync(path).mode & 0o777).toBe(0o755);
    expect(programHeaderTypes(readFileSync(path))).not.toContain(PT_INTERP); // static: no dynamic loader
    const usage = Bun.spawnSync([path], { stderr: "pipe" });
    expect(usage.exitCode).toBe(2);
    expect(usage.stderr.toString()).toContain("usage: vm-exec-agent --bind");
    expect(withoutPath(() => ensureExecAgent(dir))).toEqual({ path });
    expect(execAgentStatus(dir)).toEqual({ ok: true, detail: `${basename(path)} built in ${dir}, so commands run by a fork in the VM` });
  });
});
