// `network` end to end against the real manager process: the script run as `bun run --silent network`,
// the table form snapshotted, the --json form parsed, the manager's refusals shown as one line.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { normalize, parseJson, startAdminManager, type AdminManager } from "./fixture";

type Policy = { mode: "none" } | { mode: "all" } | { mode: "allowlist"; allow: string[] };
type SandboxJson = { sessionID: string; rootSessionID: string; network: { override: Policy | null; effective: Policy } };
type ErrorJson = { error: { code: string; message: string; fix: string | null; exitCode: number } };

let m: AdminManager;
beforeAll(async () => {
  // Env defaults pinned, so the snapshots do not depend on this host's CPUs and memory.
  m = await startAdminManager({ env: { SANDBOX_CPUS: "1", SANDBOX_MEMORY: "1G" } });
  await m.client.sessions.register({ id: "ses_root", directory: "/work/project" });
  await m.client.sessions.register({ id: "ses_child", parentID: "ses_root", directory: "/work/project" });
}, 60_000);
afterAll(async () => m?.cleanup(), 60_000);

describe("bun run network", () => {
  test("<session> → the effective policy, from the settings default", async () => {
    const result = await m.run("network", ["ses_root"]);
    expect(result).toMatchObject({ exitCode: 0, stderr: "" });
    expect(normalize(result.stdout)).toMatchInlineSnapshot(`
      "SESSION    ses_root
      ROOT       ses_root
      SANDBOX    on (default)
      CPUS       1 (default)
      MEMORY     1G (default)
      NETWORK    none (default)
      IMAGE      builtin (default)
      ISOLATION  microvm (default)
      DOCKER     off (default)
      VM         ocm-session-XXXXXXXXXXXX
      TOGGLED    -
      LAST STOP  -
      "
    `);
  });

  test("<session> allow <entry>… → the session's allowlist override (commas split too), shown", async () => {
    const result = await m.run("network", ["ses_root", "allow", "api.github.com", "*.example.com,loopback"]);
    expect(result).toMatchObject({ exitCode: 0, stderr: "" });
    expect(normalize(result.stdout)).toMatchInlineSnapshot(`
      "SESSION    ses_root
      ROOT       ses_root
      SANDBOX    on (default)
      CPUS       1 (default)
      MEMORY     1G (default)
      NETWORK    allowlist: api.github.com, *.example.com, loopback (session override)
      IMAGE      builtin (default)
      ISOLATION  microvm (default)
      DOCKER     off (default)
      VM         ocm-session-XXXXXXXXXXXX
      TOGGLED    -
      LAST STOP  -
      "
    `);
    const expected: Policy = { mode: "allowlist", allow: ["api.github.com", "*.example.com", "loopback"] };
    expect((await m.client.sandbox.get("ses_root")).network).toEqual({ override: expected, effective: expected });
    // A child shows its root's policy.
    expect(parseJson<SandboxJson>(await m.run("network", ["ses_child", "--json"])).network.effective).toEqual(expected);
  });

  test("<session> none|all --json → the override and the effective policy", async () => {
    const all = parseJson<SandboxJson>(await m.run("network", ["ses_root", "all", "--json"]));
    expect(all.network).toEqual({ override: { mode: "all" }, effective: { mode: "all" } });
    expect(Object.keys(all)).toEqual(["sessionID", "rootSessionID", "sandboxed", "source", "serverEnabled", "resources", "network", "image", "isolation", "docker", "toggledAt", "vmName", "lastStop"]);
    const none = parseJson<SandboxJson>(await m.run("network", ["ses_root", "none", "--json"]));
    expect(none.network).toEqual({ override: { mode: "none" }, effective: { mode: "none" } });
    expect((await m.run("network", ["ses_root"])).stdout).toContain("NETWORK    none (session override)\n");
  });

  test("--clear → the override is gone, the settings default applies again", async () => {
    await m.client.settings.patch({ network: { mode: "allowlist", allow: ["registry.npmjs.org"] } });
    try {
      const cleared = parseJson<SandboxJson>(await m.run("network", ["ses_root", "--clear", "--json"]));
      expect(cleared.network).toEqual({ override: null, effective: { mode: "allowlist", allow: ["registry.npmjs.org"] } });
      expect((await m.run("network", ["ses_root"])).stdout).toContain("NETWORK    allowlist: registry.npmjs.org (default)\n");
    } finally {
      await m.client.settings.patch({ network: null });
    }
    expect((await m.client.sandbox.get("ses_root")).network).toEqual({ override: null, effective: { mode: "none" } });
  });

  test("an entry the manager refuses → its NETWORK_POLICY_INVALID message as one line, exit 1, nothing changed", async () => {
    await m.client.sandbox.set("ses_root", { network: { mode: "all" } });
    const before = await m.client.sandbox.get("ses_root");
    const refused = await m.run("network", ["ses_root", "allow", "api.github.com", "https://example.com", "exa mple.com"]);
    expect(refused.exitCode).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr.split("\n")).toHaveLength(2); // one line and its newline
    expect(refused.stderr).toStartWith("network: network allowlist entries are not valid: ");
    expect(refused.stderr).toContain('"https://example.com" is a URL');
    expect(refused.stderr).toContain('"exa mple.com" contains whitespace');
    const json = parseJson<ErrorJson>(await m.run("network", ["ses_root", "allow", "*", "--json"]));
    expect(json.error).toMatchObject({ code: "NETWORK_POLICY_INVALID", exitCode: 1, message: expect.stringContaining('"*" matches every host') });
    expect(await m.client.sandbox.get("ses_root")).toEqual(before);
    await m.client.sandbox.set("ses_root", { network: null });
  });

  test("a child, an unknown session → exit 1 with the reason and the fix", async () => {
    const child = await m.run("network", ["ses_child", "all"]);
    expect(child.exitCode).toBe(1);
    expect(child.stderr).toContain('session "ses_child" is a child of root "ses_root"');
    expect(await m.run("network", ["ses_nope"])).toMatchObject({ exitCode: 1, stderr: expect.stringContaining("fix: list the registered sessions with `bun run sessions`") });
  });

  test("bad command lines → exit 2 before anything is sent", async () => {
    const before = await m.client.sandbox.get("ses_root");
    expect(await m.run("network", [])).toEqual({ exitCode: 2, stdout: "", stderr: "network: missing <session> — fix: see `bun run network --help`\n" });
    expect(await m.run("network", ["ses_root", "open"])).toMatchObject({ exitCode: 2, stdout: "", stderr: expect.stringContaining('"open" is not none, all or allow') });
    expect(await m.run("network", ["ses_root", "allow"])).toMatchObject({ exitCode: 2, stderr: expect.stringContaining("`allow` needs at least one entry") });
    expect(await m.run("network", ["ses_root", "none", "api.github.com"])).toMatchObject({ exitCode: 2, stderr: expect.stringContaining('unexpected argument "api.github.com" after none') });
    expect(await m.run("network", ["ses_root", "--clear", "all"])).toMatchObject({ exitCode: 2, stderr: expect.stringContaining("--clear cannot be combined with a policy") });
    expect(await m.client.sandbox.get("ses_root")).toEqual(before);
  });
});
