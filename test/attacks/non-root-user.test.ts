// A user who is not root, on the manager's host, with the steps of docs/non-root.md. The manager
// runs as root; `users add <name> --install` gives the user a token of their own; as that user, the CLI and
// OpenCode (its plugin and shell shim) run sandboxed commands in the user's VM with nothing configured but
// the manager's URL. The user's token cannot get a VM that mounts what the user could not read and write,
// and sees nothing of anyone else's sessions. A real account is created for the test and removed after it.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { makeTempDir } from "../helpers";
import { prepareLocalRuntime } from "../runtime/local-target";
import { createSession, opencodeConfig, PLUGIN, shellMode, startTestManager, type TestManager } from "../e2e/fixture";
import { startMockLlm, type MockLlm } from "../e2e/mock-llm";
import { startOpencode, type OpencodeServer } from "../e2e/opencode-server";

setDefaultTimeout(120_000);

const ROOT = join(import.meta.dir, "../..");
const CLI = join(ROOT, "cli/session-sandbox.ts");
const NAME = `ssuser${randomBytes(3).toString("hex")}`;

let manager: TestManager;
let account: { uid: number; gid: number; home: string };
let repo: string;
let scratch: string;
/** A shared OpenCode directory of the manager's (SANDBOX_SHARED_DIRS), mounted into the manager's sessions' VMs. */
let sharedDir: string;
let llm: MockLlm | undefined;
let oc: OpencodeServer | undefined;

function run(argv: string[], env: Record<string, string> = {}) {
  const result = Bun.spawnSync(argv, { env: { PATH: process.env.PATH ?? "", ...env }, stdout: "pipe", stderr: "pipe" });
  return { exitCode: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

/** A command as the user, in a clean environment: their HOME, the PATH, and the manager's URL, nothing else. */
function asUser(argv: string[]) {
  const env = ["env", "-i", `HOME=${account.home}`, `PATH=${process.env.PATH}`, `SANDBOX_URL=${manager.process.url}`];
  return run(["setpriv", `--reuid=${account.uid}`, `--regid=${account.gid}`, "--init-groups", "--", ...env, ...argv]);
}

/** The user's own request with their own token (read from the file `users add --install` wrote), as curl would send it. */
function userRequest(method: string, path: string, body?: unknown) {
  const script = `curl -sS -w '\\n%{http_code}' -X ${method} -H "authorization: Bearer $(cat ~/.local/state/session-sandbox/api-token)" -H 'content-type: application/json' ${body === undefined ? "" : `--data-binary @-`} "$SANDBOX_URL${path}"`;
  const result = Bun.spawnSync(["setpriv", `--reuid=${account.uid}`, `--regid=${account.gid}`, "--init-groups", "--", "env", "-i", `HOME=${account.home}`, `PATH=${process.env.PATH}`, `SANDBOX_URL=${manager.process.url}`, "sh", "-c", script], {
    stdin: body === undefined ? "ignore" : new TextEncoder().encode(JSON.stringify(body)),
    stdout: "pipe",
    stderr: "pipe",
  });
  const lines = result.stdout.toString().trimEnd().split("\n");
  const status = Number(lines.pop());
  const text = lines.join("\n");
  return { status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

beforeAll(async () => {
  const image = await prepareLocalRuntime();
  const added = run(["useradd", "--create-home", "--shell", "/bin/bash", NAME]);
  if (added.exitCode !== 0) throw new Error(`useradd failed: ${added.stderr}`);
  const [, , uid, gid, , home] = run(["getent", "passwd", NAME]).stdout.trim().split(":");
  account = { uid: Number(uid), gid: Number(gid), home: home! };
  sharedDir = makeTempDir("ss-nonroot-shared-");
  writeFileSync(join(sharedDir, "other-sessions-output"), "tool output of the manager's sessions\n");
  manager = await startTestManager(image, { SANDBOX_SHARED_DIRS: sharedDir });
  // The user's repository, made by the user.
  repo = join(account.home, "repo");
  expect(asUser(["sh", "-c", `git init -q ${repo} && git -C ${repo} -c user.email=u@test -c user.name=u commit -q --allow-empty -m init`]).exitCode).toBe(0);
  scratch = makeTempDir("ss-nonroot-");
  chmodSync(scratch, 0o755);
}, 600_000);

afterAll(async () => {
  await oc?.stop();
  llm?.stop();
  await manager?.cleanUp();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  if (sharedDir) rmSync(sharedDir, { recursive: true, force: true });
  run(["userdel", "--remove", NAME]);
}, 120_000);

describe("a user who is not root", () => {
  test("root: `session-sandbox users add <name> --install` → the token in the user's own ~/.local/state/session-sandbox/api-token, 0600, theirs", () => {
    const result = run([CLI, "users", "add", NAME, "--install"], { SANDBOX_URL: manager.process.url, SANDBOX_API_TOKEN: manager.process.token });
    expect(result).toMatchObject({ exitCode: 0 });
    const file = join(account.home, ".local/state/session-sandbox/api-token");
    expect(result.stdout).toContain(file);
    const stat = statSync(file);
    expect({ mode: stat.mode & 0o777, uid: stat.uid }).toEqual({ mode: 0o600, uid: account.uid });
  });

  test("the user: registers a session for their repository and runs a command in its VM with the CLI, nothing configured but the URL", () => {
    expect(userRequest("POST", "/api/sessions", { id: "ses_user_own", directory: repo })).toMatchObject({ status: 201 });
    const result = asUser([CLI, "exec", "ses_user_own", "--", "hostname; pwd; id -u"]);
    expect(result.stderr).toBe("");
    const [hostname, pwd, uid] = result.stdout.trim().split("\n");
    expect({ exitCode: result.exitCode, pwd, uid }).toEqual({ exitCode: 0, pwd: repo, uid: "0" });
    expect(hostname).toStartWith("ocm-session-");
    // The manager's shared OpenCode directories are not the user's: their VM does not mount them.
    expect(asUser([CLI, "exec", "ses_user_own", "--", `cat ${sharedDir}/other-sessions-output 2>&1 || echo absent`]).stdout).toContain("absent");
  });

  test("the user: a directory they cannot read → 403 DIRECTORY_NOT_ACCESSIBLE; nothing registered", () => {
    const secret = join(scratch, "root-only");
    mkdirSync(secret, { mode: 0o700 });
    const refused = userRequest("POST", "/api/sessions", { id: "ses_user_secret", directory: secret });
    expect(refused).toMatchObject({ status: 403, body: { code: "DIRECTORY_NOT_ACCESSIBLE" } });
    expect(String(refused.body.message)).toContain(secret);
    expect(userRequest("GET", "/api/sessions/ses_user_secret")).toMatchObject({ status: 404 });
  });

  test("the user: a directory they may write inside a repository they may not → its first command refused (403), no VM boots", async () => {
    const theirs = join(scratch, "root-repo");
    mkdirSync(theirs, { mode: 0o755 });
    expect(run(["git", "init", "-q", theirs]).exitCode).toBe(0);
    const open = join(theirs, "open");
    mkdirSync(open);
    chmodSync(open, 0o777);
    expect(userRequest("POST", "/api/sessions", { id: "ses_user_inside", directory: open })).toMatchObject({ status: 201 });
    // The VM would mount the git top level, the root's repository, read-write: refused before anything boots.
    const exec = userRequest("POST", "/api/sessions/ses_user_inside/exec", { command: "touch /proof" });
    expect(exec).toMatchObject({ status: 403, body: { code: "DIRECTORY_NOT_ACCESSIBLE" } });
    expect(String(exec.body.message)).toContain(theirs);
    const vmName = ((await manager.client.sandbox.get("ses_user_inside")) as { vmName: string }).vmName;
    expect((await manager.client.vms.list()).vms.map((vm) => vm.name)).not.toContain(vmName);
  });

  test("the user: their registered directory swapped for a link to a root-only one before the first command → refused (403), no VM boots", async () => {
    const secret = join(scratch, "root-only-2");
    mkdirSync(secret, { mode: 0o700 });
    const swapped = join(account.home, "swapped");
    expect(asUser(["sh", "-c", `mkdir ${swapped} && git init -q ${swapped}`]).exitCode).toBe(0);
    expect(userRequest("POST", "/api/sessions", { id: "ses_user_swap", directory: swapped })).toMatchObject({ status: 201 });
    // The check at registration passed; the user then puts a link to a directory only root may use in its place.
    expect(asUser(["sh", "-c", `rm -rf ${swapped} && ln -s ${secret} ${swapped}`]).exitCode).toBe(0);
    const exec = userRequest("POST", "/api/sessions/ses_user_swap/exec", { command: "touch proof" });
    expect(exec).toMatchObject({ status: 403, body: { code: "DIRECTORY_NOT_ACCESSIBLE" } });
    const vmName = ((await manager.client.sandbox.get("ses_user_swap")) as { vmName: string }).vmName;
    expect((await manager.client.vms.list()).vms.map((vm) => vm.name)).not.toContain(vmName);
    expect(run(["ls", "-A", secret]).stdout).toBe("");
    expect(userRequest("DELETE", "/api/sessions/ses_user_swap")).toMatchObject({ status: 200 });
  });

  test("the user: another's session is not there (404), the list shows only theirs, the manager's own routes are 403", async () => {
    await manager.client.sessions.register({ id: "ses_managers", directory: join(scratch) });
    // The control for the shared directories: the manager's own session's VM does mount them.
    expect((await manager.client.run("ses_managers", { command: `cat ${sharedDir}/other-sessions-output` })).stdout).toBe("tool output of the manager's sessions\n");
    expect(userRequest("GET", "/api/sessions/ses_managers")).toMatchObject({ status: 404, body: { code: "SESSION_NOT_FOUND" } });
    expect(userRequest("POST", "/api/sessions/ses_managers/exec", { command: "true" })).toMatchObject({ status: 404 });
    expect(userRequest("PUT", "/api/session-sandbox/ses_managers", { sandboxed: false })).toMatchObject({ status: 404 });
    expect(userRequest("POST", "/api/sessions", { id: "ses_user_child", parentID: "ses_managers", directory: repo })).toMatchObject({ status: 404, body: { code: "PARENT_NOT_FOUND" } });
    const listed = userRequest("GET", "/api/sessions").body.sessions as Array<{ id: string }>;
    expect(listed.map((s) => s.id).sort()).toEqual(["ses_user_inside", "ses_user_own"]);
    const vms = userRequest("GET", "/api/vms").body.vms as Array<{ rootSessionID: string }>;
    expect(vms.map((vm) => vm.rootSessionID)).toEqual(["ses_user_own"]);
    for (const [method, path] of [["PATCH", "/api/settings/sandbox"], ["GET", "/api/users"], ["GET", "/api/events"], ["POST", "/api/vms/sweep"], ["GET", "/api/secrets"]] as const) {
      expect([method, path, userRequest(method, path, method === "GET" ? undefined : {}).status]).toEqual([method, path, 403]);
    }
    expect(userRequest("GET", "/api/settings/sandbox")).toMatchObject({ status: 200 });
  });

  test("through OpenCode run as the user: `!hostname` runs in the user's VM (the plugin and shim find the user's token themselves)", async () => {
    llm = startMockLlm();
    const project = join(account.home, "repo");
    const root = join(account.home, "opencode-scratch");
    mkdirSync(root, { recursive: true });
    // The plugin gets only the manager's URL; its token comes from the user's own token file, by default.
    oc = await startOpencode({
      root,
      projectDir: project,
      config: opencodeConfig(llm.url, [[PLUGIN, { url: manager.process.url }]]),
      env: { XDG_STATE_HOME: join(account.home, ".local/state"), SANDBOX_URL: manager.process.url },
      runAs: { uid: account.uid, gid: account.gid },
    });
    const sessionID = await createSession(oc);
    const shell = await shellMode(oc, sessionID, "hostname; id -u");
    const [hostname, uid] = String(shell.state.output).trim().split("\n");
    expect(hostname).toStartWith("ocm-session-");
    expect(uid).toBe("0");
    // The session is the user's: the manager lists it under their token.
    const listed = userRequest("GET", "/api/sessions").body.sessions as Array<{ id: string }>;
    expect(listed.map((s) => s.id)).toContain(sessionID);
  }, 300_000);
});
