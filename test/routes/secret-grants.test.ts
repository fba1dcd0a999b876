// Secrets as a per-session grant, in-process: what is configured (names, hosts, scope; never a value),
// granting and revoking through PUT /api/session-sandbox/:id, refusals, storage across restarts, and the
// bounded labels substitutions are counted under.
import { afterEach, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { createEventBus, type SandboxEvent } from "../../app/events/event-bus";
import { createLogger } from "../../app/log";
import { createMetrics } from "../../app/metrics";
import type { SecretConfig } from "../../app/secrets-config";
import { createCredentials } from "../../app/services/credentials";
import { createSecretUsage, hostLabel, OTHER_HOST_LABEL } from "../../app/services/secret-usage";
import { ChildSessionLockedError, SecretNotConfiguredError } from "../../sdk/index";
import { makeTempDir, makeTestApp, snapshotDatabase, type TestApp } from "../helpers";

const SECRETS: SecretConfig[] = [
  { name: "API_TOKEN", env: "HOST_API_TOKEN", hosts: ["api.example.com"], scope: "all" },
  { name: "DEPLOY_KEY", env: "HOST_DEPLOY_KEY", hosts: ["deploy.example.com", "*.deploy.example.com:8443"], scope: "granted" },
];

let t: TestApp | null = null;
afterEach(() => {
  t?.cleanup();
  t = null;
});

async function start(secrets: SecretConfig[] = SECRETS, dataDir?: string): Promise<TestApp> {
  // No values in this environment: grants are about names, and nothing here sends a request.
  t = makeTestApp({ credentials: createCredentials({ secrets, gitCredentials: [], env: {}, log: createLogger("silent") }), dataDir });
  await t.client.sessions.register({ id: "ses_root", directory: "/repo" }).catch(() => undefined);
  await t.client.sessions.register({ id: "ses_child", parentID: "ses_root", directory: "/repo" }).catch(() => undefined);
  return t;
}

describe("GET /api/secrets", () => {
  test("→ each configured name with its hosts and scope; neither a value nor the variable that holds it", async () => {
    const app = await start();
    const res = await app.request("GET", "/api/secrets");
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({
      secrets: [
        { name: "API_TOKEN", hosts: ["api.example.com"], scope: "all" },
        { name: "DEPLOY_KEY", hosts: ["deploy.example.com", "*.deploy.example.com:8443"], scope: "granted" },
      ],
    });
    expect(text).not.toContain("HOST_");
    expect(await app.client.secrets.list()).toEqual(JSON.parse(text));
  });
});

describe("secret grants", () => {
  test("a new root → only scope-all secrets; a grant adds a scope-granted one, for its children too; [] revokes", async () => {
    const app = await start();
    expect((await app.client.sandbox.get("ses_root")).secrets).toEqual({ granted: [], effective: ["API_TOKEN"] });
    const granted = await app.client.sandbox.set("ses_root", { secrets: ["DEPLOY_KEY"] });
    expect(granted.secrets).toEqual({ granted: ["DEPLOY_KEY"], effective: ["API_TOKEN", "DEPLOY_KEY"] });
    expect((await app.client.sandbox.get("ses_child")).secrets).toEqual(granted.secrets);
    expect((await app.client.sandbox.set("ses_root", { secrets: [] })).secrets).toEqual({ granted: [], effective: ["API_TOKEN"] });
  });

  test("a name that is not configured → 400 naming it and listing the configured ones; nothing changes", async () => {
    const app = await start();
    await app.client.sandbox.set("ses_root", { secrets: ["DEPLOY_KEY"] });
    const before = snapshotDatabase(app.db);
    const error = await app.client.sandbox.set("ses_root", { secrets: ["DEPLOY_KEY", "AWS_SECRET", "deploy_key"], network: { mode: "all" } }).catch((e) => e);
    expect(error).toBeInstanceOf(SecretNotConfiguredError);
    expect(error.status).toBe(400);
    expect(error.message).toContain('"AWS_SECRET", "deploy_key"');
    expect(error.message).toContain("the configured ones are API_TOKEN, DEPLOY_KEY");
    expect(snapshotDatabase(app.db)).toBe(before);
  });

  test("a manager with no secrets configured → any grant is a 400 that says so", async () => {
    const app = await start([]);
    const error = await app.client.sandbox.set("ses_root", { secrets: ["API_TOKEN"] }).catch((e) => e);
    expect(error).toBeInstanceOf(SecretNotConfiguredError);
    expect(error.message).toContain("none is configured (SANDBOX_SECRETS is empty)");
  });

  test("a grant on a child session → 409 locked to its root; nothing granted", async () => {
    const app = await start();
    const error = await app.client.sandbox.set("ses_child", { secrets: ["DEPLOY_KEY"] }).catch((e) => e);
    expect(error).toBeInstanceOf(ChildSessionLockedError);
    expect((await app.client.sandbox.get("ses_root")).secrets.granted).toEqual([]);
  });

  test("grants are stored: kept across a restart, gone with the session", async () => {
    const dataDir = makeTempDir("ss-grants-");
    try {
      let app = await start(SECRETS, dataDir);
      await app.client.sandbox.set("ses_root", { secrets: ["DEPLOY_KEY", "DEPLOY_KEY"] });
      app.cleanup();
      // Restarted with DEPLOY_KEY no longer configured: the grant is shown, but gives nothing.
      app = t = await start([SECRETS[0]!], dataDir);
      expect((await app.client.sandbox.get("ses_root")).secrets).toEqual({ granted: ["DEPLOY_KEY"], effective: ["API_TOKEN"] });
      await app.client.sessions.delete("ses_root");
      expect(app.db.query("SELECT * FROM secret_grants").all()).toEqual([]);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe("secret usage counting", () => {
  const rules = [{ name: "DEPLOY_KEY", placeholder: "sandbox-placeholder-x", value: "v".repeat(20), hosts: SECRETS[1]!.hosts }];

  test("the metric's host label is the configured entry that matched: made-up subdomains add no series", () => {
    expect(hostLabel(rules, "DEPLOY_KEY", "deploy.example.com")).toBe("deploy.example.com");
    expect(hostLabel(rules, "DEPLOY_KEY", "a1.deploy.example.com")).toBe("*.deploy.example.com:8443");
    expect(hostLabel(rules, "DEPLOY_KEY", "A2.Deploy.Example.com.")).toBe("*.deploy.example.com:8443");
    expect(hostLabel(rules, "DEPLOY_KEY", "elsewhere.example")).toBe(OTHER_HOST_LABEL);
    expect(hostLabel(rules, "GONE", "deploy.example.com")).toBe(OTHER_HOST_LABEL);
  });

  test("a substitution → one secret event per name with the session, VM and host, and the counter by name and host", async () => {
    const events = createEventBus();
    const metrics = createMetrics({ runningVms: () => 0, maxRunningVms: () => 4 });
    const seen: SandboxEvent[] = [];
    const stop = new AbortController();
    const reading = (async () => {
      for await (const event of events.subscribe(stop.signal)) {
        seen.push(event);
        if (seen.length === 2) stop.abort();
      }
    })();
    const report = createSecretUsage(events, () => metrics, () => 42);
    report({ vmName: "ocm-session-000000000001", rootSessionID: "ses_root", names: ["DEPLOY_KEY"], host: "a1.deploy.example.com", rules });
    report({ vmName: "ocm-session-000000000001", rootSessionID: "ses_root", names: ["DEPLOY_KEY"], host: "b2.deploy.example.com", rules });
    await reading;
    expect(seen).toEqual([
      { id: expect.any(String), type: "secret", phase: "substituted", name: "DEPLOY_KEY", host: "a1.deploy.example.com", rootSessionID: "ses_root", vmName: "ocm-session-000000000001", at: 42 },
      { id: expect.any(String), type: "secret", phase: "substituted", name: "DEPLOY_KEY", host: "b2.deploy.example.com", rootSessionID: "ses_root", vmName: "ocm-session-000000000001", at: 42 },
    ]);
    expect(await metrics.registry.metrics()).toContain('sandbox_secret_substitutions_total{name="DEPLOY_KEY",host="*.deploy.example.com:8443"} 2');
  });
});
