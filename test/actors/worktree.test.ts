// Linked git worktrees: the main repository's common dir is mounted only when its own metadata links
// back to the worktree; a forged `.git` file pointing at another repository is refused.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CwdOutsideMountsError, WorktreeUnverifiedError } from "../../sdk/index";
import { makeActorFixture, type ActorFixture } from "./fixture";

let f: ActorFixture;
let main: string;
let worktree: string;
const git = (cwd: string, ...args: string[]) => {
  const result = Bun.spawnSync(["git", "-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd });
  if (result.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${result.stderr}`);
  return result.stdout.toString();
};

beforeAll(async () => {
  f = await makeActorFixture();
  main = f.makeRepo("main");
  git(main, "add", "README.md");
  git(main, "commit", "-qm", "first");
  worktree = join(main, "..", "main-wt");
  git(main, "worktree", "add", "-q", worktree, "-b", "feature");
}, 600_000);
afterAll(async () => f?.teardown(), 120_000);

describe("worktrees", () => {
  test("a verified linked worktree → git works in the VM; the common dir is mounted", async () => {
    await f.client.sessions.register({ id: "ses_wt", directory: worktree });
    const result = await f.client.run("ses_wt", { command: "git rev-parse --abbrev-ref HEAD && git log --format=%s", cwd: worktree });
    expect(result).toMatchObject({ exitCode: 0, stdout: "feature\nfirst\n" });
    const vm = (await f.client.vms.list()).vms.find((v) => v.rootSessionID === "ses_wt")!;
    expect(vm.spec?.mounts).toEqual([worktree, join(main, ".git")]);
    // The main repository's working files are not mounted: only its git dir.
    expect((await f.client.run("ses_wt", { command: `ls ${main}/README.md 2>&1 || true`, cwd: worktree })).stdout).toContain("No such file");
    expect(await f.client.run("ses_wt", { command: "true", cwd: main }).catch((e) => e)).toBeInstanceOf(CwdOutsideMountsError);
  });

  test("a forged .git file pointing at another repository's worktree entry → refused", async () => {
    const forged = join(main, "..", "forged");
    mkdirSync(forged, { recursive: true });
    writeFileSync(join(forged, ".git"), `gitdir: ${join(main, ".git", "worktrees", "main-wt")}\n`);
    await f.client.sessions.register({ id: "ses_forged", directory: forged });
    const error = await f.client.run("ses_forged", { command: "true", cwd: forged }).catch((e) => e);
    expect(error).toBeInstanceOf(WorktreeUnverifiedError);
    expect(error.message).toContain("does not point back");
  });

  test("a forged .git file with a made-up worktree entry whose commondir names another repository → refused", async () => {
    const attacker = f.makeRepo("attacker");
    const fakeEntry = join(attacker, "fake", "worktrees", "x");
    mkdirSync(fakeEntry, { recursive: true });
    writeFileSync(join(fakeEntry, "commondir"), `${join(main, ".git")}\n`);
    writeFileSync(join(fakeEntry, "gitdir"), `${join(attacker, "wt2", ".git")}\n`);
    const wt2 = join(attacker, "wt2");
    mkdirSync(wt2, { recursive: true });
    writeFileSync(join(wt2, ".git"), `gitdir: ${fakeEntry}\n`);
    await f.client.sessions.register({ id: "ses_forged2", directory: wt2 });
    expect(await f.client.run("ses_forged2", { command: "true", cwd: wt2 }).catch((e) => e)).toBeInstanceOf(WorktreeUnverifiedError);
  });
});
