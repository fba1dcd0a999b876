import { describe, expect, test } from "bun:test";
import { ConfigError } from "../app/config";
import { loadGitCredentials, loadSecrets } from "../app/secrets-config";

describe("secrets configuration", () => {
  test("a secret names an env var and its hosts → parsed", () => {
    const env = { SANDBOX_SECRETS: JSON.stringify({ API_TOKEN: { env: "HOST_TOKEN", hosts: ["api.example.com"] } }), HOST_TOKEN: "x".repeat(20) };
    expect(loadSecrets(env)).toEqual([{ name: "API_TOKEN", env: "HOST_TOKEN", hosts: ["api.example.com"], scope: "all" }]);
  });

  test("scope granted → only granted sessions get it; an unknown scope → refused naming both", () => {
    const env = (scope: unknown) => ({ SANDBOX_SECRETS: JSON.stringify({ API_TOKEN: { env: "HOST_TOKEN", hosts: ["api.example.com"], scope } }), HOST_TOKEN: "x".repeat(20) });
    expect(loadSecrets(env("granted"))[0]!.scope).toBe("granted");
    expect(() => loadSecrets(env("some"))).toThrow(/"scope" must be "all" \(every session\) or "granted"/);
  });

  test("a literal value → refused at startup with the fix", () => {
    const env = { SANDBOX_SECRETS: JSON.stringify({ API_TOKEN: { value: "literal", hosts: ["a.example"] } }) };
    expect(() => loadSecrets(env)).toThrow(ConfigError);
    expect(() => loadSecrets(env)).toThrow(/literal "value".*name it in "env"/);
    expect(() => loadGitCredentials({ SANDBOX_GIT_CREDENTIALS: JSON.stringify([{ url: "https://github.com/", token: "ghp_x" }]) })).toThrow(/literal "token"/);
  });

  test("an env var that is not set, bad JSON, no hosts, a bad URL → refused with the reason", () => {
    expect(() => loadSecrets({ SANDBOX_SECRETS: JSON.stringify({ T: { env: "MISSING", hosts: ["a.example"] } }) })).toThrow(/MISSING, which is not set/);
    expect(() => loadSecrets({ SANDBOX_SECRETS: "{nope" })).toThrow(/not valid JSON/);
    expect(() => loadSecrets({ SANDBOX_SECRETS: JSON.stringify({ T: { env: "V", hosts: [] } }), V: "v" })).toThrow(/needs "hosts"/);
    expect(() => loadSecrets({ SANDBOX_SECRETS: JSON.stringify({ T: { env: "V", hosts: ["not a host"] } }), V: "v".repeat(20) })).toThrow(/host "not a host"/);
    expect(() => loadSecrets({ SANDBOX_SECRETS: JSON.stringify({ T: { env: "V", hosts: ["a.example"] } }), V: "short" })).toThrow(/value must be/);
    expect(() => loadGitCredentials({ SANDBOX_GIT_CREDENTIALS: JSON.stringify([{ url: "ssh://git@x/", env: "V" }]), V: "v" })).toThrow(/only http and https/);
  });

  test("git credentials → normalised URL, default username, optional repository binding", () => {
    const env = { SANDBOX_GIT_CREDENTIALS: JSON.stringify([{ url: "https://github.com/org/repo", env: "V" }, { url: "http://git.local:8080", env: "V", username: "bot", repository: "/r" }]), V: "v" };
    expect(loadGitCredentials(env)).toEqual([
      { url: "https://github.com/", env: "V", username: "x-access-token", repository: null },
      { url: "http://git.local:8080/", env: "V", username: "bot", repository: "/r" },
    ]);
  });
});
