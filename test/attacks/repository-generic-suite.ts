// Not a list of today's cases: the guest writes every git config key that runs a program into every file
// git reads, and every OpenCode config name at random depths (seeded; the seed is in the test's name), and
// keeps writing them while the host renames over, deletes, runs `git clean -fdX` and checks out another
// branch. After each, host git (routine commands) and host OpenCode run from random directories of the
// work tree. The markers the guest's programs would leave prove nothing ran, and host git's own view of its
// configuration holds nothing the guest wrote.
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { LocalFixture } from "../runtime/local-target";
import { useRepositoryFixture } from "./repository-fixture";
import { landedOnHost, startAttacker, type AttackTarget } from "./repository-attacker";
import { hostGit, opencodeMcpList, saveByRename } from "./repository-host-actions";

/** A small seeded generator (mulberry32): the same seed, the same repository and the same attack. */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, pick: <T>(items: T[]): T => items[Math.floor(next() * items.length)]! };
}

/** Every key that makes git run a program, each set to touch its own marker. */
function programKeys(markers: string, top: string): string {
  const touch = (key: string) => `touch ${markers}/${key}`;
  return [
    "[core]",
    `\tfsmonitor = ${touch("core.fsmonitor")}`,
    `\thooksPath = ${top}/evil-hooks`,
    `\tsshCommand = ${touch("core.sshCommand")}`,
    `\tpager = ${touch("core.pager")}; cat`,
    `\teditor = ${touch("core.editor")}`,
    `\taskPass = ${touch("core.askPass")}`,
    '[diff]',
    `\texternal = ${touch("diff.external")}`,
    '[filter "evil"]',
    `\tclean = ${touch("filter.clean")}; cat`,
    `\tsmudge = ${touch("filter.smudge")}; cat`,
    `\tprocess = ${touch("filter.process")}`,
    '[diff "evil"]',
    `\ttextconv = ${touch("diff.textconv")}; cat`,
    '[merge "evil"]',
    `\tdriver = ${touch("merge.driver")}`,
    "[credential]",
    `\thelper = !${touch("credential.helper")}`,
    "[gpg]",
    `\tprogram = ${touch("gpg.program")}`,
    "[sequence]",
    `\teditor = ${touch("sequence.editor")}`,
    "[include]",
    `\tpath = ${top}/evil.gitconfig`,
    '[includeIf "gitdir:/"]',
    `\tpath = ${top}/evil.gitconfig`,
    "[alias]",
    `\tst = !${touch("alias.st")}`,
    "",
  ].join("\n");
}

const HOOKS = ["pre-commit", "post-commit", "post-checkout", "prepare-commit-msg", "commit-msg", "pre-push", "post-merge", "reference-transaction"];

export function repositoryGenericSuite(tier: string, make: () => Promise<LocalFixture>, cleanUp: (fixture: LocalFixture) => void): void {
  const seed = Number(process.env.REPO_ATTACK_SEED ?? Math.floor(Math.random() * 2 ** 31));

  describe(`repository guard, generic (${tier})`, () => {
    const shared = useRepositoryFixture(make, cleanUp, "ss-repo-generic-");

    test(`every program key in every file git reads, OpenCode config at random depths, after rename-over, delete, git clean -fdX and checkout → nothing runs on the host (seed ${seed}; REPO_ATTACK_SEED reproduces)`, async () => {
      const rng = random(seed);
      const fixture = shared.fixture();
      const scratch = shared.scratch();
      const top = join(scratch, "repo");
      const markers = join(scratch, "markers");
      mkdirSync(markers);
      const dirs = ["", "src", "src/lib", "src/lib/deep", "packages/a", "packages/b/x", "docs"];
      for (const dir of dirs) mkdirSync(join(top, dir), { recursive: true });
      expect(hostGit(top, "init", "-q", "-b", "main").exitCode).toBe(0);
      for (const dir of dirs) writeFileSync(join(top, dir, "file.txt"), `${dir}\n`);
      writeFileSync(join(top, ".gitignore"), "build/\n");
      writeFileSync(join(top, "opencode.json"), '{"$schema":"https://opencode.ai/config.json"}\n');
      writeFileSync(join(top, ".gitattributes"), "*.txt text\n");
      expect(hostGit(top, "add", "-A").exitCode).toBe(0);
      expect(hostGit(top, "commit", "-qm", "first").exitCode).toBe(0);
      expect(hostGit(top, "branch", "other").exitCode).toBe(0);
      // A remote on the host, for fetch, pull and push (a bare repository outside the work tree).
      const remote = join(scratch, "remote.git");
      expect(hostGit(scratch, "clone", "-q", "--bare", top, remote).exitCode).toBe(0);
      expect(hostGit(top, "remote", "add", "origin", remote).exitCode).toBe(0);
      expect(hostGit(top, "fetch", "-q", "origin").exitCode).toBe(0);
      mkdirSync(join(top, "build"));
      writeFileSync(join(top, "build", "out.js"), "built\n");

      const config = programKeys(markers, top);
      const attributes = "* filter=evil diff=evil merge=evil\n";
      const mcp = (name: string) => JSON.stringify({ mcp: { [name]: { type: "local", command: ["touch", `${markers}/opencode-${name}`] } } });
      const plugin = (name: string) => `import { writeFileSync } from "node:fs";\nwriteFileSync("${markers}/plugin-${name}", "x");\nexport const P = async () => ({});\n`;
      const hook = (name: string) => `#!/bin/sh\ntouch ${markers}/hook-${name}\n`;
      const randomDir = () => rng.pick(dirs);
      const targets: AttackTarget[] = [
        // Every file git reads as configuration or attributes, in the repository and in new ones.
        ...[".git/config", ".git/config.worktree", ".git/info/attributes", ".gitmodules", ".lfsconfig", `${randomDir()}/.gitattributes`, ".git/modules/evil/config", `${randomDir()}/nested/.git/config`, ".git/commondir"].map((path): AttackTarget => ({ path: join(top, path), content: path.endsWith("attributes") ? attributes : config, parents: true })),
        ...HOOKS.map((name): AttackTarget => ({ path: join(top, ".git/hooks", name), content: hook(name), mode: "w" })),
        // The files the guest's own config above would point at (harmless while host git never reads it).
        { path: join(top, "evil.gitconfig"), content: `[core]\n\tfsmonitor = touch ${markers}/included\n`, mode: "w" },
        ...HOOKS.map((name): AttackTarget => ({ path: join(top, "evil-hooks", name), content: hook(`path-${name}`), mode: "w", parents: true })),
        // OpenCode's project config at random depths, as files and as plugins.
        ...[0, 1, 2, 3].flatMap((i): AttackTarget[] => {
          const dir = randomDir();
          return [
            { path: join(top, dir, rng.pick(["opencode.json", "opencode.jsonc"])), content: mcp(`d${i}`), mode: "w" },
            { path: join(top, dir, ".opencode", rng.pick(["plugin", "plugins", "tool"]), `p${i}.ts`), content: plugin(`d${i}`), mode: "w", parents: true },
          ];
        }),
        // A rebase todo with an exec line, and a pointer file that would redirect git.
        { path: join(top, ".git/rebase-merge/git-rebase-todo"), content: `exec touch ${markers}/exec\n`, parents: true },
        { path: join(top, randomDir(), "sub", ".git"), content: `gitdir: ${top}/evil-gitdir\n`, mode: "w", parents: true },
      ];
      const session = join(top, randomDir());
      const name = `ss-generic-${seed.toString(36)}`;
      await shared.boot(name, session);
      try {
        const attacker = await startAttacker(fixture.driver, name, session, targets);
        const hostPrograms = async (when: string) => {
          const cwd = join(top, randomDir());
          const routine = [
            ["status"], ["diff"], ["log", "-p", "-1"], ["st"], ["branch", "-a"], ["add", "-A"], ["commit", "-qm", `host ${when}`],
            ["stash"], ["stash", "pop"], ["switch", "-q", "-c", `b-${when.replace(/\W+/g, "-")}`], ["switch", "-q", "-"],
            ["merge", "-q", "--no-edit", "other"], ["fetch", "-q", "origin"], ["pull", "-q", "--no-rebase", "origin", "main"],
            ["push", "-q", "origin", "HEAD:refs/heads/host"], ["worktree", "list"], ["clean", "-n"], ["config", "--list"],
          ];
          for (const args of routine) hostGit(cwd, ...args);
          await opencodeMcpList(join(top, randomDir()), scratch);
          // Host git's own view of its configuration: nothing from the guest, whatever the host did.
          const origins = hostGit(top, "config", "--list", "--show-origin").stdout;
          expect(origins).not.toContain(markers);
          expect({ when, markers: readdirSync(markers) }).toEqual({ when, markers: [] });
        };
        const actions: [string, () => void][] = [
          ["rename-over", () => {
            expect(hostGit(top, "config", "user.name", "host").exitCode).toBe(0);
            saveByRename(join(top, "opencode.json"), '{"$schema":"https://opencode.ai/config.json","autoupdate":false}\n');
            saveByRename(join(top, ".gitattributes"), "*.txt text eol=lf\n");
          }],
          ["delete", () => {
            unlinkSync(join(top, "opencode.json"));
            unlinkSync(join(top, ".gitattributes"));
            rmSync(join(top, ".git", "hooks"), { recursive: true, force: true });
            rmSync(join(top, ".git", "info"), { recursive: true, force: true });
          }],
          ["git clean -fdX", () => void expect(hostGit(top, "clean", "-fdX").exitCode).toBe(0)],
          ["checkout", () => void expect(hostGit(top, "checkout", "-q", "-f", "other").exitCode).toBe(0)],
        ];
        await attacker.rounds(10);
        await hostPrograms("before any host action");
        for (const [when, act] of actions) {
          act();
          await attacker.rounds(20);
          await hostPrograms(`after ${when}`);
        }
        const landed = landedOnHost(targets);
        const wrote = await attacker.stop();
        // What the guest managed to write lies where no host program reads it: files no host config names,
        // and its own repositories, kept under the quarantine name (no `.git` there on the host). The
        // attacker's own word counts only where the host's file holds its payload (landedOnHost).
        const ownRepository = (path: string) => /\/(nested|sub)\/\.git(\/|$)/.test(path);
        // .gitattributes and .gitmodules stay the project's to edit: git takes no program from them (an
        // attribute only picks a driver host config defines; .gitmodules gives submodule.* keys only), and
        // the markers above prove the program keys written there ran nothing.
        const projectData = (path: string) => path.endsWith("/.gitattributes") || path.endsWith("/.gitmodules");
        expect(landed.filter((path) => !path.startsWith(join(top, "evil")) && !ownRepository(path) && !projectData(path))).toEqual([]);
        for (const path of wrote.filter(ownRepository)) {
          const dir = path.slice(0, path.lastIndexOf("/.git"));
          expect(existsSync(join(dir, ".git"))).toBe(false);
          expect(existsSync(join(dir, ".git-session-sandbox"))).toBe(true);
        }
      } finally {
        await fixture.driver.remove(name);
      }
    }, 600_000);
  });
}
