// The installed `session-sandbox` CLI end to end: installed with `bun link` into a temp BUN_INSTALL, run
// from other directories against the real manager process over the real local runtime.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import packageJson from "../../package.json" with { type: "json" };
import { eventually } from "../actors/fixture";
import { parseForward } from "../../cli/commands/ports";
import { parseJson, ROOT, startAdminManager, type AdminManager, type ScriptResult } from "../admin/fixture";

let m: AdminManager;
let repo: string;
let install: string;
let elsewhere: string;
let bin: string;

beforeAll(async () => {
  m = await startAdminManager({ vms: true });
  repo = m.makeRepo("cli");
  await m.client.sessions.register({ id: "ses_cli", directory: repo });
  install = mkdtempSync("/tmp/ss-cli-install-");
  elsewhere = mkdtempSync("/tmp/ss-cli-cwd-");
  const link = Bun.spawnSync(["bun", "link"], { cwd: ROOT, env: { ...process.env, BUN_INSTALL: install }, stdout: "pipe", stderr: "pipe" });
  expect(link.exitCode).toBe(0);
  bin = join(install, "bin", "session-sandbox");
}, 600_000);
afterAll(async () => {
  Bun.spawnSync(["bun", "unlink"], { cwd: ROOT, env: { ...process.env, BUN_INSTALL: install } });
  rmSync(install, { recursive: true, force: true });
  rmSync(elsewhere, { recursive: true, force: true });
  await m?.cleanup();
}, 120_000);

/** The installed binary, run from a directory outside the repository, with the operator's env; `stdin` piped in. */
async function cli(args: string[], options: { env?: Record<string, string>; cwd?: string; stdin?: string | Uint8Array } = {}): Promise<ScriptResult> {
  const proc = Bun.spawn([bin, ...args], {
    cwd: options.cwd ?? elsewhere,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/root", ...m.env, ...options.env },
    stdout: "pipe",
    stderr: "pipe",
    stdin: options.stdin === undefined ? "ignore" : new Blob([options.stdin]),
  });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { exitCode, stdout, stderr };
}

/** As cli(), with binary output, and the input written through a pipe as the command takes it. */
async function cliBytes(args: string[], stdin: Uint8Array): Promise<{ exitCode: number; stdout: Uint8Array; stderr: string }> {
  const proc = Bun.spawn([bin, ...args], { cwd: elsewhere, env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/root", ...m.env }, stdout: "pipe", stderr: "pipe", stdin: "pipe" });
  const writing = (async () => {
    for (let offset = 0; offset < stdin.byteLength; offset += 65_536) {
      proc.stdin.write(stdin.subarray(offset, offset + 65_536));
      await proc.stdin.flush();
    }
    await proc.stdin.end();
  })();
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).bytes(), new Response(proc.stderr).text(), proc.exited, writing]);
  return { exitCode, stdout, stderr };
}

describe("the installed CLI", () => {
  test("bun link → a session-sandbox on the install's PATH that runs from another directory; --version", async () => {
    const version = await cli(["--version"]);
    expect(version).toEqual({ exitCode: 0, stdout: `session-sandbox ${packageJson.version}\n`, stderr: "" });
    const help = await cli(["--help"]);
    expect(help.exitCode).toBe(0);
    for (const name of ["vms", "sessions", "exec", "logs", "events", "inspect", "shell", "stats", "rm", "token"]) expect(help.stdout).toContain(`  ${name} `);
  });

  test("rm outside the repository, next to a file named like its argument → asks the manager; the file stays", async () => {
    const name = "ocm-session-000000000000";
    writeFileSync(join(elsewhere, name), "keep me\n");
    const result = await cli(["rm", name]);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain(`no VM named "${name}"`);
    expect(result.stderr).toContain("session-sandbox vms"); // the fix names the CLI, not `bun run`
    expect(readFileSync(join(elsewhere, name), "utf8")).toBe("keep me\n");
  });

  test("an unknown subcommand named like a host program (whoami) → usage error 2; it never runs the host's program", async () => {
    const result = await cli(["whoami"]);
    expect(result).toMatchObject({ exitCode: 2, stdout: "" });
    expect(result.stderr).toContain('unknown command "whoami"');
  });

  test("admin subcommands keep --json, --help and the exit codes", async () => {
    const sessions = parseJson<{ sessions: { id: string }[] }>(await cli(["sessions", "--json"]));
    expect(sessions.sessions.map((s) => s.id)).toEqual(["ses_cli"]);
    expect(parseJson<{ enabled: boolean }>(await cli(["settings", "--json"])).enabled).toBe(true);
    const help = await cli(["vms", "--help"]);
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toStartWith("usage: session-sandbox vms");
    expect((await cli(["vms", "--bogus"])).exitCode).toBe(2);
    expect((await cli(["vms"], { env: { SANDBOX_URL: "http://127.0.0.1:9" } })).exitCode).toBe(3);
    expect((await cli(["sandbox", "ses_ghost"])).exitCode).toBe(1);
  });

  test("token → prints the token (from SANDBOX_API_TOKEN here)", async () => {
    expect(await cli(["token"])).toMatchObject({ exitCode: 0, stdout: `${m.env.SANDBOX_API_TOKEN}\n` });
  });

  test("a subcommand whose module is not in this build → says so, exit 2", async () => {
    const { SUBCOMMANDS, main } = await import("../../cli/session-sandbox");
    SUBCOMMANDS.set("missing", { summary: "test", script: join(elsewhere, "missing.ts") });
    const writes: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = ((text: string) => writes.push(text) > 0) as typeof process.stderr.write;
    try {
      expect(await main(["missing"])).toBe(2);
    } finally {
      process.stderr.write = write;
      SUBCOMMANDS.delete("missing");
    }
    expect(writes.join("")).toBe("session-sandbox: missing is not available in this build\n");
  });
});

describe("exec, logs, events, inspect", () => {
  test("exec → streams stdout and stderr to ours and exits with the remote code; cwd defaults to the session's", async () => {
    const result = await cli(["exec", "ses_cli", "--", "pwd; echo to-err >&2; exit 7"]);
    expect(result).toEqual({ exitCode: 7, stdout: `${repo}\n`, stderr: "to-err\n" });
    const words = await cli(["exec", "ses_cli", "--cwd", "/tmp", "--", "echo", "a", "b"]);
    expect(words.exitCode).toBe(125); // /tmp is not inside the session's mounts: nothing ran
    expect(words.stderr).toContain("is outside the session's mounts");
    expect(await cli(["exec", "ses_cli", "--", "echo", "a", "b"])).toEqual({ exitCode: 0, stdout: "a b\n", stderr: "" });
    expect((await cli(["exec", "ses_cli"])).exitCode).toBe(125);
    expect((await cli(["exec", "ses_cli", "--timeout", "300ms", "--", "sleep 30"])).exitCode).toBe(124);
  });

  test("exec interrupted (SIGINT) → the command is cancelled in the VM, exit 130", async () => {
    const proc = Bun.spawn([bin, "exec", "ses_cli", "--", "echo ready; sleep 300"], { cwd: elsewhere, env: { PATH: process.env.PATH ?? "", ...m.env }, stdout: "pipe", stderr: "pipe" });
    const reader = proc.stdout.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("ready\n");
    proc.kill("SIGINT");
    expect(await proc.exited).toBe(130);
    // The CLI leaves at once; the manager records the cancellation as the VM's process ends.
    await eventually(async () => (await m.client.execs.list("ses_cli", { limit: 1 })).execs[0]!.finishedAt !== null);
    const [last] = (await m.client.execs.list("ses_cli", { limit: 1 })).execs;
    expect(last).toMatchObject({ command: "echo ready; sleep 300", cancelled: true });
  });

  test("logs → the commands oldest first with outcome, duration and output tail; --json", async () => {
    const text = await cli(["logs", "ses_cli", "-n", "4"]);
    expect(text.exitCode).toBe(0);
    expect(text.stdout).toMatch(/^\d{4}-\d\d-\d\dT\S+Z  exit 7  [\d.]+(ms|s)  \$ pwd; echo to-err >&2; exit 7\n/);
    expect(text.stdout).toContain(`\n  ${repo}\n`);
    expect(text.stdout).toContain("\n  to-err\n");
    expect(text.stdout).toMatch(/timed out  [\d.]+(ms|s)  \$ sleep 30\n/);
    expect(text.stdout).toMatch(/cancelled  [\d.]+(ms|s)  \$ echo ready; sleep 300\n  ready\n$/);
    expect(text.stdout.indexOf("exit 7")).toBeLessThan(text.stdout.indexOf("$ echo a b"));
    const json = parseJson<{ execs: { command: string; exitCode: number | null; startedAt: string }[] }>(await cli(["logs", "ses_cli", "--json", "-n", "2"]));
    expect(json.execs.map((e) => e.command)).toEqual(["sleep 30", "echo ready; sleep 300"]);
    expect(json.execs[0]!.startedAt).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  test("logs -f → prints each command as it finishes, until Ctrl-C (exit 0)", async () => {
    const proc = Bun.spawn([bin, "logs", "ses_cli", "-f", "-n", "1", "--json"], { cwd: elsewhere, env: { PATH: process.env.PATH ?? "", ...m.env }, stdout: "pipe", stderr: "pipe" });
    const lines = linesOf(proc.stdout);
    expect(JSON.parse((await lines.next()).value!)).toMatchObject({ command: "echo ready; sleep 300" }); // the history so far
    await m.client.run("ses_cli", { command: "echo followed" });
    expect(JSON.parse((await lines.next()).value!)).toMatchObject({ command: "echo followed", exitCode: 0, outputTail: "followed\n" });
    proc.kill("SIGINT");
    expect(await proc.exited).toBe(0);
  });

  test("events → the buffered events, one line each; -f --since follows after an id", async () => {
    const all = await cli(["events"]);
    expect(all.exitCode).toBe(0);
    expect(all.stdout).toMatch(/^\d{4}-\d\d-\d\dT\S+Z  [0-9A-Z]{26}  session   ses_cli registered/m);
    expect(all.stdout).toMatch(/exec      finished exit=7 call=[0-9A-Z]{26} vm=ocm-session-\w+ session=ses_cli/);
    const json = (await cli(["events", "--json"])).stdout.trim().split("\n").map((line) => JSON.parse(line) as { id: string; type: string });
    const recent = await cli(["events", "--since", "10m", "--json"]);
    expect(recent).toMatchObject({ exitCode: 0, stderr: "" });
    expect(recent.stdout.trim().split("\n")).toHaveLength(json.length); // the whole run is within 10 minutes
    const last = json.at(-1)!;
    const proc = Bun.spawn([bin, "events", "-f", "--since", json.at(-2)!.id, "--json"], { cwd: elsewhere, env: { PATH: process.env.PATH ?? "", ...m.env }, stdout: "pipe", stderr: "pipe" });
    const lines = linesOf(proc.stdout);
    expect(JSON.parse((await lines.next()).value!).id).toBe(last.id); // replayed after --since
    await m.client.settings.patch({ idleStopMinutes: 45 });
    expect(JSON.parse((await lines.next()).value!)).toMatchObject({ type: "settings", keys: ["idleStopMinutes"] }); // live
    proc.kill("SIGINT");
    expect(await proc.exited).toBe(0);
  });

  test("inspect <session> and inspect <vm> → the same sandbox: session, settings, VM, last commands", async () => {
    const vmName = (await m.client.sandbox.get("ses_cli")).vmName;
    await m.client.run("ses_cli", { command: "true" });
    const bySession = parseJson<{ session: { id: string }; sandbox: { vmName: string }; vm: { name: string; status: string } | null; execs: unknown[] }>(await cli(["inspect", "ses_cli", "--json"]));
    expect(bySession).toMatchObject({ session: { id: "ses_cli" }, sandbox: { vmName }, vm: { name: vmName, status: "running" } });
    expect(bySession.execs).toHaveLength(5);
    const byVm = parseJson<typeof bySession>(await cli(["inspect", vmName, "--json"]));
    expect(byVm.session.id).toBe("ses_cli");
    const text = await cli(["inspect", vmName]);
    expect(text.exitCode).toBe(0);
    expect(text.stdout).toContain("SESSION  ses_cli");
    expect(text.stdout).toContain(vmName);
    expect(text.stdout).toMatch(/usage: +[\d.]+ CPU s, memory/);
    const missing = await cli(["inspect", "ocm-session-ffffffffffff"]);
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr).toContain("no VM or session named");
  });
});

describe("what a docker user types first", () => {
  test("exec <session> <command…> without `--`; -e K=V, -e K from here, -w DIR; options before the command only", async () => {
    expect(await cli(["exec", "ses_cli", "ls", "-a", "/"])).toMatchObject({ exitCode: 0, stderr: "" });
    const env = await cli(["exec", "-e", "FOO=one two", "-e", "FROM_HERE", "-w", repo, "ses_cli", "echo \"$FOO|$FROM_HERE\"; pwd"], { env: { FROM_HERE: "here" } });
    expect(env).toEqual({ exitCode: 0, stdout: `one two|here\n${repo}\n`, stderr: "" });
    // After the command starts, a word that looks like an option is the command's.
    expect(await cli(["exec", "ses_cli", "ls", "-d", "-e", "/"])).toMatchObject({ exitCode: 2 }); // ls's own -e: not ours
    expect(await cli(["exec", "ses_cli", "ls", "-d", "/"])).toMatchObject({ exitCode: 0, stdout: "/\n" });
    expect((await cli(["exec", "-e", "1BAD", "ses_cli", "true"])).stderr).toContain("-e NAME=VALUE");
  });

  test("exec -t with a command → exit 125 and a one-line hint naming the right form", async () => {
    const tty = await cli(["exec", "-t", "ses_cli", "ls"]);
    expect(tty.exitCode).toBe(125);
    expect(tty.stderr).toContain("session-sandbox shell ses_cli");
  });

  test("piped stdin → the command reads it: `echo hi | exec ses cat`, -i too; 5 MiB through sha256sum; 12 MiB through cat, byte for byte", async () => {
    expect(await cli(["exec", "ses_cli", "cat"], { stdin: "hi\n" })).toEqual({ exitCode: 0, stdout: "hi\n", stderr: "" });
    expect(await cli(["exec", "-i", "ses_cli", "--", "tr a-z A-Z"], { stdin: "shout\n" })).toEqual({ exitCode: 0, stdout: "SHOUT\n", stderr: "" });
    const five = randomBytes(5 * 1024 * 1024);
    const hashed = await cli(["exec", "ses_cli", "sha256sum"], { stdin: five });
    expect(hashed.stdout.split(" ")[0]).toBe(createHash("sha256").update(five).digest("hex"));
    // Output as large as the input while it is still being sent: the upload and the answer flow together.
    const twelve = randomBytes(12 * 1024 * 1024);
    const echoed = await cliBytes(["exec", "ses_cli", "cat"], twelve);
    expect(echoed.exitCode).toBe(0);
    expect(createHash("sha256").update(echoed.stdout).digest("hex")).toBe(createHash("sha256").update(twelve).digest("hex"));
  });

  test("cp → a file in and out (mode kept), into a VM directory, a directory as a tar on stdin and stdout, a hint for a local directory", async () => {
    const local = join(elsewhere, "tool.sh");
    writeFileSync(local, "#!/bin/sh\necho tool\n", { mode: 0o750 });
    expect(await cli(["cp", local, "ses_cli:/home/agent/bin/tool.sh"])).toMatchObject({ exitCode: 0 });
    expect((await cli(["exec", "ses_cli", "/home/agent/bin/tool.sh; stat -c %a /home/agent/bin/tool.sh"])).stdout).toBe("tool\n750\n");
    expect(await cli(["cp", local, "ses_cli:/tmp"])).toMatchObject({ exitCode: 0, stdout: expect.stringContaining("ses_cli:/tmp/tool.sh") });
    const back = join(elsewhere, "back.sh");
    expect(await cli(["cp", "ses_cli:/home/agent/bin/tool.sh", back])).toMatchObject({ exitCode: 0 });
    expect([readFileSync(back, "utf8"), (statSync(back).mode & 0o777).toString(8)]).toEqual(["#!/bin/sh\necho tool\n", "750"]);
    // A directory: out as a tar on stdout, in as a tar on stdin; never unpacked by the CLI itself.
    const tar = Bun.spawnSync([bin, "cp", "ses_cli:/home/agent/bin", "-"], { cwd: elsewhere, env: { PATH: process.env.PATH ?? "", ...m.env } });
    expect(Bun.spawnSync(["tar", "-t"], { stdin: tar.stdout }).stdout.toString()).toContain("./tool.sh");
    expect(await cli(["cp", "-", "ses_cli:/tmp/unpacked"], { stdin: tar.stdout })).toMatchObject({ exitCode: 0 });
    expect((await cli(["exec", "ses_cli", "cat /tmp/unpacked/tool.sh"])).stdout).toBe("#!/bin/sh\necho tool\n");
    const dirOut = await cli(["cp", "ses_cli:/home/agent/bin", elsewhere]);
    expect(dirOut.exitCode).toBe(2);
    expect(dirOut.stderr).toContain("| tar -x -C");
    expect((await cli(["cp", elsewhere, "ses_cli:/tmp/x"])).stderr).toContain("tar -C");
    expect((await cli(["cp", "ses_cli:relative", back])).stderr).toContain("must be absolute");
  });

  test("exec -d → a call id at once; ps lists it; logs <session> <call id> -f follows it live; kill ends its tree", async () => {
    const started = await cli(["exec", "-d", "ses_cli", "sleep 2345 & for i in $(seq 1 40); do echo tick $i; sleep 0.1; done; exit 5"]);
    expect(started.exitCode).toBe(0);
    const callID = started.stdout.trim();
    expect(callID).toMatch(/^[0-9A-Z]{26}$/);
    expect((await cli(["ps", "ses_cli"])).stdout).toMatch(new RegExp(`${callID}.*background`));
    // Following to its end: every tick, and its own exit code.
    const followed = await cli(["logs", "ses_cli", callID, "-f"]);
    expect(followed.exitCode).toBe(5);
    expect(followed.stdout).toContain("tick 1\n");
    expect(followed.stdout).toContain("tick 40\n");
    const again = await cli(["exec", "-d", "ses_cli", "sleep 3456"]);
    expect(await cli(["kill", "ses_cli", again.stdout.trim()])).toMatchObject({ exitCode: 0 });
    expect((await cli(["ps", "ses_cli"])).stdout).not.toContain(again.stdout.trim());
    // A command that ended runs no more: kill names running commands only.
    expect((await cli(["kill", "ses_cli", callID])).stderr).toContain("no command with call id");
  });

  test("port-forward → the URL of a server in the VM, which answers from this host; ports lists it; --close ends it", async () => {
    await cli(["exec", "ses_cli", "mkdir -p /tmp/www && echo from-vm > /tmp/www/index.html && (cd /tmp/www && python3 -m http.server 8124 >/dev/null 2>&1 &) && sleep 1"]);
    const opened = await cli(["port-forward", "ses_cli", ":8124", "--json"]);
    expect(opened.exitCode).toBe(0);
    const { forward } = JSON.parse(opened.stdout) as { forward: { url: string; hostPort: number } };
    expect(await (await fetch(forward.url)).text()).toBe("from-vm\n");
    expect((await cli(["ports", "ses_cli"])).stdout).toContain(forward.url);
    expect(await cli(["ports", "ses_cli", "--close", "8124"])).toMatchObject({ exitCode: 0, stdout: expect.stringContaining("closed") });
    expect(await fetch(forward.url).catch((e: unknown) => e)).toBeInstanceOf(Error);
    expect((await cli(["port-forward", "ses_cli", "x:8124"])).stderr).toContain("HOST_PORT");
  });

  test("port-forward's [HOST_PORT:]PORT → host first, as docker -p and kubectl port-forward", () => {
    expect(parseForward("8000")).toEqual({ port: 8000, hostPort: 8000 });
    expect(parseForward("9000:8000")).toEqual({ port: 8000, hostPort: 9000 });
    expect(parseForward(":8000")).toEqual({ port: 8000 });
    expect(() => parseForward("70000")).toThrow("not a port");
  });

  test("stats, logs and rm take a session id or a VM name alike", async () => {
    const vmName = (await m.client.sandbox.get("ses_cli")).vmName;
    await cli(["exec", "ses_cli", "true"]);
    const bySession = parseJson<{ vms: Array<{ name: string }> }>(await cli(["stats", "ses_cli", "--json"]));
    expect(bySession.vms.map((vm) => vm.name)).toEqual([vmName]);
    const byVm = parseJson<{ execs: unknown[] }>(await cli(["logs", vmName, "--json"]));
    expect(byVm.execs.length).toBeGreaterThan(0);
    expect(await cli(["stats", "ses_nobody"])).toMatchObject({ exitCode: 1, stderr: expect.stringContaining("no VM or session named") });
  });

  test("sessions create <dir> registers a root; exec runs there; sessions rm deletes it, and rm <session> of another removes its VM", async () => {
    const dir = m.makeRepo("cli-created");
    const created = parseJson<{ id: string; directory: string }>(await cli(["sessions", "create", dir, "--json"]));
    expect(created.directory).toBe(dir);
    expect(created.id).toMatch(/^ses_/);
    expect(await cli(["exec", created.id, "pwd"])).toEqual({ exitCode: 0, stdout: `${dir}\n`, stderr: "" });
    const removed = await cli(["rm", created.id]);
    expect(removed.exitCode).toBe(0);
    expect(removed.stdout).toContain("ocm-session-");
    expect(await cli(["sessions", "rm", created.id])).toMatchObject({ exitCode: 0, stdout: expect.stringContaining(created.id) });
    expect((await cli(["sessions", "frobnicate"])).exitCode).toBe(2);
  });
});

describe("shell completion", () => {
  /** The completions bash offers for `words` (the last one being typed), with the script sourced as the README says. */
  async function complete(words: string[]): Promise<string[]> {
    const script = `source <(session-sandbox completion bash); COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${words.length - 1}; _session_sandbox; printf '%s\\n' "\${COMPREPLY[@]}"`;
    const result = await cli(["completion", "bash"]); // the script itself must come out clean
    expect(result).toMatchObject({ exitCode: 0, stderr: "" });
    const proc = Bun.spawn(["bash", "-c", script], { env: { PATH: `${join(install, "bin")}:${process.env.PATH ?? ""}`, HOME: process.env.HOME ?? "/root", ...m.env }, stdout: "pipe", stderr: "pipe" });
    const [stdout, exitCode] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    expect(exitCode).toBe(0);
    return stdout.split("\n").filter((line) => line !== "");
  }

  test("completion bash loads in bash: subcommands, and the manager's session ids where a command takes one", async () => {
    expect(await complete(["session-sandbox", "ex"])).toEqual(["exec"]);
    expect(await complete(["session-sandbox", "exec", "ses_c"])).toContain("ses_cli");
    expect(await complete(["session-sandbox", "exec", "-e", "A=1", "ses_c"])).toContain("ses_cli");
    expect(await complete(["session-sandbox", "exec", "ses_cli", "l"])).toEqual([]); // the command's own words
    expect(parseJson<unknown>(await cli(["sessions", "--json"]))).toBeDefined();
    expect((await cli(["sessions", "-q"])).stdout.split("\n")).toContain("ses_cli");
    for (const shell of ["zsh", "fish"]) expect(await cli(["completion", shell])).toMatchObject({ exitCode: 0, stderr: "" });
    expect((await cli(["completion", "tcsh"])).exitCode).toBe(2);
  });
});

/** The lines of a child's stdout, as they come. */
async function* linesOf(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of stream) {
    buffered += decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      yield buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
    }
  }
}
