// `secrets` end to end against the real manager process started with SANDBOX_SECRETS: the script run as
// `bun run --silent secrets`, the tables snapshotted, the --json forms parsed, refusals as one line.
// No value is ever printed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { normalize, parseJson, startAdminManager, type AdminManager } from "./fixture";

const VALUES = { HOST_API_TOKEN: "api-token-VALUE-0123456789", HOST_DEPLOY_KEY: "deploy-key-VALUE-0123456789" };
const SANDBOX_SECRETS = JSON.stringify({
  API_TOKEN: { env: "HOST_API_TOKEN", hosts: ["api.example.com"] },
  DEPLOY_KEY: { env: "HOST_DEPLOY_KEY", hosts: ["deploy.example.com", "*.deploy.example.com"], scope: "granted" },
});

type SessionSecretsJson = { sessionID: string; rootSessionID: string; granted: string[]; effective: string[]; configured: unknown[] };
type ErrorJson = { error: { code: string; message: string; fix: string | null; exitCode: number } };

let m: AdminManager;
beforeAll(async () => {
  m = await startAdminManager({ env: { SANDBOX_SECRETS, ...VALUES } });
  await m.client.sessions.register({ id: "ses_root", directory: "/work/project" });
  await m.client.sessions.register({ id: "ses_child", parentID: "ses_root", directory: "/work/project" });
}, 60_000);
afterAll(async () => m?.cleanup(), 60_000);

describe("bun run secrets", () => {
  test("no session → the configured names, scopes and hosts; --json the same; never a value", async () => {
    const result = await m.run("secrets");
    expect(result).toMatchObject({ exitCode: 0, stderr: "" });
    expect(result.stdout).toMatchInlineSnapshot(`
      "NAME        SCOPE    HOSTS
      API_TOKEN   all      api.example.com
      DEPLOY_KEY  granted  deploy.example.com, *.deploy.example.com
      "
    `);
    const json = parseJson<{ secrets: unknown[] }>(await m.run("secrets", ["--json"]));
    expect(json.secrets).toEqual([
      { name: "API_TOKEN", hosts: ["api.example.com"], scope: "all" },
      { name: "DEPLOY_KEY", hosts: ["deploy.example.com", "*.deploy.example.com"], scope: "granted" },
    ]);
  });

  test("<session> grant <NAME> → granted to the root, shown for it and its child; revoke takes it back", async () => {
    const granted = await m.run("secrets", ["ses_root", "grant", "DEPLOY_KEY"]);
    expect(granted).toMatchObject({ exitCode: 0, stderr: "" });
    expect(normalize(granted.stdout)).toMatchInlineSnapshot(`
      "SESSION  ses_root
      ROOT     ses_root

      NAME        SCOPE    HOSTS                                     THIS SESSION
      API_TOKEN   all      api.example.com                           yes (scope all)
      DEPLOY_KEY  granted  deploy.example.com, *.deploy.example.com  yes (granted)
      "
    `);
    const child = parseJson<SessionSecretsJson>(await m.run("secrets", ["ses_child", "--json"]));
    expect(child).toMatchObject({ sessionID: "ses_child", rootSessionID: "ses_root", granted: ["DEPLOY_KEY"], effective: ["API_TOKEN", "DEPLOY_KEY"] });
    const revoked = parseJson<SessionSecretsJson>(await m.run("secrets", ["ses_root", "revoke", "DEPLOY_KEY", "--json"]));
    expect(revoked).toMatchObject({ granted: [], effective: ["API_TOKEN"] });
    expect((await m.run("secrets", ["ses_root"])).stdout).toContain("DEPLOY_KEY  granted  deploy.example.com, *.deploy.example.com  no\n");
  });

  test("an unknown name → the manager's SECRET_NOT_CONFIGURED as one line, exit 1, nothing granted", async () => {
    const refused = await m.run("secrets", ["ses_root", "grant", "DEPLOY_KEY,AWS_KEY"]);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr.split("\n")).toHaveLength(2);
    expect(refused.stderr).toContain('no secret named "AWS_KEY" is configured on this manager; the configured ones are API_TOKEN, DEPLOY_KEY');
    const json = parseJson<ErrorJson>(await m.run("secrets", ["ses_root", "grant", "nope", "--json"]));
    expect(json.error).toMatchObject({ code: "SECRET_NOT_CONFIGURED", exitCode: 1 });
    expect((await m.client.sandbox.get("ses_root")).secrets.granted).toEqual([]);
  });

  test("a child, an unknown session → exit 1 with the reason; bad command lines → exit 2 before anything is sent", async () => {
    expect(await m.run("secrets", ["ses_child", "grant", "DEPLOY_KEY"])).toMatchObject({ exitCode: 1, stderr: expect.stringContaining('session "ses_child" is a child of root "ses_root"') });
    expect(await m.run("secrets", ["ses_nope"])).toMatchObject({ exitCode: 1, stderr: expect.stringContaining("fix: list the registered sessions with `bun run sessions`") });
    expect(await m.run("secrets", ["ses_root", "give", "DEPLOY_KEY"])).toMatchObject({ exitCode: 2, stdout: "", stderr: expect.stringContaining('"give" is neither grant nor revoke') });
    expect(await m.run("secrets", ["ses_root", "grant"])).toMatchObject({ exitCode: 2, stderr: expect.stringContaining("`grant` needs at least one secret name") });
  });

  test("no output, log line or API answer holds a value", async () => {
    const outputs = await Promise.all([m.run("secrets"), m.run("secrets", ["ses_root", "--json"]), m.run("secrets", ["--json"])]);
    const everything = [...outputs.flatMap((r) => [r.stdout, r.stderr]), ...m.manager.stderrLines].join("\n");
    for (const value of Object.values(VALUES)) expect(everything).not.toContain(value);
  });
});
