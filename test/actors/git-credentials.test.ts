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
    // The guest's header holds a placeholder; the proxy's rule for it holds the chosen credential.
    const header = (top: string) => {
      const { env, proxyRules } = credentials.resolve(top, true);
      const placeholder = env.GIT_CONFIG_VALUE_0!.replace("Authorization: Basic ", "");
      const rule = proxyRules.find((each) => each.placeholder === placeholder)!;
      expect(rule.hosts).toEqual(["git.example"]);
      return Buffer.from(rule.value, "base64").toString();
    };
    expect(header("/work/repo")).toBe("x-access-token:bound-token-value");
    expect(header("/work/other")).toBe("x-access-token:default-token-value");
  });

  test("https:// credentials, GH_TOKEN and GITHUB_TOKEN → the guest holds placeholders only; the proxy holds the values for their hosts", () => {
    const gitCredentials = [{ url: "https://github.com/", env: "FORGE_TOKEN", username: "x-access-token", repository: null }];
    const secretEnv = { FORGE_TOKEN: "ghp_forge-token-value-123", GH_TOKEN: "ghp_gh-token-value-456", GITHUB_TOKEN: "ghp_github-token-value-789" };
    const credentials = createCredentials({ secrets: [], gitCredentials, env: secretEnv, log: createLogger("silent") });
    const { env, proxyRules } = credentials.resolve("/work/repo", true);
    const guestSees = JSON.stringify(env);
    for (const value of Object.values(secretEnv)) {
      expect(guestSees).not.toContain(value);
      expect(guestSees).not.toContain(Buffer.from(`x-access-token:${value}`).toString("base64"));
    }
    expect(proxyRules.find((rule) => rule.placeholder === env.GH_TOKEN)).toMatchObject({ name: "GH_TOKEN", value: secretEnv.GH_TOKEN, hosts: ["github.com", "api.github.com", "uploads.github.com"] });
    expect(proxyRules.find((rule) => rule.placeholder === env.GITHUB_TOKEN)).toMatchObject({ value: secretEnv.GITHUB_TOKEN });
    expect(proxyRules.find((rule) => env.GIT_CONFIG_VALUE_0 === `Authorization: Basic ${rule.placeholder}`)).toMatchObject({ hosts: ["github.com"] });
    // Forwarding off: neither the git credential nor the GitHub tokens reach the guest, even as placeholders.
    expect(credentials.resolve("/work/repo", false).env.GH_TOKEN).toBeUndefined();
  });
});
