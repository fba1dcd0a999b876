// The CLI on a real terminal (a PTY from script(1)) printing what a guest controls: a command's output
// (exec), its stored output tail (logs) and a session's directory name (sessions). An OSC 52 clipboard
// write and a title change are shown as text, never obeyed; colors pass; `--raw` and a pipe get the bytes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { ROOT, startAdminManager, type AdminManager } from "./fixture";

const CLI = join(ROOT, "cli/session-sandbox.ts");
const OSC52 = "\x1b]52;c;cHduZWQ=\x07";
const SHOWN = "^[]52;c;cHduZWQ=^G";
let admin: AdminManager;
let repo: string;

beforeAll(async () => {
  admin = await startAdminManager({ vms: true });
  repo = admin.makeRepo("ttyrepo");
  await admin.client.sessions.register({ id: "ses_tty", directory: repo });
}, 600_000);

afterAll(async () => {
  await admin?.cleanup();
}, 120_000);

/** The CLI with `args` on a PTY; what the terminal received (script's typescript, without its header). */
function onTerminal(args: string[]): string {
  const quoted = [CLI, ...args].map((word) => `'${word.replaceAll("'", "'\\''")}'`).join(" ");
  const result = Bun.spawnSync(["script", "-qec", quoted, "/dev/null"], { env: { ...process.env, ...admin.env, TERM: "xterm", NO_COLOR: "" }, stdout: "pipe", stderr: "pipe", timeout: 120_000 });
  return result.stdout.toString();
}

function piped(args: string[]): string {
  return Bun.spawnSync([CLI, ...args], { env: { ...process.env, ...admin.env }, stdout: "pipe", stderr: "pipe", timeout: 120_000 }).stdout.toString();
}

describe("guest-controlled text on the operator's terminal", () => {
  const command = `printf '${OSC52.replace("\x1b", "\\033").replace("\x07", "\\a")}\\033]0;owned\\a\\033[32mgreen\\033[0m\\n'`;

  test("exec on a terminal → escape sequences shown, colors kept; --raw and a pipe → the bytes", () => {
    const shown = onTerminal(["exec", "ses_tty", "--", command]);
    expect(shown).toContain(SHOWN);
    expect(shown).toContain("^[]0;owned^G");
    expect(shown).toContain("\x1b[32mgreen\x1b[0m");
    expect(shown).not.toContain("\x1b]");
    expect(onTerminal(["exec", "ses_tty", "--raw", "--", command])).toContain(OSC52);
    expect(piped(["exec", "ses_tty", "--", command])).toBe(`${OSC52}\x1b]0;owned\x07\x1b[32mgreen\x1b[0m\n`);
  });

  test("logs (the stored output tail) and sessions (a directory named with an escape) → shown, not obeyed", async () => {
    const logs = onTerminal(["logs", "ses_tty"]);
    expect(logs).toContain(SHOWN);
    expect(logs).not.toContain("\x1b]");
    const odd = join(repo, "\x1b]0;title\x07dir");
    mkdirSync(odd);
    await admin.client.sessions.register({ id: "ses_tty_odd", directory: odd });
    const sessions = onTerminal(["sessions"]);
    expect(sessions).toContain("^[]0;title^Gdir");
    expect(sessions).not.toContain("\x1b]");
  });
});
