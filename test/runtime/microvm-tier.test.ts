// Egress for microvm (msb) VMs: the session's granted secrets become msb secrets, the guest env carries
// msb's placeholders instead of the host proxy's, and no proxy variable or manager CA appears.
import { describe, expect, test } from "bun:test";
import { createCredentials } from "../../app/services/credentials";
import { msbForwarding } from "../../runtime/tiers/microvm";
import { createLogger } from "../../app/log";

const credentials = createCredentials({
  secrets: [
    { name: "OPENAI_API_KEY", env: "HOST_OPENAI", hosts: ["api.openai.com"], scope: "granted" },
    { name: "NPM_TOKEN", env: "HOST_NPM", hosts: ["registry.npmjs.org"] },
  ],
  gitCredentials: [{ url: "https://github.com/", env: "HOST_GH", username: "x-access-token", repository: null }],
  env: { HOST_OPENAI: "sk-openai-value-0123456789", HOST_NPM: "npm-value-0123456789", HOST_GH: "gh-value-0123456789", SANDBOX_GIT_NAME: "A", SANDBOX_GIT_EMAIL: "a@example.com" },
  log: createLogger("error", () => undefined),
});

describe("msbForwarding", () => {
  test("only the granted secrets → msb secrets (name, hosts, value); the guest env holds $MSB_ placeholders, never a value or our placeholder", () => {
    const forwarding = credentials.resolve("/work/repo", true, ["NPM_TOKEN"]);
    const msb = msbForwarding(forwarding);
    expect(msb.secrets.map((s) => [s.env, s.hosts])).toEqual([
      ["SANDBOX_SECRET_NPM_TOKEN", ["registry.npmjs.org"]],
      ["SANDBOX_SECRET_GIT_GITHUB_COM", ["github.com"]],
    ]);
    expect(msb.secrets[0]?.value).toBe("npm-value-0123456789");
    expect(msb.env.NPM_TOKEN).toBe("$MSB_SANDBOX_SECRET_NPM_TOKEN");
    expect(msb.env.GIT_CONFIG_VALUE_0).toBe("Authorization: Basic $MSB_SANDBOX_SECRET_GIT_GITHUB_COM");
    expect(msb.env.OPENAI_API_KEY).toBeUndefined();
    const text = JSON.stringify(msb.env);
    for (const rule of forwarding.proxyRules) {
      expect(text).not.toContain(rule.value);
      expect(text).not.toContain(rule.placeholder);
    }
  });

  test("a grant added → that secret too", () => {
    const msb = msbForwarding(credentials.resolve("/work/repo", false, ["NPM_TOKEN", "OPENAI_API_KEY"]));
    expect(msb.secrets.map((s) => s.env).sort()).toEqual(["SANDBOX_SECRET_NPM_TOKEN", "SANDBOX_SECRET_OPENAI_API_KEY"]);
  });
});
