// The shared repository, attacked where it was found open (cases 1–5): a guest lying in wait writes what
// would make host programs run its code, while the host does what a user does next (git config, an
// editor's save-by-rename, git clean, host config pointing into the work tree, a rebase). The host then
// runs real git and real OpenCode; a marker outside the repository proves nothing of the guest's ran.
// Run against each embedded tier (container, gVisor) through the driver, with the mounts the manager makes.
import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { processAlive } from "../../runtime/proc-stat";
import type { LocalFixture } from "../runtime/local-target";
import { useRepositoryFixture } from "./repository-fixture";
import { landedOnHost, runInVm, startAttacker, type AttackTarget } from "./repository-attacker";
import { hostGit, opencodeMcpList, opencodeServe, saveByRename } from "./repository-host-actions";

export function repositoryGuardSuite(tier: string, make: () => Promise<LocalFixture>, cleanUp: (fixture: LocalFixture) => void): void {
  describe(`repository guard (${tier})`, () => {
    const shared = useRepositoryFixture(make, cleanUp, "ss-repo-guard-");
    let fixture: LocalFixture;
    let scratch: string;
    let count = 0;
    beforeAll(() => {
      fixture = shared.fixture();
      scratch = shared.scratch();
    });

    /** A repository with one commit; `files` are committed too. */
    function makeRepo(files: Record<string, string> = {}): string {
      const repo = join(scratch, `repo-${++count}`);
      mkdirSync(repo, { recursive: true });
      expect(hostGit(repo, "init", "-q", "-b", "main").exitCode).toBe(0);
      writeFileSync(join(repo, "README.md"), "# repo\n");
      for (const [path, content] of Object.entries(files)) {
        mkdirSync(join(repo, path, ".."), { recursive: true });
        writeFileSync(join(repo, path), content, { mode: 0o755 });
      }
      expect(hostGit(repo, "add", "-A").exitCode).toBe(0);
      expect(hostGit(repo, "commit", "-qm", "first").exitCode).toBe(0);
      return repo;
    }

    function marker(): string {
      return join(scratch, `pwned-${++count}`);
    }

    /** A VM of this tier with the mounts the manager makes for a session in `directory`. */
    const boot = (directory: string) => shared.boot(`ss-guard-${count}-${Math.random().toString(36).slice(2, 6)}`, directory);

    /**
     * The attack: the guest lies in wait with `targets` (plus a harmless control file, which it must manage
     * to write), the host acts, the attacker goes on for a while, then the host runs its program.
     */
    async function attack(options: { vmDirectory: string; targets: AttackTarget[]; hostAction: () => void | Promise<void>; hostProgram: () => unknown }): Promise<{ wrote: string[]; landed: string[] }> {
      const vm = await boot(options.vmDirectory);
      try {
        const control = join(options.vmDirectory, `control-${count}.txt`);
        const attacker = await startAttacker(fixture.driver, vm, options.vmDirectory, [...options.targets, { path: control, content: "x\n" }]);
        await options.hostAction();
        await attacker.rounds(20);
        // Checked right after the host program ran, before a host action of the cleanup could hide it.
        await options.hostProgram();
        const landed = landedOnHost(options.targets);
        const wrote = await attacker.stop();
        expect(wrote).toContain(control);
        expect(landedOnHost([{ path: control, content: "x\n" }])).toEqual([control]);
        return { wrote: wrote.filter((path) => path !== control), landed };
      } finally {
        await fixture.driver.remove(vm);
      }
    }

    const fsmonitor = (mark: string) => `\n[core]\n\tfsmonitor = touch ${mark}\n`;
    const mcpConfig = (mark: string) => JSON.stringify({ mcp: { evil: { type: "local", command: ["touch", mark] } } });

    test("the guest's ordinary work still works: add, commit, branch, checkout, stash, rebase -i, merge, cherry-pick, revert, tag, its own worktree and clone, a present submodule, npm install, a build; the host sees the commits", async () => {
      const lib = makeRepo({ "lib.txt": "lib\n" });
      const repo = makeRepo({ "app.txt": "app\n" });
      expect(hostGit(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "lib").exitCode).toBe(0);
      expect(hostGit(repo, "commit", "-qm", "add lib").exitCode).toBe(0);
      const vm = await boot(repo);
      try {
        const id = "-c user.name=guest -c user.email=guest@example.com";
        const script = [
          "set -e",
          `git ${id} checkout -q -b feature && echo f >> app.txt && git add -A && git ${id} commit -qm feature`,
          `echo wip > wip.txt && git stash -u -q && git stash pop -q && rm wip.txt`,
          `git ${id} checkout -q main && echo m > main.txt && git add -A && git ${id} commit -qm main-change`,
          `git ${id} merge -q --no-edit feature`,
          `git ${id} checkout -q -b picks && echo p > p.txt && git add -A && git ${id} commit -qm pick-me && git ${id} checkout -q main && git ${id} cherry-pick picks >/dev/null && git ${id} revert --no-edit HEAD >/dev/null`,
          `GIT_SEQUENCE_EDITOR="sed -i 's/^pick/pick/'" git ${id} rebase -q -i HEAD~2`,
          `git ${id} tag v1`,
          `git ${id} worktree add -q wt-guest && (cd wt-guest && echo w > w.txt && git add w.txt && git ${id} commit -qm in-worktree)`,
          `git clone -q . vendor/lib-copy && (cd vendor/lib-copy && git ${id} commit -q --allow-empty -m own)`,
          `(cd lib && echo changed >> lib.txt && git add lib.txt && git ${id} commit -qm in-submodule)`,
          `mkdir -p /tmp/dep && cd /tmp/dep && printf '{"name":"dep","version":"1.0.0","main":"index.js"}' > package.json && echo 'module.exports = 42' > index.js && npm pack -q >/dev/null && cd - >/dev/null`,
          `echo ${Buffer.from(JSON.stringify({ name: "app", version: "1.0.0", scripts: { test: "node -e \"process.exit(require('dep') === 42 ? 0 : 1)\"" } })).toString("base64")} | base64 -d > package.json`,
          `npm install -q --offline --no-audit --no-fund /tmp/dep/dep-1.0.0.tgz >/dev/null && npm test -s && echo npm-ok`,
          `printf 'int main(void){return 0;}\n' > main.c && cc -o main main.c && ./main && echo build-ok`,
          "git log --format=%s -3",
        ].join("\n");
        const result = await runInVm(fixture.driver, vm, { argv: ["bash", "-c", script], cwd: repo, timeoutMs: 120_000 });
        expect({ exitCode: result.exitCode, err: result.stderr }).toEqual({ exitCode: 0, err: "" });
        expect(result.stdout).toContain("npm-ok\nbuild-ok\n");
        // The host sees the guest's history, its submodule commit and its worktree's commit.
        expect(hostGit(repo, "log", "--format=%s", "-1", "v1").stdout).toMatch(/^Revert "pick-me"\n$/);
        expect(hostGit(join(repo, "lib"), "log", "--format=%s", "-1").stdout).toBe("in-submodule\n");
        expect(hostGit(repo, "log", "--format=%s", "-1", "refs/heads/wt-guest").stdout).toBe("in-worktree\n");
        // Its own clone and worktree pointer are kept where host git never reads them.
        expect(existsSync(join(repo, "vendor/lib-copy/.git"))).toBe(false);
        expect(existsSync(join(repo, "vendor/lib-copy/.git-session-sandbox/config"))).toBe(true);
        expect(existsSync(join(repo, "wt-guest/.git-session-sandbox"))).toBe(true);
      } finally {
        await fixture.driver.remove(vm);
      }
    }, 300_000);

    test("a refused change → the command's stderr says what was refused and why, after its own output", async () => {
      const repo = makeRepo();
      const vm = await boot(repo);
      try {
        const result = await runInVm(fixture.driver, vm, { argv: ["sh", "-c", "git config user.name guest; echo '{}' > opencode.json"], cwd: repo });
        expect(result.exitCode).not.toBe(0);
        expect(result.stderr).toContain('session-sandbox: the repository refused create ".git/config.lock": inside a git directory only git\'s working state is writable');
        expect(result.stderr).toContain('session-sandbox: the repository refused create "opencode.json": OpenCode project config');
        // The next command hears only of its own refusals.
        expect((await runInVm(fixture.driver, vm, { argv: ["true"], cwd: repo })).stderr).toBe("");
      } finally {
        await fixture.driver.remove(vm);
      }
    }, 180_000);

    test("a FIFO the host left in the repository → a guest reader waits in its own kernel, as on any mount, while the repository keeps answering; a FIFO the guest makes never reaches the host", async () => {
      const repo = makeRepo();
      expect(Bun.spawnSync(["mkfifo", join(repo, "host-fifo")]).exitCode).toBe(0);
      const vm = await boot(repo);
      try {
        const script = "timeout 2 cat host-fifo & ls -a >/dev/null; cat README.md; mkfifo guest-fifo 2>/dev/null; wait";
        const result = await runInVm(fixture.driver, vm, { argv: ["sh", "-c", script], cwd: repo, timeoutMs: 30_000 });
        expect(result.stdout).toBe("# repo\n");
        // Refused by the view, or (gVisor) kept in the guest's own kernel: either way no FIFO on the host.
        expect(lstatSync(join(repo, "guest-fifo"), { throwIfNoEntry: false })?.isFIFO() ?? false).toBe(false);
        // The host's own FIFO is still a FIFO, and no host program was made to wait on anything.
        expect(lstatSync(join(repo, "host-fifo")).isFIFO()).toBe(true);
      } finally {
        await fixture.driver.remove(vm);
      }
    }, 180_000);

    test("the view's daemon is killed → the guest's repository answers nothing (never a plain bind); the VM counts as stopped and its next boot serves the repository again", async () => {
      const repo = makeRepo();
      const vm = await boot(repo);
      try {
        const record = JSON.parse(readFileSync(join(fixture.stateDir, "repo-views", vm, "0.json"), "utf8")) as { pid: number; startTime: string };
        process.kill(record.pid, "SIGKILL");
        const out = (await runInVm(fixture.driver, vm, { argv: ["sh", "-c", `cat ${repo}/README.md 2>&1; echo rc=$?`], cwd: "/" })).stdout;
        expect(out).toMatch(/rc=[1-9]/);
        expect(out).not.toContain("# repo");
        // The killed daemon may still be on its way out (its connection aborted first): wait until it is gone.
        const deadline = Date.now() + 10_000;
        while (processAlive(record.pid, record.startTime) && Date.now() < deadline) await Bun.sleep(10);
        expect((await fixture.driver.inspect(vm))?.status).toBe("stopped");
        await fixture.driver.start(vm);
        expect((await runInVm(fixture.driver, vm, { argv: ["cat", "README.md"], cwd: repo })).stdout).toBe("# repo\n");
      } finally {
        await fixture.driver.remove(vm);
      }
    }, 180_000);

    test("control: the host programs used here do run what they are given (a host-made hook, fsmonitor, MCP server and plugin leave their markers)", async () => {
      const repo = makeRepo();
      const marks = { hook: marker(), fsmonitor: marker(), mcpList: marker(), serve: marker(), plugin: marker() };
      writeFileSync(join(repo, ".git/hooks/pre-commit"), `#!/bin/sh\ntouch ${marks.hook}\n`, { mode: 0o755 });
      expect(hostGit(repo, "commit", "-q", "--allow-empty", "-m", "c").exitCode).toBe(0);
      expect(hostGit(repo, "-c", `core.fsmonitor=touch ${marks.fsmonitor}`, "status").exitCode).toBe(0);
      writeFileSync(join(repo, "opencode.json"), mcpConfig(marks.mcpList));
      mkdirSync(join(repo, ".opencode/plugin"), { recursive: true });
      writeFileSync(join(repo, ".opencode/plugin/p.ts"), `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(marks.plugin)}, "x");\nexport const P = async () => ({});\n`);
      await opencodeMcpList(repo, scratch);
      writeFileSync(join(repo, "opencode.json"), mcpConfig(marks.serve));
      await opencodeServe(repo, scratch);
      expect(Object.values(marks).filter((mark) => !existsSync(mark))).toEqual([]);
    }, 180_000);

    test("1. host `git config` renames .git/config over the guard → the guest's fsmonitor never lands; host git status runs nothing", async () => {
      const repo = makeRepo();
      const mark = marker();
      const { landed } = await attack({
        vmDirectory: repo,
        targets: [{ path: join(repo, ".git/config"), content: fsmonitor(mark) }],
        hostAction: () => void expect(hostGit(repo, "config", "user.name", "renamed-by-git").exitCode).toBe(0),
        hostProgram: () => expect(hostGit(repo, "status").exitCode).toBe(0),
      });
      expect(landed).toEqual([]);
      expect(readFileSync(join(repo, ".git/config"), "utf8")).not.toContain("fsmonitor");
      expect(existsSync(mark)).toBe(false);
    }, 180_000);

    test("1. an editor saves opencode.json by rename → the guest's MCP server never lands; the host's `opencode mcp list` runs nothing", async () => {
      const repo = makeRepo({ "opencode.json": '{"$schema":"https://opencode.ai/config.json"}\n' });
      const mark = marker();
      const { landed } = await attack({
        vmDirectory: repo,
        targets: [{ path: join(repo, "opencode.json"), content: mcpConfig(mark), mode: "w" }],
        hostAction: () => saveByRename(join(repo, "opencode.json"), '{"$schema":"https://opencode.ai/config.json","autoupdate":false}\n'),
        hostProgram: async () => {
          expect((await opencodeMcpList(repo, scratch)).exitCode).toBe(0);
          expect((await opencodeServe(repo, scratch)).mcp).toEqual({});
        },
      });
      expect(landed).toEqual([]);
      expect(readFileSync(join(repo, "opencode.json"), "utf8")).toContain('"autoupdate":false');
      expect(existsSync(mark)).toBe(false);
    }, 180_000);

    test("1. host `git clean -fdX` → the guest still cannot create .opencode/plugin; the host's OpenCode loads no plugin of the guest's", async () => {
      const repo = makeRepo({ ".gitignore": "dist/\n" });
      mkdirSync(join(repo, "dist"));
      writeFileSync(join(repo, "dist", "bundle.js"), "built\n");
      const mark = marker();
      const plugin = `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(mark)}, "plugin");\nexport const Evil = async () => ({});\n`;
      const { landed } = await attack({
        vmDirectory: repo,
        targets: [
          { path: join(repo, ".opencode/plugin/evil.ts"), content: plugin, mode: "w", parents: true },
          { path: join(repo, "opencode.jsonc"), content: mcpConfig(mark), mode: "w" },
        ],
        hostAction: () => void expect(hostGit(repo, "clean", "-fdX").exitCode).toBe(0),
        hostProgram: async () => expect((await opencodeMcpList(repo, scratch)).exitCode).toBe(0),
      });
      expect(landed).toEqual([]);
      expect(existsSync(join(repo, ".opencode"))).toBe(false);
      expect(existsSync(mark)).toBe(false);
    }, 180_000);

    test("2. host core.hooksPath = .husky (and husky's .husky/_) → the guest cannot change a hook; the host's commit runs nothing of the guest's", async () => {
      const mark = marker();
      const repo = makeRepo({ ".husky/pre-commit": "#!/bin/sh\necho host-hook\n", ".husky/_/pre-commit": "#!/bin/sh\n. \"$(dirname \"$0\")/../pre-commit\"\n" });
      expect(hostGit(repo, "config", "core.hooksPath", ".husky/_").exitCode).toBe(0);
      const evil = `#!/bin/sh\ntouch ${mark}\n`;
      const { landed } = await attack({
        vmDirectory: repo,
        targets: [
          { path: join(repo, ".husky/pre-commit"), content: evil, mode: "w" },
          { path: join(repo, ".husky/_/post-commit"), content: evil, mode: "w" },
          { path: join(repo, ".husky/_/pre-commit"), content: evil, mode: "w" },
        ],
        hostAction: () => {
          writeFileSync(join(repo, "host.txt"), "host\n");
          expect(hostGit(repo, "add", "host.txt").exitCode).toBe(0);
        },
        hostProgram: () => expect(hostGit(repo, "commit", "-qm", "host commit").exitCode).toBe(0),
      });
      expect(landed).toEqual([]);
      expect(existsSync(mark)).toBe(false);
    }, 180_000);

    test("2. host sets core.hooksPath while the VM runs → from then on the guest cannot write the hooks it names", async () => {
      const mark = marker();
      const repo = makeRepo({ "hooks/.keep": "" });
      const { wrote, landed } = await attack({
        vmDirectory: repo,
        targets: [{ path: join(repo, "hooks/pre-commit"), content: `#!/bin/sh\ntouch ${mark}\n`, mode: "w" }],
        hostAction: async () => {
          expect(hostGit(repo, "config", "core.hooksPath", "hooks").exitCode).toBe(0);
          rmSync(join(repo, "hooks/pre-commit"), { force: true }); // what the guest wrote before that: the user's to review
        },
        hostProgram: () => {
          writeFileSync(join(repo, "host.txt"), "host\n");
          expect(hostGit(repo, "add", "host.txt").exitCode).toBe(0);
          expect(hostGit(repo, "commit", "-qm", "host commit").exitCode).toBe(0);
        },
      });
      // The guest wrote the file before the host named it (allowed then); never after.
      expect(wrote).toEqual([join(repo, "hooks/pre-commit")]);
      expect(landed).toEqual([]);
      expect(existsSync(mark)).toBe(false);
    }, 180_000);

    test("2. host include.path = ../team.gitconfig inside the work tree → the guest cannot add core.fsmonitor there; host git status runs nothing", async () => {
      const mark = marker();
      const repo = makeRepo({ "team.gitconfig": "[user]\n\tname = team\n" });
      expect(hostGit(repo, "config", "include.path", "../team.gitconfig").exitCode).toBe(0);
      expect(hostGit(repo, "config", "includeIf.onbranch:main.path", "../branch.gitconfig").exitCode).toBe(0);
      const { landed } = await attack({
        vmDirectory: repo,
        targets: [
          { path: join(repo, "team.gitconfig"), content: fsmonitor(mark) },
          { path: join(repo, "branch.gitconfig"), content: fsmonitor(mark), mode: "w" },
        ],
        hostAction: () => void expect(hostGit(repo, "config", "user.email", "host@example.com").exitCode).toBe(0),
        hostProgram: () => expect(hostGit(repo, "status").exitCode).toBe(0),
      });
      expect(landed).toEqual([]);
      expect(existsSync(mark)).toBe(false);
    }, 180_000);

    test("3. the guest creates .git/config.worktree, the host turns on extensions.worktreeConfig → refused; host git status runs nothing", async () => {
      const mark = marker();
      const repo = makeRepo();
      const { landed } = await attack({
        vmDirectory: repo,
        targets: [{ path: join(repo, ".git/config.worktree"), content: fsmonitor(mark), mode: "w" }],
        hostAction: () => void expect(hostGit(repo, "config", "extensions.worktreeConfig", "true").exitCode).toBe(0),
        hostProgram: () => expect(hostGit(repo, "status").exitCode).toBe(0),
      });
      expect(landed).toEqual([]);
      expect(existsSync(join(repo, ".git/config.worktree"))).toBe(false);
      expect(existsSync(mark)).toBe(false);
    }, 180_000);

    test("4. a monorepo session in packages/a → the guest cannot write packages/b/opencode.json; OpenCode started in packages/b runs nothing", async () => {
      const mark = marker();
      const repo = makeRepo({ "packages/a/index.js": "a\n", "packages/b/index.js": "b\n" });
      const { landed } = await attack({
        vmDirectory: join(repo, "packages/a"),
        targets: [
          { path: join(repo, "packages/b/opencode.json"), content: mcpConfig(mark), mode: "w" },
          { path: join(repo, "packages/b/deep/er/.opencode/plugin/x.ts"), content: "export {}", mode: "w", parents: true },
        ],
        hostAction: () => {},
        hostProgram: async () => {
          expect((await opencodeMcpList(join(repo, "packages/b"), scratch)).exitCode).toBe(0);
          expect((await opencodeServe(join(repo, "packages/b"), scratch)).mcp).toEqual({});
        },
      });
      expect(landed).toEqual([]);
      expect(existsSync(join(repo, "packages/b/opencode.json"))).toBe(false);
      expect(existsSync(mark)).toBe(false);
    }, 180_000);

    test("5. during a rebase the host started → the guest cannot add an exec line or a strategy; `git rebase --continue` on the host runs nothing", async () => {
      const mark = marker();
      const repo = makeRepo();
      for (const name of ["b", "c"]) {
        writeFileSync(join(repo, `${name}.txt`), `${name}\n`);
        expect(hostGit(repo, "add", "-A").exitCode).toBe(0);
        expect(hostGit(repo, "commit", "-qm", name).exitCode).toBe(0);
      }
      const started = Bun.spawnSync(["git", "rebase", "-i", "HEAD~2"], {
        cwd: repo,
        env: { ...process.env, GIT_SEQUENCE_EDITOR: "sed -i '1s/^pick/edit/'", GIT_EDITOR: "true" },
        stdout: "pipe",
        stderr: "pipe",
      });
      expect(started.exitCode).toBe(0);
      expect(existsSync(join(repo, ".git/rebase-merge/git-rebase-todo"))).toBe(true);
      const { landed } = await attack({
        vmDirectory: repo,
        targets: [
          { path: join(repo, ".git/rebase-merge/git-rebase-todo"), content: `exec touch ${mark}\n` },
          { path: join(repo, ".git/rebase-merge/strategy"), content: "../../evil", mode: "w" },
        ],
        hostAction: () => {},
        hostProgram: () => expect(hostGit(repo, "rebase", "--continue")).toMatchObject({ exitCode: 0 }),
      });
      expect(landed).toEqual([]);
      expect(existsSync(mark)).toBe(false);
      expect(hostGit(repo, "log", "--format=%s").stdout).toBe("c\nb\nfirst\n");
    }, 180_000);
  });
}
