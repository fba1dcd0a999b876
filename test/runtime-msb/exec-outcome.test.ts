// classifyExecExit: which endings of `msb exec` are the guest's exit code and which are msb failures.
import { describe, expect, test } from "bun:test";
import { classifyExecExit, type ExecExit } from "../../runtime/msb/exec-outcome";

const exit = (exitCode: number | null, heldStderr = "", extra: Partial<ExecExit> = {}): ExecExit => ({
  exitCode,
  signalCode: null,
  heldStderr,
  stderrTail: heldStderr,
  name: "box",
  ...extra,
});

describe("classifyExecExit", () => {
  test("plain exit codes → the guest's", () => {
    for (const code of [0, 1, 2, 3, 126, 127, 130, 255]) expect(classifyExecExit(exit(code))).toEqual({ kind: "exited", exitCode: code, forwardHeld: true });
  });

  test("msb's not-found for this sandbox → NOT_FOUND", () => {
    expect(classifyExecExit(exit(1, "error: sandbox not found: box\n"))).toMatchObject({ kind: "runtime-error", error: { code: "NOT_FOUND" } });
  });

  test("not-found naming another sandbox (guest text) → the guest's exit 1", () => {
    expect(classifyExecExit(exit(1, "error: sandbox not found: other\n"))).toMatchObject({ kind: "exited", exitCode: 1 });
  });

  test("boot failure or wrong state → UNAVAILABLE", () => {
    expect(classifyExecExit(exit(1, 'error: failed to start "box"\n  → other: x\n'))).toMatchObject({ error: { code: "UNAVAILABLE" } });
    expect(classifyExecExit(exit(1, "error: sandbox 'box' is in state Starting and cannot be started\n"))).toMatchObject({ error: { code: "UNAVAILABLE" } });
  });

  test("lost session → FAILED", () => {
    expect(classifyExecExit(exit(1, "error: exec session ended without exit event\n"))).toMatchObject({ error: { code: "FAILED" } });
    expect(classifyExecExit(exit(1, "error: exec failed to start: Payload\n"))).toMatchObject({ error: { code: "FAILED" } });
  });

  test("msb's timeout → timed-out", () => {
    expect(classifyExecExit(exit(1, "error: exec timed out after 5s\n"))).toEqual({ kind: "timed-out" });
  });

  test("spawn failure block with 127/126/1 → the guest's code, block kept on stderr", () => {
    for (const code of [127, 126, 1]) {
      expect(classifyExecExit(exit(code, 'error: failed to exec "x"\n  → not found: y\n'))).toEqual({ kind: "exited", exitCode: code, forwardHeld: true });
    }
  });

  test("msb-looking block with an exit code msb never uses for it → the guest's", () => {
    expect(classifyExecExit(exit(3, "error: sandbox not found: box\n"))).toMatchObject({ kind: "exited", exitCode: 3 });
  });

  test("msb killed by a signal → FAILED", () => {
    expect(classifyExecExit(exit(null, "", { signalCode: "SIGKILL" }))).toMatchObject({ error: { code: "FAILED", message: expect.stringContaining("SIGKILL") } });
  });

  test("argument parser usage error (exit 2) → FAILED", () => {
    const usage = "error: unexpected argument '--bogus' found\n\nUsage: msb exec [OPTIONS] <NAME> [-- <COMMAND>...]\n\nFor more information, try '--help'.\n";
    expect(classifyExecExit(exit(2, "", { stderrTail: usage }))).toMatchObject({ error: { code: "FAILED" } });
  });
});
