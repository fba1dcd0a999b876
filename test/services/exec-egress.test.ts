// The exec service's egress per tier, on real services over real SQLite (the image, supervisor and proxy
// lifecycle are not reached by prepare): a microvm (msb) command gets no proxy variables, no egress
// socket, no manager CA, and the session's granted secrets as msb secrets; the container tier keeps the proxy.
import { afterAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { openDatabase } from "../../app/db/open";
import { createLogger } from "../../app/log";
import { createCredentials } from "../../app/services/credentials";
import { createExecService } from "../../app/services/exec";
import { createServices } from "../../app/services/index";
import { egressSocketOf, microvmSecretsOf } from "../../runtime/driver";
import { TIERS } from "../../runtime/tiers/index";
import type { IsolationTier } from "../../runtime/isolation";
import { makeTempDir, TEST_HOST } from "../helpers";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const credentials = createCredentials({
  secrets: [
    { name: "DEPLOY_KEY", env: "HOST_DEPLOY", hosts: ["deploy.example.com"], scope: "granted" },
    { name: "OTHER_KEY", env: "HOST_OTHER", hosts: ["other.example.com"], scope: "granted" },
  ],
  gitCredentials: [],
  env: { HOST_DEPLOY: "deploy-value-0123456789", HOST_OTHER: "other-value-0123456789", SANDBOX_GIT_NAME: "A", SANDBOX_GIT_EMAIL: "a@example.com" },
  log: createLogger("error", () => undefined),
});

async function prepared(tier: IsolationTier) {
  const dir = makeTempDir();
  const project = makeTempDir("ss-project-");
  dirs.push(dir, project);
  const services = createServices({ db: openDatabase(dir), host: TEST_HOST, envDefaults: {}, secrets: credentials.secrets });
  services.sessions.register({ id: "ses_root", directory: project });
  services.sessionSandbox.update("ses_root", { network: { mode: "allowlist", allow: ["deploy.example.com:443"] }, secrets: ["DEPLOY_KEY"] });
  const exec = createExecService({
    ...services,
    images: { bootImage: async () => "debian:bookworm-slim" },
    sharedDirs: [],
    placeIsolation: () => ({ tier: TIERS[tier], reason: "test" }),
    egress: { socketPathFor: (vm: string) => join(dir, "egress", vm, "proxy.sock") } as never,
    supervisor: {} as never,
    metrics: {} as never,
    credentials,
    protectedDirs: { dataDir: join(dir, "data"), runtimeDir: join(dir, "run"), egressDir: join(dir, "egress") },
    caBundleFor: () => join(dir, "ca-bundle"),
  });
  return exec.prepare("ses_root", { command: "true" });
}

describe("exec egress per tier", () => {
  test("microvm (msb) → no HTTP_PROXY, no egress socket, no manager CA; only the granted secret, as $MSB_ placeholder and msb secret", async () => {
    const p = await prepared("microvm");
    expect(egressSocketOf(p.spec)).toBeUndefined();
    expect(p.spec.trustDir).toBeUndefined();
    expect(Object.keys(p.command.env).filter((k) => /proxy|SSL_CERT|CA_BUNDLE|CA_CERTS|CAINFO/i.test(k))).toEqual([]);
    expect(microvmSecretsOf(p.spec)).toEqual([{ env: "SANDBOX_SECRET_DEPLOY_KEY", hosts: ["deploy.example.com"], value: "deploy-value-0123456789" }]);
    expect(p.command.env.DEPLOY_KEY).toBe("$MSB_SANDBOX_SECRET_DEPLOY_KEY");
    expect(p.command.env.OTHER_KEY).toBeUndefined();
    expect(p.proxyRules).toEqual([]);
    expect(JSON.stringify(p.command)).not.toContain("deploy-value");
  });

  test("container → the host proxy: HTTP_PROXY, the egress socket, the manager CA, the proxy's rule; no msb secrets", async () => {
    const p = await prepared("container");
    expect(egressSocketOf(p.spec)).toEndWith("proxy.sock");
    expect(p.spec.trustDir).toBeDefined();
    expect(p.command.env.HTTPS_PROXY).toBe("http://127.0.0.1:3128");
    expect(microvmSecretsOf(p.spec)).toEqual([]);
    expect(p.proxyRules.map((r) => r.name)).toEqual(["DEPLOY_KEY"]);
  });
});
