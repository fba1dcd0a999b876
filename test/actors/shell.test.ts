// The shell WebSocket end to end over real HTTP (port 0) and the real local runtime: a PTY in the VM,
// hostname, Ctrl-C, resize, exit code; refusals as typed SDK errors; a dropped client kills the shell.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { websocket } from "elysia/ws";
import { NotSandboxedError, UnauthorizedError, ValidationFailedError, type ShellConnection } from "../../sdk/index";
import { openShell } from "../../sdk/shell";
import { TEST_TOKEN } from "../helpers";
import { eventually, makeActorFixture, type ActorFixture } from "./fixture";
import { openRawWebSocket } from "./raw-websocket";

let f: ActorFixture;
let server: ReturnType<typeof Bun.serve>;
let url: string;
let repo: string;

beforeAll(async () => {
  f = await makeActorFixture();
  repo = f.makeRepo("shell");
  await f.client.sessions.register({ id: "ses_shell", directory: repo });
  await f.client.sessions.register({ id: "ses_off", directory: f.makeRepo("off") });
  await f.client.sandbox.set("ses_off", { sandboxed: false });
  // As app/main.ts serves the app: Elysia's WebSocket dispatcher, and the server the app upgrades through.
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: f.app.fetch, websocket: websocket as unknown as Bun.WebSocketHandler<never> });
  f.app.server = server;
  url = `http://127.0.0.1:${server.port}`;
}, 600_000);

afterAll(async () => {
  server?.stop(true);
  await f?.teardown();
}, 120_000);

/** A shell whose output accumulates as text, with a wait for a pattern in it (no fixed sleeps). */
function shell(sessionId: string, options: { token?: string; rows?: number; cols?: number } = {}) {
  let text = "";
  let waiter: { pattern: RegExp; resolve(): void } | undefined;
  const decoder = new TextDecoder();
  const started = Promise.withResolvers<string>();
  const connection: ShellConnection = openShell({ url, token: options.token ?? TEST_TOKEN }, sessionId, {
    rows: options.rows,
    cols: options.cols,
    onStarted: (vmName) => started.resolve(vmName),
    onOutput: (chunk) => {
      text += decoder.decode(chunk, { stream: true });
      if (waiter?.pattern.test(text)) waiter.resolve();
    },
  });
  /** Fails with the output so far when the pattern never shows up. */
  const waitFor = (pattern: RegExp) => {
    if (pattern.test(text)) return Promise.resolve();
    const { promise, resolve, reject } = Promise.withResolvers<void>();
    const timer = setTimeout(() => reject(new Error(`no ${pattern} in ${JSON.stringify(text)}`)), 20_000);
    waiter = { pattern, resolve: () => (clearTimeout(timer), resolve()) };
    return promise;
  };
  /**
   * Types `input` until `pattern` shows: bash's readline may drop what is typed in the instant around
   * its prompt after a SIGINT (measured), which a person at a keyboard never hits.
   */
  const typeUntil = async (input: string, pattern: RegExp) => {
    for (let attempt = 1; ; attempt++) {
      connection.write(input);
      if (await Promise.race([waitFor(pattern).then(() => true), Bun.sleep(1000).then(() => false)])) return;
      if (attempt === 10) throw new Error(`no ${pattern} in ${JSON.stringify(text)}`);
    }
  };
  return { connection, started: started.promise, waitFor, typeUntil, text: () => text };
}

describe("shell WebSocket", () => {
  test("an operator whose socket stops reading → the shell is paused, not its output dropped: every line arrives once it reads again", async () => {
    const lines = 3_000_000; // more on the terminal than Bun's 16 MiB send buffer holds, where frames used to be dropped
    const raw = await openRawWebSocket(server.port!, "/api/sessions/ses_shell/shell?rows=24&cols=80", TEST_TOKEN);
    try {
      raw.send("rm -f /tmp/seq-done; stty -echo; seq 1 " + lines + "; touch /tmp/seq-done; echo SEQ-DONE; exit\n");
      await eventually(() => /\d+\r\n/.test(raw.tail()), 60_000);
      raw.pause();
      await Bun.sleep(3_000);
      // seq writes it all in a moment when nothing holds it: it is still waiting on the operator.
      expect((await f.client.run("ses_shell", { command: "test -e /tmp/seq-done && echo done || echo waiting" })).stdout.trim()).toBe("waiting");
      raw.resume();
      await eventually(() => raw.tail().includes("SEQ-DONE"), 120_000);
      // bash ends its bracketed-paste mode with a bare \r before the first line.
      const numbers = raw.binary().split(/\r\n|\r/).filter((line) => /^\d+$/.test(line)).map(Number);
      expect(numbers.length).toBe(lines);
      expect(numbers.every((n, i) => n === i + 1)).toBe(true);
    } finally {
      raw.close();
    }
  }, 240_000);


  test("a PTY in the session's VM → hostname, size, Ctrl-C, resize, the exit code", async () => {
    const s = shell("ses_shell", { rows: 30, cols: 100 });
    s.connection.write("hostname; pwd; stty size; tty\n"); // typed before the VM is even up
    const vmName = await s.started;
    expect(vmName).toBe((await f.client.sandbox.get("ses_shell")).vmName);
    await s.waitFor(new RegExp(`${vmName}\\r\\n${repo}\\r\\n30 100\\r\\n/dev/pts/\\d+`));
    // Output of the command itself proves bash gave it the terminal: a Ctrl-C typed before that (measured:
    // right after bash read the line) goes to bash, and sleep lives on in the background.
    await s.typeUntil("sh -c 'echo sleeping; exec sleep 100'\n", /\rsleeping\r\n/);
    s.connection.write("\x03");
    // The prompt is back long before 100 s: the guest's terminal turned Ctrl-C into SIGINT for sleep.
    await s.waitFor(/\^C\r\n.*# $/);
    s.connection.resize(50, 120);
    await s.typeUntil("stty size\n", /50 120\r\n/);
    s.connection.write("exit 3\n");
    expect(await s.connection.exited).toEqual({ exitCode: 3, timedOut: false, cancelled: false, oomKilled: false });
    await eventually(async () => (await f.client.vms.list()).vms[0]?.runningExecs === 0);
  }, 120_000);

  test("a session that is not sandboxed → NotSandboxedError, nothing runs", async () => {
    const error = (await shell("ses_off").connection.exited.catch((e) => e)) as NotSandboxedError;
    expect(error).toBeInstanceOf(NotSandboxedError);
    expect(error.status).toBe(409);
  });

  test("a wrong token → UnauthorizedError (the refused handshake's reason, read over HTTP)", async () => {
    const error = await shell("ses_shell", { token: "wrong-token-0123456789" }).connection.exited.catch((e) => e);
    expect(error).toBeInstanceOf(UnauthorizedError);
  });

  test("a size out of range → ValidationFailedError from the SDK; the manager refuses the handshake too", async () => {
    expect(() => shell("ses_shell", { rows: 0 })).toThrow(ValidationFailedError);
    const response = await fetch(`${url}/api/sessions/ses_shell/shell?rows=0`, {
      headers: { authorization: `Bearer ${TEST_TOKEN}`, upgrade: "websocket", connection: "Upgrade", "sec-websocket-version": "13", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==" },
    });
    expect(response.status).toBe(422);
    expect(((await response.json()) as { code: string }).code).toBe("VALIDATION_FAILED");
  });

  test("the client disconnects → the shell and what it runs are killed in the VM", async () => {
    const s = shell("ses_shell");
    await s.started;
    s.connection.write("sleep 300\n");
    await s.waitFor(/sleep 300\r\n/);
    await eventually(async () => (await f.client.vms.list()).vms[0]?.runningExecs === 1);
    s.connection.close();
    await eventually(async () => (await f.client.vms.list()).vms[0]?.runningExecs === 0);
    const ps = await f.client.run("ses_shell", { command: "ps -eo args= | grep -c '^sleep 300' || true", cwd: repo });
    expect(ps.stdout.trim()).toBe("0");
  }, 120_000);
});
