// Attacks through paths the guest can write, each run from inside a real VM through
// the exec API (or through registration), with the manager answering health within 1 s throughout.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MountsChangedError, UnsafeMountError } from "../../sdk/index";
import { makeActorFixture, type ActorFixture } from "../actors/fixture";
import { deniedBy } from "../../app/services/mount-deny-list";
import { mountsOf, pinSessionMounts } from "../../app/services/mounts";
import { snapshotDatabase } from "../helpers";
import { whileResponsive } from "./responsive";

let f: ActorFixture;
let hostSecretDir: string;
beforeAll(async () => {
  f = await makeActorFixture();
  await f.client.settings.patch({ maxRunningVms: 16 });
  hostSecretDir = f.makeRepo("host-secret");
  writeFileSync(join(hostSecretDir, "secret.txt"), "host-only\n");
}, 600_000);
afterAll(async () => f?.teardown(), 120_000);

const run = (id: string, command: string, cwd: string) => f.client.run(id, { command, cwd });
const git = (cwd: string, ...args: string[]) =>
  Bun.spawnSync(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", cwd, ...args], { stdout: "pipe", stderr: "pipe" });
const commitAll = (repo: string, message: string) => {
  git(repo, "add", "-A");
  return git(repo, "commit", "-q", "-m", message);
};

describe("guest paths", () => {
  test("guest swaps its session directory for a symlink to a host directory → refused in the VM; a swap made from outside → next command refused, the host directory never mounted", async () => {
    const repo = f.makeRepo("monorepo");
    const sub = join(repo, "packages", "app");
    mkdirSync(sub, { recursive: true });
    await f.client.sessions.register({ id: "ses_swap", directory: sub });
    expect((await run("ses_swap", "pwd", sub)).stdout).toBe(`${sub}\n`);
    // The attack itself, from inside the VM: the session directory is a mount point there.
    const inVm = await whileResponsive(f, () => run("ses_swap", `cd .. && rm -rf app 2>&1; ln -sfn ${f.dataDir} app 2>&1; test -L app && echo swapped`, sub));
    expect(inVm.stdout).not.toContain("swapped");
    expect(lstatSync(sub).isDirectory()).toBe(true);
    // The same swap made outside this VM (another process, or another session whose VM mounts the
    // parent): the pins refuse every later command, also from a fresh VM (toggle off, on).
    // The directories that later replace it are made now, while the pinned one lives: a directory made
    // after it is freed could take its inode number, and would then rightly count as the same directory.
    const others = { a: join(repo, "packages", "other-a"), b: join(repo, "packages", "other-b") };
    for (const other of Object.values(others)) mkdirSync(other);
    for (const target of [f.dataDir, hostSecretDir]) {
      await Bun.$`rm -rf ${sub} && ln -s ${target} ${sub}`.quiet();
      const next = await whileResponsive(f, () => run("ses_swap", `cat ${target}/secret.txt ${target}/api-token 2>&1; ls ${target}`, repo).catch((e) => e));
      expect(next).toBeInstanceOf(MountsChangedError);
      expect(next.message).toContain(`${sub} is a symbolic link`);
      await f.client.sandbox.set("ses_swap", { sandboxed: false });
      await f.client.sandbox.set("ses_swap", { sandboxed: true });
      expect(await run("ses_swap", "true", repo).catch((e) => e)).toBeInstanceOf(MountsChangedError);
      // Replaced by another real directory, made while the pinned one lived (above).
      const other = target === f.dataDir ? others.a : others.b;
      await Bun.$`rm -f ${sub} && mv ${other} ${sub}`.quiet();
      const replaced = await run("ses_swap", "true", repo).catch((e) => e);
      expect(replaced).toBeInstanceOf(MountsChangedError);
      expect(replaced.message).toContain("was replaced by another directory");
    }
    // Registered again, the session pins the new directory and sees only its repository.
    await f.client.sessions.delete("ses_swap");
    await f.client.sessions.register({ id: "ses_swap", directory: sub });
    const after = await run("ses_swap", `ls ${hostSecretDir} 2>&1; ls ${f.dataDir} 2>&1; pwd`, sub);
    expect(after.stdout).toContain("No such file or directory");
    expect(after.stdout).not.toContain("secret.txt");
    expect(after.stdout).not.toContain("api-token");
  });

  test("guest replaces .git by a symlink to another repository's linked worktree → refused; nothing of that repository is mounted", async () => {
    // An unrelated repository with a linked worktree whose main repository holds a planted hook.
    const other = f.makeRepo("unrelated");
    commitAll(other, "first");
    const otherWorktree = join(other, "..", "unrelated-wt");
    expect(git(other, "worktree", "add", "-q", otherWorktree).exitCode).toBe(0);
    const victim = f.makeRepo("victim");
    await f.client.sessions.register({ id: "ses_dotgit", directory: victim });
    await run("ses_dotgit", "true", victim);
    // Inside the VM, .git is a mount point: it cannot be renamed, removed or replaced.
    const attempt = await run("ses_dotgit", `mv .git .git-old 2>&1; rm -rf .git 2>&1; ln -s ${otherWorktree}/.git .git 2>&1; test -d .git && test ! -L .git && echo still-ours`, victim);
    expect(attempt.stdout).toContain("still-ours");
    expect(lstatSync(join(victim, ".git")).isDirectory()).toBe(true);
    // Done on the host before a session's first command (e.g. by another session's guest): refused by
    // rule, since .git is a symlink, without following it to the other repository's common dir.
    const planted = f.makeRepo("planted");
    await Bun.$`rm -rf ${join(planted, ".git")}`.quiet();
    symlinkSync(join(otherWorktree, ".git"), join(planted, ".git"));
    await f.client.sessions.register({ id: "ses_planted", directory: planted });
    const refused = await whileResponsive(f, () => run("ses_planted", `ls ${other}/.git 2>&1`, planted).catch((e) => e));
    expect(refused).toBeInstanceOf(UnsafeMountError);
    expect(refused.message).toContain(".git is a symbolic link");
  });

  test("guest plants a hook, core.fsmonitor, core.hooksPath or a commondir → refused in the VM; host git status and commit run nothing", async () => {
    const repo = f.makeRepo("hooked");
    commitAll(repo, "first");
    await f.client.sessions.register({ id: "ses_hooks", directory: repo });
    const marker = join(f.makeRepo("markers"), "pwned");
    const attack = await whileResponsive(f, () =>
      run(
        "ses_hooks",
        [
          `printf '#!/bin/sh\\ntouch ${marker}\\n' > .git/hooks/pre-commit; echo hook=$?`,
          `chmod +x .git/hooks/pre-commit 2>/dev/null`,
          `git config core.fsmonitor "touch ${marker}"; echo fsmonitor=$?`,
          `git config core.hooksPath /tmp; echo hookspath=$?`,
          `mkdir -p evil && printf '[core]\\n\\tfsmonitor = touch ${marker}\\n' > evil/config && echo "$PWD/evil" > .git/commondir; echo commondir=$?`,
          `mv .git/config .git/config.old; echo mvconfig=$?`,
          `mkdir .git/modules/x; echo modules=$?`,
          `echo '*.c filter=evil' > .git/info/attributes; echo info=$?`,
        ].join("; ") + " 2>/dev/null",
        repo,
      ),
    );
    for (const step of ["hook", "fsmonitor", "hookspath", "commondir", "mvconfig", "modules", "info"]) {
      expect(attack.stdout).toMatch(new RegExp(`${step}=[1-9]`));
    }
    // Normal git work in the guest still succeeds.
    const work = await run(
      "ses_hooks",
      "git config --global user.email g@example.com && git config --global user.name guest && echo a > a.txt && git add a.txt && git commit -qm two && git branch side && git checkout -q side && echo b > b.txt && git stash -u -q && git stash pop -q >/dev/null && git add b.txt && git commit -qm three && git checkout -q master && git rebase -q side >/dev/null && git log --format=%s | head -3",
      repo,
    );
    expect(work).toMatchObject({ exitCode: 0, stdout: "three\ntwo\nfirst\n" });
    // The repository owner's next host git commands run nothing the guest wrote.
    expect(git(repo, "status").exitCode).toBe(0);
    writeFileSync(join(repo, "host.txt"), "host\n");
    expect(commitAll(repo, "host commit").exitCode).toBe(0);
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(join(repo, ".git", "commondir"))).toBe(false);
  });

  test("guest in a linked worktree rewrites its .git pointer or the main repository's config → refused; git still works", async () => {
    const main = f.makeRepo("wt-main");
    commitAll(main, "first");
    const worktree = join(main, "..", "wt-linked");
    expect(git(main, "worktree", "add", "-q", "-b", "feature", worktree).exitCode).toBe(0);
    await f.client.sessions.register({ id: "ses_wt_guard", directory: worktree });
    const attack = await whileResponsive(f, () =>
      run(
        "ses_wt_guard",
        `echo "gitdir: $PWD/fake" > .git; echo pointer=$?; git config core.fsmonitor "touch /tmp/x"; echo fsmonitor=$?; echo '#!/bin/sh' > ${main}/.git/hooks/post-checkout; echo hook=$?; ` +
          `echo wt > wt.txt && git add wt.txt && git -c user.name=g -c user.email=g@example.com commit -qm in-worktree && git log -1 --format=%s && git rev-parse --abbrev-ref HEAD`,
        worktree,
      ),
    );
    expect(attack.stdout).toMatch(/pointer=[1-9][\s\S]*fsmonitor=[1-9][\s\S]*hook=[1-9][\s\S]*in-worktree\nfeature\n$/);
    // The commit made in the VM is in the main repository's history, seen from the host.
    expect(git(main, "log", "-1", "--format=%s", "feature").stdout.toString()).toBe("in-worktree\n");
    expect(readFileSync(join(worktree, ".git"), "utf8")).toContain(join(main, ".git", "worktrees"));
  });

  test("repository mounts → nosuid,nodev in the VM (crun 1.8.1 drops them on read-write binds; rnosuid/rnodev restore them)", async () => {
    const repo = f.makeRepo("flags");
    await f.client.sessions.register({ id: "ses_flags", directory: repo });
    const mountinfo = (await run("ses_flags", "cat /proc/self/mountinfo", repo)).stdout.split("\n");
    const lineFor = (path: string) => mountinfo.findLast((line) => line.split(" ")[4] === path) ?? "";
    for (const path of [repo, "/home/agent"]) {
      expect(lineFor(path).split(" ")[5]!.split(",")).toEqual(expect.arrayContaining(["nosuid", "nodev"]));
    }
    // The repository comes through its view (one mount, no nested guard mounts a host rename could detach).
    expect(lineFor(repo)).toContain(" - fuse.repo-fs session-sandbox-repo ");
    expect(mountinfo.filter((line) => (line.split(" ")[4] ?? "").startsWith(`${repo}/`))).toEqual([]);
  });

  test("a mount that is not the pinned directory when the VM starts (a swap between check and mount) → the VM is stopped before any command", async () => {
    const repo = f.makeRepo("race");
    const spec = {
      name: "ss-attack-race",
      image: f.image,
      cpus: 1,
      memoryMib: 128,
      // The identity of another directory: what the driver finds mounted must be refused.
      mounts: [{ hostPath: repo, pin: { dev: lstatSync(hostSecretDir).dev, ino: lstatSync(hostSecretDir).ino } }],
      tmpSizeMib: 8,
      volume: { name: "ss-attack-race" },
      labels: {},
      network: { mode: "none" as const },
    };
    const error = await f.driver.create(spec).catch((e) => e);
    expect(error.message).toContain("stopped before any command ran");
    expect(error.message).toContain("not the directory pinned");
    expect(await f.driver.inspect("ss-attack-race")).toBeUndefined();
  });

  test("guest runs git init (and a nested clone) in a project outside git → its repository is kept as .git-session-sandbox, which host git never reads; git works in the guest", async () => {
    const project = f.makeRepo("plain");
    rmSync(join(project, ".git"), { recursive: true, force: true });
    await f.client.sessions.register({ id: "ses_git_init", directory: project });
    const id = "-c user.name=g -c user.email=g@example.com";
    const inVm = await whileResponsive(f, () =>
      run("ses_git_init", `git init -q . && git config core.fsmonitor "touch /tmp/x" && echo '#!/bin/sh' > .git/hooks/pre-commit && git add -A && git ${id} commit -qm guest && git log --format=%s && git clone -q . sub/copy && ls -a sub/copy | grep -c '^.git$'`, project),
    );
    expect(inVm).toMatchObject({ exitCode: 0, stdout: "guest\n1\n" });
    // On the host: no repository there (host git in the project finds none), the guest's under the quarantine name.
    for (const dir of [project, join(project, "sub", "copy")]) {
      expect(existsSync(join(dir, ".git"))).toBe(false);
      expect(existsSync(join(dir, ".git-session-sandbox"))).toBe(true);
    }
    expect(git(project, "rev-parse", "--git-dir").exitCode).not.toBe(0);
  });

  test("guest writes OpenCode project config (an MCP server in opencode.json, a .opencode plugin) → refused in the VM, in the top and down to the session directory", async () => {
    const repo = f.makeRepo("oc-config");
    commitAll(repo, "first");
    const sub = join(repo, "packages", "web");
    mkdirSync(sub, { recursive: true });
    await f.client.sessions.register({ id: "ses_oc_config", directory: sub });
    const mcp = `{"mcp":{"evil":{"type":"local","command":["touch","/tmp/pwned"]}}}`;
    const attack = await whileResponsive(f, () =>
      run(
        "ses_oc_config",
        [
          `echo '${mcp}' > opencode.json; echo sub_json=$?`,
          `echo '${mcp}' > opencode.jsonc; echo sub_jsonc=$?`,
          `mkdir -p .opencode/plugin; echo sub_plugin=$?`,
          `echo '${mcp}' > ${repo}/opencode.json; echo top_json=$?`,
          `echo 'export default async () => ({})' > ${repo}/.opencode/evil.ts; echo top_dir=$?`,
          `cd .. && mv web web2; echo rename=$?`,
        ].join("; ") + " 2>/dev/null",
        sub,
      ),
    );
    for (const step of ["sub_json", "sub_jsonc", "sub_plugin", "top_json", "top_dir", "rename"]) expect(attack.stdout).toMatch(new RegExp(`${step}=[1-9]`));
    // Refused by name, not by a placeholder: nothing was written into the repository.
    for (const name of ["opencode.json", "opencode.jsonc", ".opencode"]) {
      expect(existsSync(join(repo, name))).toBe(false);
      expect(existsSync(join(sub, name))).toBe(false);
    }
    expect(git(repo, "status", "--porcelain").stdout.toString()).toBe("");
    // Another package of the monorepo, which the session's directory does not lead through, too.
    const other = await run("ses_oc_config", `mkdir -p ${repo}/packages/b && echo '${mcp}' > ${repo}/packages/b/opencode.json; echo other=$?`, sub);
    expect(other.stdout).toMatch(/other=[1-9]/);
    expect(existsSync(join(repo, "packages", "b", "opencode.json"))).toBe(false);
  });

  test("guest replaces .git by a FIFO → refused in the VM; a FIFO .git at first resolution is refused at once, the manager stays responsive", async () => {
    const repo = f.makeRepo("fifo");
    await f.client.sessions.register({ id: "ses_fifo", directory: repo });
    const inVm = await whileResponsive(f, () => run("ses_fifo", "rm -rf .git 2>/dev/null; mkfifo .git 2>&1; test -d .git && echo dir", repo));
    expect(inVm.stdout).toContain("dir");
    expect((await run("ses_fifo", "echo next", repo)).stdout).toBe("next\n");
    // Before a session's first command, the host finds a FIFO where .git should be, or a worktree
    // pointer to a FIFO: refused without reading it.
    const planted = f.makeRepo("fifo-planted");
    await Bun.$`rm -rf ${join(planted, ".git")} && mkfifo ${join(planted, ".git")}`.quiet();
    await f.client.sessions.register({ id: "ses_fifo_planted", directory: planted });
    const refused = await whileResponsive(f, () => run("ses_fifo_planted", "true", planted).catch((e) => e));
    expect(refused).toBeInstanceOf(UnsafeMountError);
    expect(refused.message).toContain("FIFO");
    const pointer = f.makeRepo("fifo-pointer");
    const fakeGitDir = join(pointer, "..", "fifo-pointer-gitdir");
    mkdirSync(fakeGitDir);
    await Bun.$`rm -rf ${join(pointer, ".git")} && mkfifo ${join(fakeGitDir, "commondir")}`.quiet();
    writeFileSync(join(pointer, ".git"), `gitdir: ${fakeGitDir}\n`);
    await f.client.sessions.register({ id: "ses_fifo_pointer", directory: pointer });
    expect(await whileResponsive(f, () => run("ses_fifo_pointer", "true", pointer).catch((e) => e))).toBeInstanceOf(Error);
  });

  test("registering /root, /boot, /home, the data dir, a parent of it or the runtime dir → 400 naming the rule, nothing stored", async () => {
    const before = snapshotDatabase(f.db);
    const cases: [string, string][] = [
      ["/", "shared system directory"],
      ["/root", "shared system directory"],
      ["/boot", "system directory /boot"],
      ["/etc/ssh", "system directory /etc"],
      ["/home", "shared system directory"],
      ["/home/someone", "whole home directory"],
      [f.dataDir, "data directory"],
      [join(f.dataDir, ".."), "/tmp is a shared system directory"],
      [f.stateDir, "runtime directory"],
    ];
    for (const [directory, rule] of cases) {
      const id = `ses_deny_${cases.findIndex(([d]) => d === directory)}`;
      const error = await whileResponsive(f, () => f.client.sessions.register({ id, directory }).catch((e) => e));
      expect(error).toBeInstanceOf(UnsafeMountError);
      expect(error.status).toBe(400);
      expect(error.message).toContain(rule);
    }
    expect(snapshotDatabase(f.db)).toBe(before);
  });

  test("a repository whose .git points at a git dir inside it → that git dir is guarded as a git dir by the repository view; nothing is written to the repository", () => {
    const repo = f.makeRepo("inner-gitdir");
    Bun.spawnSync(["mv", join(repo, ".git"), join(repo, ".realgit")]);
    writeFileSync(join(repo, ".git"), "gitdir: .realgit\n");
    const own = { dataDir: f.dataDir, runtimeDir: f.stateDir };
    const pins = pinSessionMounts(repo, own);
    expect(pins.gitDir).toBe(join(repo, ".realgit"));
    const [top] = mountsOf(pins, []).mounts;
    expect(top).toMatchObject({ hostPath: repo, guard: { keep: [], gitDirs: [".realgit"] } });
    // No placeholders any more: the view refuses OpenCode config by name, at any depth.
    expect(existsSync(join(repo, "opencode.json"))).toBe(false);
  });

  test("a directory containing or inside the manager's own directories → denied by rule", () => {
    const own = { dataDir: "/srv/manager/data", runtimeDir: "/srv/runtime", rootfsCacheDir: "/var/cache/ss" };
    expect(deniedBy("/srv/manager", own)).toContain("contains the manager's data directory");
    expect(deniedBy("/srv/runtime/vms/x", own)).toContain("inside the manager's runtime directory");
    expect(deniedBy("/var/cache", own)).toContain("contains the manager's guest image cache");
    expect(deniedBy("/srv/project", own)).toBeNull();
    expect(deniedBy("/root/project", own)).toBeNull();
  });

  test("another local user or VM connects to a VM's egress proxy socket → permission denied; the socket is 0660 and the VM's own", async () => {
    const repo = f.makeRepo("egress-owner");
    await f.client.sessions.register({ id: "ses_egress_owner", directory: repo });
    await f.client.sandbox.set("ses_egress_owner", { network: { mode: "allowlist", allow: ["loopback"] } });
    const vmName = (await run("ses_egress_owner", "true", repo)).vmName;
    const socket = f.egress.socketPathFor(vmName);
    const stats = lstatSync(socket);
    expect(stats.mode & 0o777).toBe(0o660);
    expect(stats.uid).not.toBe(0);
    // Another host uid (any local user, or another VM's uid range) is refused by the kernel.
    const connect = `import socket; s = socket.socket(socket.AF_UNIX); s.connect(${JSON.stringify(socket)}); print("connected")`;
    const other = await whileResponsive(f, async () => Bun.spawnSync(["setpriv", "--reuid=4242", "--regid=4242", "--clear-groups", "/usr/bin/python3", "-c", connect], { stderr: "pipe" }));
    expect(other.exitCode).not.toBe(0);
    expect(other.stderr.toString()).toContain("Permission denied");
    // The VM itself still reaches its proxy (the forwarder connects as the VM's uid).
    const through = await run("ses_egress_owner", `curl -s -o /dev/null -w '%{http_code}' --max-time 10 --noproxy '' -x "$HTTP_PROXY" http://127.0.0.1:9/`, repo);
    expect(through.stdout).toMatch(/^[0-9]{3}$/);
    expect(through.stdout).not.toBe("000");
  });
});
