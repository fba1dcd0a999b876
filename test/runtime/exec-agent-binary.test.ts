// The exec agent's build (runtime/local/exec-agent-binary.ts) and the doctor's read-only view of it: built
// once per source version into a shared directory, static (it runs in any image), and when it cannot be
// built the doctor says why and that commands then run with crun exec.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
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
    expect(usage.stderr.toString()).toContain("usage: vm-exec-agent [--hide-cgroup2 <dir>] --bind");
    expect(withoutPath(() => ensureExecAgent(dir))).toEqual({ path });
    expect(execAgentStatus(dir)).toEqual({ ok: true, detail: `${basename(path)} built in ${dir}, so commands run by a fork in the VM` });
  });

  // The host side as crun's launcher (crun.ts): on a hybrid cgroup host it covers the cgroup2 mount for crun
  // alone. Here a directory of the test's stands in for that mount.
  test("as crun's launcher: the covered directory reads empty for the program only, fd 3 is the listener, the program's stderr is /dev/null; failures → 125 / 127 with the reason", () => {
    const agent = ensureExecAgent(dir).path!;
    const covered = join(dir, "covered");
    mkdirSync(covered, { recursive: true });
    writeFileSync(join(covered, "host-file"), "x");
    const socket = join(dir, "agent.sock");
    const probe = `ls -A "${covered}" | wc -l; readlink /proc/self/fd/3 | cut -d: -f1; echo lost >&2`;
    const launched = Bun.spawnSync([agent, "--hide-cgroup2", covered, "--bind", socket, "--", "sh", "-c", probe], { stdout: "pipe", stderr: "pipe" });
    expect({ exitCode: launched.exitCode, stdout: launched.stdout.toString(), stderr: launched.stderr.toString() }).toEqual({ exitCode: 0, stdout: "0\nsocket\n", stderr: "" });
    expect(readdirSync(covered)).toEqual(["host-file"]); // the host's view is untouched
    expect((statSync(socket).mode & 0o777).toString(8)).toBe("600");

    const noDir = Bun.spawnSync([agent, "--hide-cgroup2", join(dir, "missing"), "--bind", socket, "--", "true"], { stderr: "pipe" });
    expect(noDir.exitCode).toBe(125);
    expect(noDir.stderr.toString()).toContain(`cannot cover ${join(dir, "missing")} with an empty tmpfs`);
    const noProgram = Bun.spawnSync([agent, "--bind", socket, "--", "/no/such/crun"], { stderr: "pipe" });
    expect(noProgram.exitCode).toBe(127);
    expect(noProgram.stderr.toString()).toContain("cannot run /no/such/crun: No such file or directory");
    // --hide-cgroup2 is for the host side only.
    expect(Bun.spawnSync([agent, "--hide-cgroup2", covered, "--fd", "3", "--", "true"], { stderr: "pipe" }).exitCode).toBe(2);
  });
});
