// buildExecArgs and buildKillTreeArgs: the exact `msb exec` argv, passed-through guest argv, refused values.
import { describe, expect, test } from "bun:test";
import { buildExecArgs, buildKillTreeArgs, EXEC_MARKER_ENV, InvalidSpecError } from "../../runtime/msb";
import { timeoutSeconds } from "../../runtime/msb/exec-args";

const name = "ocm-session-0123456789ab";

describe("buildExecArgs", () => {
  test("request → flags before --, sorted env, marker env, whole-second timeout", () => {
    const args = buildExecArgs(name, { argv: ["git", "status"], cwd: "/work/repo", env: { Z: "1", A: "x=y" }, timeoutMs: 1500 }, "abc123");
    expect(args).toEqual([
      "exec",
      name,
      "--no-tty",
      "--stream",
      "--quiet",
      "--workdir=/work/repo",
      "--env=A=x=y",
      "--env=Z=1",
      `--env=${EXEC_MARKER_ENV}=abc123`,
      "--timeout=2s",
      "--",
      "git",
      "status",
    ]);
  });

  test("guest argv that looks like flags or a shell line → passed verbatim after --", () => {
    const argv = ["bash", "-lc", "echo $HOME && rm -rf -- '--help'", "--", "-e", "A=B"];
    const args = buildExecArgs(name, { argv, cwd: "/", env: {} }, "id1");
    expect(args.slice(args.indexOf("--") + 1)).toEqual(argv);
  });

  test("no timeout → no --timeout flag", () => {
    expect(buildExecArgs(name, { argv: ["true"], cwd: "/" }, "id1").some((a) => a.startsWith("--timeout"))).toBe(false);
  });

  test("timeoutSeconds → rounds up, at least one second", () => {
    expect([1, 999, 1000, 1001, 60_000].map(timeoutSeconds)).toEqual([1, 1, 1, 2, 60]);
  });

  const refusals: [string, () => unknown][] = [
    ["empty argv", () => buildExecArgs(name, { argv: [], cwd: "/" }, "id")],
    ["empty program", () => buildExecArgs(name, { argv: [""], cwd: "/" }, "id")],
    ["relative cwd", () => buildExecArgs(name, { argv: ["true"], cwd: "repo" }, "id")],
    ["env key with =", () => buildExecArgs(name, { argv: ["true"], cwd: "/", env: { "A=B": "c" } }, "id")],
    ["env key starting with a dash", () => buildExecArgs(name, { argv: ["true"], cwd: "/", env: { "-e": "c" } }, "id")],
    ["the reserved marker env", () => buildExecArgs(name, { argv: ["true"], cwd: "/", env: { [EXEC_MARKER_ENV]: "x" } }, "id")],
    ["zero timeout", () => buildExecArgs(name, { argv: ["true"], cwd: "/", timeoutMs: 0 }, "id")],
    ["bad VM name", () => buildExecArgs("-x", { argv: ["true"], cwd: "/" }, "id")],
    ["exec id with a space", () => buildExecArgs(name, { argv: ["true"], cwd: "/" }, "a b")],
  ];
  for (const [what, build] of refusals) {
    test(`${what} → InvalidSpecError`, () => {
      expect(build).toThrow(InvalidSpecError);
    });
  }
});

describe("buildKillTreeArgs", () => {
  test("exec id → sh sweep with the marker as its only argument", () => {
    const args = buildKillTreeArgs(name, "abc123");
    expect(args.slice(0, 7)).toEqual(["exec", name, "--no-tty", "--quiet", "--timeout=30s", "--", "/bin/sh"]);
    expect(args.at(-1)).toBe(`${EXEC_MARKER_ENV}=abc123`);
  });

  test("sweep script → valid POSIX sh that kills only processes carrying the marker", async () => {
    // Run it on the host against a marked sleep and an unmarked one: only the marked one dies.
    // The id is random so no process but this test's own can carry it.
    const id = crypto.randomUUID().replaceAll("-", "");
    const args = buildKillTreeArgs(name, id);
    expect(args[7]).toBe("-c");
    const env = (value: string) => ({ [EXEC_MARKER_ENV]: value, PATH: process.env.PATH ?? "" });
    const marked = Bun.spawn(["sleep", "30"], { env: env(id) });
    const unmarked = Bun.spawn(["sleep", "30"], { env: env(`${id}x`) });
    const sweep = Bun.spawn(["/bin/sh", ...args.slice(7)], { env: { PATH: process.env.PATH ?? "" } });
    expect(await sweep.exited).toBe(0);
    await marked.exited;
    expect(marked.signalCode).toBe("SIGKILL");
    expect(unmarked.exitCode).toBeNull();
    unmarked.kill();
    await unmarked.exited;
  });
});
