// The msb driver's exec process handling against a FAKE msb (no microVM boots on this machine):
// streaming, guest exit codes vs msb failures, timeout and cancel killing the guest process tree.
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { EXEC_MARKER_ENV } from "../../runtime/msb";
import type { FakeStep } from "./fake-msb";
import { makeFakeMsb, recordingSink, removeFakeMsbs } from "./fake-msb-harness";

afterAll(removeFakeMsbs);

const name = "ocm-session-0123456789ab";
const request = { argv: ["sh", "-c", "echo hi"], cwd: "/work/repo" };

async function execWith(step: FakeStep, extra: Record<string, FakeStep[]> = {}) {
  const fake = makeFakeMsb();
  fake.setScenario({ exec: [step], ...extra });
  const { sink, out } = recordingSink();
  const result = await fake
    .driver()
    .exec(name, request, sink)
    .catch((error: unknown) => error);
  return { fake, out, result };
}

describe("fake msb: exec streaming", () => {
  test("guest output → reaches the sink chunk by chunk while msb is still running", async () => {
    const fake = makeFakeMsb();
    const firstSeen = fake.file("first-chunk-seen");
    // The fake only writes its second chunk after the test saw the first: buffering would deadlock.
    fake.setScenario({ exec: [{ chunks: [{ stream: "stdout", text: "one\n" }, { stream: "stderr", text: "two\n", waitForFile: firstSeen }], exitCode: 0 }] });
    const { sink, out } = recordingSink((_stream, text) => text === "one\n" && writeFileSync(firstSeen, ""));
    const result = await fake.driver().exec(name, request, sink);
    expect(result).toEqual({ exitCode: 0, timedOut: false, cancelled: false });
    expect(out).toEqual({ stdout: "one\n", stderr: "two\n" });
  });

  test("exec → argv after --, --stream, stdin at EOF, a marker env for the tree kill", async () => {
    const { fake } = await execWith({ exitCode: 0 });
    const [call] = fake.calls();
    expect(call?.args.slice(call.args.indexOf("--"))).toEqual(["--", ...request.argv]);
    expect(call?.args).toContain("--stream");
    expect(call?.args.some((a) => a.startsWith(`--env=${EXEC_MARKER_ENV}=`))).toBe(true);
    expect(call?.stdinEof).toBe(true);
  });
});

describe("fake msb: a command as another guest user", () => {
  test("refused with the reason (a Dockerfile build's USER runs on gVisor); msb is never called", async () => {
    const fake = makeFakeMsb();
    fake.setScenario({ exec: [{ exitCode: 0 }] });
    const { sink } = recordingSink();
    await expect(fake.driver().exec(name, { ...request, user: { uid: 1000, gid: 1000 } }, sink)).rejects.toThrow(/another guest user runs only on the gVisor tier/);
    expect(fake.calls()).toEqual([]);
  });
});

describe("fake msb: exec exit codes", () => {
  test("guest exits 3 → exitCode 3", async () => {
    const { result } = await execWith({ exitCode: 3 });
    expect(result).toEqual({ exitCode: 3, timedOut: false, cancelled: false });
  });

  test("guest prints its own `error:` line and exits 1 → exitCode 1, stderr forwarded intact", async () => {
    const { result, out } = await execWith({ stderr: "error: pathspec 'x' did not match\n", exitCode: 1 });
    expect(result).toEqual({ exitCode: 1, timedOut: false, cancelled: false });
    expect(out.stderr).toBe("error: pathspec 'x' did not match\n");
  });

  test("msb reports the sandbox missing → RuntimeError NOT_FOUND, report kept off the guest's stderr", async () => {
    const { result, out } = await execWith({ stdout: "", stderr: `error: sandbox not found: ${name}\n`, exitCode: 1 });
    expect(result).toMatchObject({ name: "RuntimeError", code: "NOT_FOUND" });
    expect(out.stderr).toBe("");
  });

  test("msb cannot boot the VM → RuntimeError UNAVAILABLE", async () => {
    const stderr = `error: failed to start "${name}"\n  → other: sandbox process exited (exit status: 1) before agent relay became available\n`;
    const { result } = await execWith({ stderr, exitCode: 1 });
    expect(result).toMatchObject({ code: "UNAVAILABLE" });
  });

  test("msb loses the guest session → RuntimeError FAILED", async () => {
    const { result } = await execWith({ stderr: "partial\nerror: exec session ended without exit event\n", exitCode: 1 });
    expect(result).toMatchObject({ code: "FAILED" });
  });

  test("guest program not found (msb exits 127) → exitCode 127 with msb's explanation on stderr", async () => {
    const stderr = 'error: failed to exec "nope"\n  → not found: No such file or directory (ENOENT)\n';
    const { result, out } = await execWith({ stderr, exitCode: 127 });
    expect(result).toEqual({ exitCode: 127, timedOut: false, cancelled: false });
    expect(out.stderr).toBe(stderr);
  });

  test("guest killed by a signal (msb exits 255) → exitCode 255", async () => {
    const { result } = await execWith({ exitCode: 255 });
    expect(result).toEqual({ exitCode: 255, timedOut: false, cancelled: false });
  });

  test("msb's own --timeout fires → timedOut, exitCode 137, and the tree sweep still runs", async () => {
    const { result, fake } = await execWith({ stdout: "partial\n", stderr: "error: exec timed out after 2s\n", exitCode: 1 }, { "exec-kill-tree": [{}] });
    expect(result).toEqual({ exitCode: 137, timedOut: true, cancelled: false });
    expect(fake.calls().map((c) => c.key)).toEqual(["exec", "exec-kill-tree"]);
  });
});

describe("fake msb: exec timeout and cancel", () => {
  function hangingScenario(fake: ReturnType<typeof makeFakeMsb>) {
    const killed = fake.file("guest-killed");
    // The guest command runs until the sweep kills it; msb then reports the signal death as 255.
    fake.setScenario({ exec: [{ stdout: "started\n", waitForFile: killed, exitCode: 255 }], "exec-kill-tree": [{ touchFile: killed }] });
  }

  test("timeoutMs passes → sweep kills the tree by this exec's marker, timedOut with exitCode 137", async () => {
    const fake = makeFakeMsb();
    hangingScenario(fake);
    const { sink, out } = recordingSink();
    const result = await fake.driver().exec(name, { ...request, timeoutMs: 300 }, sink);
    expect(result).toEqual({ exitCode: 137, timedOut: true, cancelled: false });
    expect(out.stdout).toBe("started\n");
    const [exec, sweep] = fake.calls();
    const marker = exec?.args.find((a) => a.startsWith(`--env=${EXEC_MARKER_ENV}=`))?.slice("--env=".length);
    expect(sweep?.key).toBe("exec-kill-tree");
    expect(sweep?.args.at(-1)).toBe(marker);
    expect(exec?.args).toContain("--timeout=1s");
  });

  test("abort signal → sweep runs, cancelled with exitCode 137", async () => {
    const fake = makeFakeMsb();
    hangingScenario(fake);
    const controller = new AbortController();
    const { sink } = recordingSink((_s, text) => text === "started\n" && controller.abort());
    const result = await fake.driver().exec(name, { ...request, signal: controller.signal }, sink);
    expect(result).toEqual({ exitCode: 137, timedOut: false, cancelled: true });
    expect(fake.calls().map((c) => c.key)).toEqual(["exec", "exec-kill-tree"]);
  });

  test("the sweep cannot run (a guest at its process limit: sh cannot fork, exit 2) → the VM is powered off, cancelled", async () => {
    const fake = makeFakeMsb();
    const killed = fake.file("guest-killed");
    fake.setScenario({
      exec: [{ stdout: "started\n", waitForFile: killed, exitCode: 255 }],
      "exec-kill-tree": [{ stderr: "sh: 1: Cannot fork\n", exitCode: 2 }],
      stop: [{ touchFile: killed }],
    });
    const controller = new AbortController();
    const { sink } = recordingSink((_s, text) => text === "started\n" && controller.abort());
    const result = await fake.driver().exec(name, { ...request, signal: controller.signal }, sink);
    expect(result).toEqual({ exitCode: 137, timedOut: false, cancelled: true });
    expect(fake.calls().map((c) => c.args.slice(0, 3))).toEqual([["exec", name, "--no-tty"], ["exec", name, "--no-tty"], ["stop", name, "--force"]]);
  });

  test("msb does not exit after the sweep → killed after the grace period, still timedOut", async () => {
    const fake = makeFakeMsb();
    fake.setScenario({ exec: [{ waitForFile: fake.file("never") }], "exec-kill-tree": [{}] });
    const { sink } = recordingSink();
    const driver = fake.driver({ execTimings: { killTreeTimeoutMs: 5_000, killGraceMs: 200 } });
    const result = await driver.exec(name, { ...request, timeoutMs: 200 }, sink);
    expect(result).toEqual({ exitCode: 137, timedOut: true, cancelled: false });
  });

  test("signal already aborted → nothing is spawned, cancelled", async () => {
    const fake = makeFakeMsb();
    const { sink } = recordingSink();
    const result = await fake.driver().exec(name, { ...request, signal: AbortSignal.abort() }, sink);
    expect(result).toEqual({ exitCode: 137, timedOut: false, cancelled: true });
    expect(fake.calls()).toEqual([]);
  });
});
