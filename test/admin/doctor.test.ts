// `doctor` end to end: against a running manager with no usable runtime, against no manager at all
// (the host checks, with crun hidden from PATH), and with a token the manager refuses.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { makeTempDir } from "../helpers";
import { ROOT, parseJson, runScript, startAdminManager, type AdminManager } from "./fixture";

type DoctorJson = { ok: boolean; url: string; checks: { source: "manager" | "local"; name: string; ok: boolean; required: boolean; detail: string; fix: string | null }[] };

let m: AdminManager;
let scratch: string;
beforeAll(async () => {
  // msb with a binary that does not exist: no runtime is usable on any host, KVM or not.
  m = await startAdminManager({ env: { SANDBOX_RUNTIME: "msb", MSB_PATH: "/nonexistent/msb" } });
  scratch = makeTempDir("ss-admin-doctor-");
}, 60_000);
afterAll(async () => {
  await m?.cleanup();
  rmSync(scratch, { recursive: true, force: true });
}, 60_000);

/** PATH with every directory holding crun replaced by a copy (of symlinks) without it. */
function pathWithoutCrun(): string {
  return (process.env.PATH ?? "")
    .split(":")
    .map((dir, i) => {
      if (!existsSync(join(dir, "crun"))) return dir;
      const farm = join(scratch, `bin${i}`);
      if (existsSync(farm)) return farm; // made by an earlier test
      mkdirSync(farm, { recursive: true });
      for (const entry of readdirSync(dir)) if (entry !== "crun") symlinkSync(join(dir, entry), join(farm, entry));
      return farm;
    })
    .join(":");
}

/** A loopback URL where nothing listens: a port the OS handed out, then closed again. */
function closedUrl(): string {
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const url = `http://127.0.0.1:${server.port}`;
  server.stop(true);
  return url;
}

/** Each check line is `  <ok  |FAIL|warn>  <name padded>  <detail>`; fix lines follow failed checks. */
const statusLines = (text: string) => text.split("\n").filter((line) => /^ {2}(ok {2}|FAIL|warn) {2}/.test(line));

describe("bun run doctor", () => {
  test("manager up, no usable runtime → FAIL on the runtime in use, with its fix; exit 1", async () => {
    const result = await m.run("doctor");
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toBe("");
    const lines = result.stdout.split("\n");
    expect(lines[0]).toBe("the manager (GET /api/doctor)");
    expect(statusLines(result.stdout)[0]).toMatch(/^ {2}ok {4}manager +http:\/\/127\.0\.0\.1:\d+: version \d+\.\d+\.\d+$/);
    const runtime = lines.findIndex((line) => /^ {2}FAIL {2}runtime in use +none: sandboxed commands are refused$/.test(line));
    expect(runtime).toBeGreaterThan(0);
    expect(lines[runtime + 1]).toMatch(/^ {8,}fix: SANDBOX_RUNTIME=msb, but msb is unavailable: .*\/nonexistent\/msb.*\(fix: .*\)/);
    expect(lines.at(-2)).toMatch(/^\d+ required checks? failed$/);
  });

  test("--json → every check with source, required and fix; ok false", async () => {
    const report = parseJson<DoctorJson>(await m.run("doctor", ["--json"]));
    expect(report.ok).toBe(false);
    expect(report.url).toBe(m.manager.url);
    for (const check of report.checks) expect(Object.keys(check)).toEqual(["source", "name", "ok", "required", "detail", "fix"]);
    expect(report.checks.map((check) => check.name)).toEqual(expect.arrayContaining(["manager", "runtime in use", "runtime local", "runtime msb", "kvm", "cgroups", "root filesystem", "database", "token"]));
    const runtime = report.checks.find((check) => check.name === "runtime in use")!;
    expect(runtime).toMatchObject({ source: "manager", ok: false, required: true });
    expect(runtime.fix).toContain("SANDBOX_RUNTIME=msb");
    expect(report.checks.every((check) => check.source === "manager")).toBe(true);
  });

  test("doctor lines wrap mid-word → on a 60-column terminal they wrap at spaces, indented", async () => {
    const dataDir = join(scratch, "data-wrap");
    const env = { SANDBOX_URL: closedUrl(), SANDBOX_DATA_DIR: dataDir, SANDBOX_RUNTIME: "local", PATH: pathWithoutCrun(), TERM: "xterm", NO_COLOR: "1" };
    // `script` gives doctor a pseudo-terminal, which stty makes 60 columns wide.
    const proc = Bun.spawn(["script", "-qec", "stty cols 60; bun run --silent doctor", "/dev/null"], { cwd: ROOT, env: { HOME: process.env.HOME ?? "/root", ...env }, stdout: "pipe", stdin: "ignore" });
    const [raw, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    expect(code).toBe(1);
    const lines = raw.replaceAll("\r", "").trimEnd().split("\n");
    for (const line of lines) expect([line, Bun.stringWidth(line) <= 60]).toEqual([line, true]);
    // Every word of every detail and fix is on the screen whole (the JSON has them unwrapped).
    const words = new Set(lines.flatMap((line) => line.trim().split(/\s+/)));
    const report = parseJson<DoctorJson>(await runScript("doctor", ["--json"], env));
    for (const check of report.checks) for (const word of `${check.detail} ${check.fix ?? ""}`.split(/\s+/).filter(Boolean)) expect([check.name, word, words.has(word)]).toEqual([check.name, word, true]);
    // Continuations are indented, never at the left edge: 60 columns leave too little room beside the
    // names, so they go under the names (8 spaces).
    const crun = lines.findIndex((line) => /^ {2}FAIL {2}crun /.test(line));
    expect(lines[crun + 1]).toMatch(/^ {8}\S/);
  });

  test("manager down, crun missing from PATH → the manager check with how to start it, and the host checks; exit 1", async () => {
    const dataDir = join(scratch, "data");
    const url = closedUrl();
    const env = { SANDBOX_URL: url, SANDBOX_DATA_DIR: dataDir, SANDBOX_RUNTIME: "local", PATH: pathWithoutCrun() };
    const result = await runScript("doctor", [], env);
    expect(result.exitCode).toBe(1);
    const text = result.stdout.replaceAll(url, "http://127.0.0.1:PORT");
    expect(text.split("\n").slice(0, 3).join("\n")).toMatchInlineSnapshot(`
      "the manager (GET /api/doctor)
        FAIL  manager                   not reachable at http://127.0.0.1:PORT
                                        fix: start it with \`bash scripts/start.sh\` (or point SANDBOX_URL at the running manager)"
    `);
    expect(text).toContain("\nthis host (without the API)\n");
    const lines = text.split("\n");
    const crun = lines.findIndex((line) => /^ {2}FAIL {2}crun +crun is not on PATH \(the local runtime needs it\)$/.test(line));
    expect(crun).toBeGreaterThan(0);
    expect(lines[crun + 1]).toMatch(/^ +fix: bash scripts\/install-runtime-deps\.sh \(as root\)$/);
    expect(text).toMatch(/\n {2}warn {2}token +\S+\/data\/api-token does not exist yet \(not required\)\n/);

    const report = parseJson<DoctorJson>(await runScript("doctor", ["--json"], env));
    expect(report.checks[0]).toEqual({ source: "manager", name: "manager", ok: false, required: true, detail: `not reachable at ${url}`, fix: "start it with `bash scripts/start.sh` (or point SANDBOX_URL at the running manager)" });
    expect(report.checks.filter((check) => check.source === "local").map((check) => check.name)).toEqual([
      "config",
      "bun",
      "crun",
      "exec agent",
      "repository view",
      "runsc",
      "kvm",
      "inotify limits",
      "root filesystem",
      "disk space (data dir)",
      "disk space (runtime dir)",
      "token",
    ]);
    expect(report.checks.find((check) => check.name === "crun")).toMatchObject({ ok: false, required: true, fix: "bash scripts/install-runtime-deps.sh (as root)" });
    // Read-only: the doctor created nothing in the data dir it was pointed at.
    expect(existsSync(dataDir)).toBe(false);
  });

  test("a token the manager refuses → the manager check says so with the fix, and the host checks run", async () => {
    const result = await m.run("doctor", ["--json"], { SANDBOX_API_TOKEN: "wrong-token" });
    expect(result.exitCode).toBe(1);
    const report = parseJson<DoctorJson>(result);
    expect(report.checks[0]).toMatchObject({ name: "manager", ok: false, detail: expect.stringContaining("missing or wrong bearer token") });
    expect(report.checks[0]!.fix).toContain("set SANDBOX_API_TOKEN");
    expect(report.checks.some((check) => check.source === "local")).toBe(true);
  });
});
