// The shell shim's two paths, the compiled helper (the default) and SANDBOX_SHIM=bun (shim-main.ts), held to
// the same answers. The manager here is a FAKE (a Bun.serve on loopback) wherever the case is a manager
// misbehaving in a way the real one cannot be made to (bad answers, broken streams, a stream that never
// ends); the last block runs commands in a real VM through a real manager.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { makeTempDir } from "../helpers";
import { makeProject, SHIM, startTestManager, type TestManager } from "../e2e/fixture";
import { prepareLocalRuntime } from "../runtime/local-target";

const dir = makeTempDir("ss-shim-helper-");
const PATHS = [
  { name: "helper", env: {} as Record<string, string> },
  { name: "SANDBOX_SHIM=bun", env: { SANDBOX_SHIM: "bun" } as Record<string, string> },
];

type Seen = { method: string; path: string; body: string; aborted: Promise<void> };
let answer: (request: Request) => Response | Promise<Response> = () => new Response("unset", { status: 500 });
const seen: Seen[] = [];
const fake = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch(request) {
    const aborted = new Promise<void>((resolve) => request.signal.addEventListener("abort", () => resolve()));
    seen.push({ method: request.method, path: new URL(request.url).pathname, body: request.method === "POST" ? await request.clone().text() : "", aborted });
    return answer(request);
  },
});
afterAll(() => {
  fake.stop(true);
  rmSync(dir, { recursive: true, force: true });
});

const SANDBOXED = () => Response.json({ sandboxed: true, source: "default" });
/** An exec answer streaming these NDJSON lines, one write each. */
function stream(lines: string[]): Response {
  const body = new ReadableStream({
    async pull(controller) {
      const line = lines.shift();
      if (line === undefined) return controller.close();
      controller.enqueue(new TextEncoder().encode(line));
      await Bun.sleep(1);
    },
  });
  return new Response(body, { headers: { "content-type": "application/x-ndjson" } });
}
const b64 = (text: string | Uint8Array) => Buffer.from(text).toString("base64");
const event = (value: object) => `${JSON.stringify(value)}\n`;

function route(view: () => Response, exec: () => Response) {
  answer = (request) => (new URL(request.url).pathname.endsWith("/exec") ? exec() : view());
}

let markers = 0;
function shimEnv(path: Record<string, string>, env: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, SANDBOX_URL: `http://127.0.0.1:${fake.port}`, SANDBOX_API_TOKEN: "t", SANDBOX_MANAGER_TIMEOUT_MS: "2000", SANDBOX_SESSION_ID: "ses_1", ...path, ...env };
}
/** Spawned without blocking: the fake manager answers from this same process. */
async function spawn(argv: string[], env: Record<string, string>, cwd = dir) {
  const child = Bun.spawn(argv, { cwd, env, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).bytes(), new Response(child.stderr).text(), child.exited]);
  return { code, stdout: Buffer.from(stdout), stderr };
}
function run(path: Record<string, string>, command: string, env: Record<string, string> = {}) {
  return spawn([SHIM, "-c", command], shimEnv(path, env));
}
/** `touch <marker>`: whether it ran on the host is the question. */
async function runMarker(path: Record<string, string>, env: Record<string, string> = {}) {
  const marker = join(dir, `marker-${++markers}`);
  const result = await run(path, `touch ${marker}`, env);
  return { code: result.code, stderr: result.stderr, ran: existsSync(marker) };
}

for (const path of PATHS) {
  describe(`shim (${path.name}) against a fake manager`, () => {
    test("a sandbox view that is not JSON → 126, nothing runs on the host", async () => {
      route(() => new Response("ok"), () => new Response("", { status: 500 }));
      const result = await runMarker(path.env);
      expect(result).toMatchObject({ code: 126, ran: false });
      expect(result.stderr).toContain("session-sandbox: not run");
    });

    test("a sandbox view without a boolean `sandboxed` → 126, nothing runs on the host", async () => {
      route(() => Response.json({ sandboxed: "no" }), () => new Response("", { status: 500 }));
      expect(await runMarker(path.env)).toMatchObject({ code: 126, ran: false });
      route(() => Response.json({}), () => new Response("", { status: 500 }));
      expect(await runMarker(path.env)).toMatchObject({ code: 126, ran: false });
    });

    test("no session identity and settings without a boolean `enabled` → 126", async () => {
      route(() => Response.json({ enabled: "false" }), () => new Response("", { status: 500 }));
      expect(await runMarker(path.env, { SANDBOX_SESSION_ID: "" })).toMatchObject({ code: 126, ran: false });
    });

    test("settings say sandboxing is off → a shell without a session runs on the host", async () => {
      route(() => Response.json({ enabled: false }), () => new Response("", { status: 500 }));
      expect(await runMarker(path.env, { SANDBOX_SESSION_ID: "" })).toMatchObject({ code: 0, ran: true });
    });

    test("the command reaches the manager byte for byte (quotes, newlines, backslashes, control characters, UTF-8), with cwd and call id", async () => {
      const command = `printf '%s\\n' "a \\"quoted\\" \\\\ word" 'single '"'"' quote'\n\techo $'\\x01\\x1b[0m' "é 日本 🎉"\r\n# ${"\u0001\u007f"} end \\`;
      route(SANDBOXED, () => stream([event({ type: "exit", exitCode: 0, timedOut: false, cancelled: false })]));
      seen.length = 0;
      expect((await run(path.env, command, { SANDBOX_CALL_ID: "call-1" })).code).toBe(0);
      const exec = seen.find((entry) => entry.path === "/api/sessions/ses_1/exec")!;
      expect(JSON.parse(exec.body)).toEqual({ command, cwd: dir, callID: "call-1" });
    });

    test("streamed stdout and stderr are written byte for byte (NUL, invalid UTF-8, split lines), the remote exit code is ours", async () => {
      const binary = new Uint8Array([0, 1, 2, 0xff, 0xfe, 10, 0, 13]);
      route(
        SANDBOXED,
        () =>
          stream([
            event({ type: "started", vmName: "vm", callID: null }),
            event({ type: "stdout", data: b64(binary) }),
            event({ type: "heartbeat" }),
            // One event split across writes, then two in one write.
            event({ type: "stderr", data: b64("err 1\n") }).slice(0, 10),
            event({ type: "stderr", data: b64("err 1\n") }).slice(10) + event({ type: "stdout", data: b64("tail") }),
            event({ type: "exit", exitCode: 7, timedOut: false, cancelled: false }),
          ]),
      );
      const result = await run(path.env, "whatever");
      expect(result.code).toBe(7);
      expect([...result.stdout]).toEqual([...binary, ...Buffer.from("tail")]);
      expect(result.stderr).toBe("err 1\n");
    });

    test("timed out → 124 with the note; cancelled → 130", async () => {
      route(SANDBOXED, () => stream([event({ type: "exit", exitCode: 137, timedOut: true, cancelled: false })]));
      const timedOut = await run(path.env, "sleep 99");
      expect(timedOut.code).toBe(124);
      expect(timedOut.stderr).toBe("session-sandbox: the command exceeded the sandbox exec timeout and was killed\n");
      route(SANDBOXED, () => stream([event({ type: "exit", exitCode: 143, timedOut: false, cancelled: true })]));
      expect((await run(path.env, "sleep 99")).code).toBe(130);
    });

    test("an exec refusal (503 with the manager's error) → 126 with its message", async () => {
      route(SANDBOXED, () => Response.json({ code: "RUNTIME_FAILED", message: "the runtime is down" }, { status: 503 }));
      const result = await run(path.env, "true");
      expect(result.code).toBe(126);
      expect(result.stderr).toContain("the runtime is down");
    });

    test("an error event mid-stream → 126 with its message, after the output so far", async () => {
      route(SANDBOXED, () => stream([event({ type: "stdout", data: b64("partial") }), event({ type: "error", code: "RUNTIME_FAILED", message: "the VM went away" })]));
      const result = await run(path.env, "true");
      expect(result).toMatchObject({ code: 126 });
      expect(result.stdout.toString()).toBe("partial");
      expect(result.stderr).toContain("the VM went away");
    });

    test("a stream that ends without an exit status, or with a line that is not JSON → 126", async () => {
      route(SANDBOXED, () => stream([event({ type: "stdout", data: b64("x") })]));
      expect((await run(path.env, "true")).code).toBe(126);
      route(SANDBOXED, () => stream(["not json\n", event({ type: "exit", exitCode: 0, timedOut: false, cancelled: false })]));
      expect((await run(path.env, "true")).code).toBe(126);
    });

    test("SIGTERM while the command runs → 143, and the stream is dropped (the manager's cue to kill it)", async () => {
      route(SANDBOXED, () => new Response(new ReadableStream({ pull: () => new Promise(() => undefined) })));
      seen.length = 0;
      const child = Bun.spawn([SHIM, "-c", "sleep 99"], { cwd: dir, env: shimEnv(path.env), stdout: "ignore", stderr: "ignore" });
      while (!seen.some((entry) => entry.path.endsWith("/exec"))) await Bun.sleep(10);
      await Bun.sleep(50);
      child.kill("SIGTERM");
      expect(await child.exited).toBe(143);
      await seen.find((entry) => entry.path.endsWith("/exec"))!.aborted;
    });
  });
}

describe("the compiled helper", () => {
  // (the Bun path's Eden client does not encode the id in the GET: "ses/../x" reaches /api/session-sandbox/x)
  test("the session id is one path segment, however it is spelt", async () => {
    route(SANDBOXED, () => stream([event({ type: "exit", exitCode: 0, timedOut: false, cancelled: false })]));
    seen.length = 0;
    await run({}, "true", { SANDBOX_SESSION_ID: "ses/../x y?" });
    expect(seen.map((entry) => entry.path)).toEqual(["/api/session-sandbox/ses%2F..%2Fx%20y%3F", "/api/sessions/ses%2F..%2Fx%20y%3F/exec"]);
  });

  test("a user shell that is the shim under another name is not taken for the user's shell (no loop), wherever the helper is built", async () => {
    const link = join(dir, "mysh");
    symlinkSync(SHIM, link);
    const build = makeTempDir("ss-shim-build-");
    route(() => Response.json({ enabled: false }), () => new Response("", { status: 500 }));
    for (const env of [{}, { SANDBOX_SHIM_BUILD_DIR: build }] as Array<Record<string, string>>) {
      seen.length = 0;
      expect(await runMarker({}, { ...env, SANDBOX_SESSION_ID: "", SANDBOX_USER_SHELL: link })).toMatchObject({ code: 0, ran: true });
      expect(seen.length).toBe(1); // one look at the settings, then /bin/bash ran it
    }
    rmSync(link);
    rmSync(build, { recursive: true, force: true });
  });

  test("text that is not UTF-8 is refused (126), never rewritten", async () => {
    route(SANDBOXED, () => stream([event({ type: "exit", exitCode: 0, timedOut: false, cancelled: false })]));
    seen.length = 0;
    const result = await spawn(["bash", "-c", `exec "$0" -c "$(printf 'echo \\xff')"`, SHIM], shimEnv({}));
    expect(result.code).toBe(126);
    expect(result.stderr).toContain("not valid UTF-8");
    expect(seen.some((entry) => entry.path.endsWith("/exec"))).toBe(false);
  });

  test("without a C compiler it is not built and the shim refuses (126) with the reason; nothing runs on the host", async () => {
    const build = makeTempDir("ss-shim-build-");
    route(() => Response.json({ sandboxed: false }), () => new Response("", { status: 500 }));
    const result = await runMarker({}, { SANDBOX_SHIM_BUILD_DIR: build, SANDBOX_SHIM_CC: "/nonexistent/gcc" });
    expect(result).toMatchObject({ code: 126, ran: false });
    expect(result.stderr).toContain("could not be built (no C compiler");
    expect(existsSync(join(build, "shim-helper"))).toBe(false);
    rmSync(build, { recursive: true, force: true });
  });

  test("built on first use from the project's sources, reproducibly (two builds, the same bytes)", async () => {
    const [a, b] = [makeTempDir("ss-shim-build-"), makeTempDir("ss-shim-build-")];
    route(() => Response.json({ sandboxed: false }), () => new Response("", { status: 500 }));
    expect(await runMarker({}, { SANDBOX_SHIM_BUILD_DIR: a })).toMatchObject({ code: 0, ran: true });
    expect(await runMarker({}, { SANDBOX_SHIM_BUILD_DIR: b })).toMatchObject({ code: 0, ran: true });
    expect(Buffer.compare(readFileSync(join(a, "shim-helper")), readFileSync(join(b, "shim-helper")))).toBe(0);
    rmSync(a, { recursive: true, force: true });
    rmSync(b, { recursive: true, force: true });
  });
});

describe("shim against the real manager and a real VM", () => {
  let manager: TestManager;
  let project: string;
  const sessionID = "ses_shimhelper1";
  beforeAll(async () => {
    manager = await startTestManager(await prepareLocalRuntime());
    project = makeProject(dir, "repo");
    await manager.client.sessions.register({ id: sessionID, parentID: null, forkOf: null, directory: project });
  }, 300_000);
  afterAll(async () => manager?.cleanUp(), 120_000);

  // Quotes, newlines, backslashes, UTF-8 and output with NUL and non-UTF-8 bytes: the VM's bash and the
  // host's bash run the same text, so equal output means the command arrived unchanged.
  const command = `printf '%s|' "a \\"q\\" \\\\ b" 'it'"'"'s' "é 日本"; printf '\\0\\377\\n'\necho "line 2	tab" >&2\nexit 5`;

  for (const path of PATHS) {
    test(`${path.name}: the command runs in the VM, output and exit code as the same command on a host shell`, async () => {
      const inVm = Bun.spawnSync([SHIM, "-c", command], { cwd: project, env: shimEnv(path.env, { SANDBOX_URL: manager.process.url, SANDBOX_API_TOKEN: manager.process.token, SANDBOX_SESSION_ID: sessionID }) });
      const onHost = Bun.spawnSync(["bash", "-c", command], { cwd: project });
      expect(inVm.stderr.toString()).toBe(onHost.stderr.toString());
      expect(Buffer.compare(inVm.stdout, onHost.stdout)).toBe(0);
      expect(inVm.exitCode).toBe(5);
      const inside = Bun.spawnSync([SHIM, "-c", "cat /proc/1/comm"], { cwd: project, env: shimEnv(path.env, { SANDBOX_URL: manager.process.url, SANDBOX_API_TOKEN: manager.process.token, SANDBOX_SESSION_ID: sessionID }) });
      expect(inside.stdout.toString()).not.toContain("systemd");
    }, 120_000);
  }
});
