// Git credential forwarding over the real local runtime: clone and push against a smart-HTTP git server on
// the host's loopback that requires auth. Off (the default) → refused; on → both work, through the egress
// proxy, while the guest only ever holds a placeholder. Identity is always forwarded.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { createLogger } from "../../app/log";
import { createCredentials, MAX_GIT_HOSTS } from "../../app/services/credentials";
import { makeBareRepo, startGitHttpServer, type GitHttpServer } from "../fixtures/git-http-server";
import { makeTempDir } from "../helpers";
import { makeActorFixture, type ActorFixture } from "./fixture";

const PASSWORD = "git-pass-0123456789-abc";
let f: ActorFixture;
let repo: string;
let gitRoot: string;
let server: GitHttpServer;
let remote: string;

beforeAll(async () => {
  gitRoot = makeTempDir("ss-git-root-");
  makeBareRepo(gitRoot, "project");
  server = await startGitHttpServer({ root: gitRoot, username: "agent", password: PASSWORD });
  remote = `http://host.sandbox.internal:${server.port}/project.git`;
  const credentials = createCredentials({
    secrets: [],
    gitCredentials: [{ url: `http://host.sandbox.internal:${server.port}/`, env: "TEST_GIT_PASSWORD", username: "agent", repository: null }],
    env: { TEST_GIT_PASSWORD: PASSWORD, SANDBOX_GIT_NAME: "Sandbox Agent", SANDBOX_GIT_EMAIL: "agent@example.test", HOME: "/nonexistent", PATH: process.env.PATH },
    log: createLogger("silent"),
  });
  f = await makeActorFixture({ credentials });
  repo = f.makeRepo();
  await f.client.sessions.register({ id: "ses_git", directory: repo });
  await f.client.sandbox.set("ses_git", { network: { mode: "allowlist", allow: ["host.sandbox.internal", "loopback"] } });
}, 600_000);
afterAll(async () => {
  await server?.stop();
  await f?.teardown();
  rmSync(gitRoot, { recursive: true, force: true });
}, 120_000);

const run = (command: string) => f.client.run("ses_git", { command: `export GIT_TERMINAL_PROMPT=0; ${command}`, cwd: repo, timeoutMs: 60_000 });

describe("git credentials", () => {
  test("forwarding off (the default) → clone is refused; the identity is still there", async () => {
    const result = await run(`git clone -q ${remote} /tmp/off 2>&1; echo "exit=$?"; echo "$GIT_AUTHOR_NAME <$GIT_AUTHOR_EMAIL>"`);
    expect(result.stdout).toContain("exit=128");
    expect(result.stdout).toContain("Sandbox Agent <agent@example.test>");
  });

  test("forwarding on → clone and push succeed; the guest holds only a placeholder", async () => {
    await f.client.settings.patch({ forwardGitCredentials: true });
    const result = await run(
      [
        `git clone -q ${remote} /tmp/on`,
        "cd /tmp/on && echo change > change.txt && git add change.txt && git commit -qm 'from the sandbox'",
        "git push -q origin HEAD:main",
        'echo "pushed=$?"',
        `env | grep -c '${PASSWORD}' || true`,
        'echo "$GIT_CONFIG_COUNT $GIT_CONFIG_KEY_0"',
      ].join(" && "),
    );
    expect(result.stderr).toBe("");
    expect(result.stdout).toContain("pushed=0\n0\n");
    expect(result.stdout).toContain(`1 http.http://host.sandbox.internal:${server.port}/.extraheader`);
    const log = Bun.spawnSync(["git", `--git-dir=${gitRoot}/project.git`, "log", "-1", "--format=%s|%an|%ae", "main"]).stdout.toString().trim();
    expect(log).toBe("from the sandbox|Sandbox Agent|agent@example.test");
    const basic = `Basic ${Buffer.from(`agent:${PASSWORD}`).toString("base64")}`;
    expect(server.requests.filter((r) => r.authorization === basic).length).toBeGreaterThan(0);
  });
});

describe("git credential limits", () => {
  test("17 configured hosts → 16 forwarded and a warning naming the rest", () => {
    const warnings: string[] = [];
    const log = createLogger("warn", (line) => warnings.push(line));
    const gitCredentials = Array.from({ length: 17 }, (_, i) => ({ url: `https://git${i}.example/`, env: "TOKEN", username: "x-access-token", repository: null }));
    const { env, warnings: reported } = createCredentials({ secrets: [], gitCredentials, env: { TOKEN: "t".repeat(20) }, log }).resolve("/repo", true);
    expect(env.GIT_CONFIG_COUNT).toBe(String(MAX_GIT_HOSTS));
    expect(env.GIT_CONFIG_KEY_15).toBe("http.https://git15.example/.extraheader");
    expect(env.GIT_CONFIG_KEY_16).toBeUndefined();
    expect(reported).toEqual([expect.stringContaining("https://git16.example/")]);
    expect(warnings.join("\n")).toContain("only the first 16");
  });

  test("a repository-bound credential beats the default one for the same host", () => {
    const gitCredentials = [
      { url: "https://git.example/", env: "DEFAULT_TOKEN", username: "x-access-token", repository: null },
      { url: "https://git.example/", env: "BOUND_TOKEN", username: "x-access-token", repository: "/work/repo" },
    ];
    const credentials = createCredentials({ secrets: [], gitCredentials, env: { DEFAULT_TOKEN: "default-token-value", BOUND_TOKEN: "bound-token-value" }, log: createLogger("silent") });
    const header = (top: string) => Buffer.from(credentials.resolve(top, true).env.GIT_CONFIG_VALUE_0!.replace("Authorization: Basic ", ""), "base64").toString();
    expect(header("/work/repo")).toBe("x-access-token:bound-token-value");
    expect(header("/work/other")).toBe("x-access-token:default-token-value");
  });
});
