// Secret rules: validation that never echoes a value, host matching, exactly which request parts are substituted.
import { describe, expect, test } from "bun:test";
import { parseRequestHead } from "../../egress/http-head";
import { buildUpstreamRequest } from "../../egress/request-rewrite";
import { SecretRedactor } from "../../egress/secret-redactor";
import { compileSecrets, redactionPatterns, secretRuleProblem, secretsForTarget, type SecretRule } from "../../egress/secrets";

const VALUE = "ghp_realTokenValue+/=42";
const rule: SecretRule = { name: "GITHUB_TOKEN", placeholder: "SANDBOX_SECRET_GITHUB_TOKEN", value: VALUE, hosts: ["api.github.com", "*.githubusercontent.com"] };

describe("secret rules", () => {
  const bad: Array<[string, Partial<SecretRule>, RegExp]> = [
    ["a name with spaces", { name: "my token" }, /secret name/],
    ["a short placeholder", { placeholder: "PH" }, /placeholder must be/],
    ["a placeholder with a slash", { placeholder: "SANDBOX/SECRET" }, /placeholder must be/],
    ["a short value", { value: "abc" }, /value must be 8-/],
    ["a value with a line break", { value: "abcdefgh\r\nX-Injected: 1" }, /printable ASCII/],
    ["a value inside the placeholder", { value: "SECRET_GITHUB", placeholder: "SANDBOX_SECRET_GITHUB_TOKEN" }, /must not contain each other/],
    ["no hosts", { hosts: [] }, /at least one domain/],
    ["a URL as host", { hosts: ["https://api.github.com"] }, /host/],
  ];
  for (const [what, change, reason] of bad) {
    test(`${what} → refused, and the message never contains the value`, () => {
      const candidate = { ...rule, ...change };
      const problem = secretRuleProblem(candidate);
      expect(problem).toMatch(reason);
      expect(problem).not.toContain(candidate.value);
    });
  }

  test("compile → unusable rules reported by name and skipped", () => {
    const { secrets, problems } = compileSecrets([rule, { ...rule, name: "BROKEN", value: "x" }]);
    expect(secrets.map((s) => s.name)).toEqual(["GITHUB_TOKEN"]);
    expect(problems).toEqual([{ name: "BROKEN", problem: expect.stringContaining("value must be") }]);
  });

  test("host matching: exact, wildcard subdomain, case and trailing dot; not the apex, not IPs", () => {
    const { secrets } = compileSecrets([rule]);
    const names = (host: string) => secretsForTarget(secrets, { host, port: 80 }).map((s) => s.name);
    expect(names("api.github.com")).toEqual(["GITHUB_TOKEN"]);
    expect(names("API.GitHub.com.")).toEqual(["GITHUB_TOKEN"]);
    expect(names("raw.githubusercontent.com")).toEqual(["GITHUB_TOKEN"]);
    expect(names("githubusercontent.com")).toEqual([]);
    expect(names("github.com")).toEqual([]);
    expect(names("140.82.112.6")).toEqual([]);
  });

  test("redaction patterns → the value, percent-encoded, JSON-escaped, and base64 at every alignment (both alphabets)", () => {
    const { secrets } = compileSecrets([rule]);
    const finds = redactionPatterns(secrets).map((p) => p.find);
    // Encoded forms with hex digits are kept lowered and matched without case (`%2f` and `%2F`).
    expect(finds).toEqual(expect.arrayContaining([VALUE, encodeURIComponent(VALUE).toLowerCase()]));
    expect(redactionPatterns(secrets).every((p) => p.replacement === rule.placeholder)).toBe(true);
    const redactor = new SecretRedactor(redactionPatterns(secrets));
    for (const prefix of ["", "a", "ab", "user:"]) {
      const b64 = Buffer.from(`${prefix}${VALUE}!`).toString("base64");
      for (const encoded of [b64, b64.replace(/\+/g, "-").replace(/\//g, "_")]) {
        const out = redactor.redactAll(Buffer.from(encoded)).toString("latin1");
        expect(Buffer.from(out.replace(/-/g, "+").replace(/_/g, "/"), "base64").toString("latin1")).not.toContain(VALUE);
      }
    }
    expect(redactor.redactAll(Buffer.from(JSON.stringify({ echoed: VALUE }))).toString()).not.toContain(JSON.stringify(VALUE).slice(1, -1));
  });
});

describe("upstream request", () => {
  const head = (text: string) => {
    const parsed = parseRequestHead(text);
    if (!parsed.ok) throw new Error(parsed.reason);
    return parsed.value;
  };
  const request = head(
    [
      "POST http://api.github.com/repos/SANDBOX_SECRET_GITHUB_TOKEN?token=SANDBOX_SECRET_GITHUB_TOKEN HTTP/1.1",
      "Host: evil.example",
      "Authorization: Bearer SANDBOX_SECRET_GITHUB_TOKEN",
      "SANDBOX_SECRET_GITHUB_TOKEN: header-name-is-not-substituted",
      "Proxy-Authorization: Basic abc",
      "Proxy-Connection: keep-alive",
      "Connection: keep-alive, X-Hop",
      "X-Hop: dropped",
      "Accept-Encoding: gzip, br",
      "Content-Length: 27",
      "",
      "",
    ].join("\r\n"),
  );
  const target = { host: "api.github.com", port: 80 };

  test("listed host → value in target (percent-encoded) and header values; Host rewritten; proxy and hop-by-hop headers dropped", () => {
    const { secrets } = compileSecrets([rule]);
    const built = buildUpstreamRequest(request, target, "/repos/SANDBOX_SECRET_GITHUB_TOKEN?token=SANDBOX_SECRET_GITHUB_TOKEN", secretsForTarget(secrets, target));
    if (!built.ok) throw new Error(built.reason);
    const encoded = encodeURIComponent(VALUE);
    expect(built.value.head.toString("latin1")).toBe(
      [
        `POST /repos/${encoded}?token=${encoded} HTTP/1.1`,
        "Host: api.github.com",
        `Authorization: Bearer ${VALUE}`,
        "SANDBOX_SECRET_GITHUB_TOKEN: header-name-is-not-substituted",
        "Content-Length: 27",
        "Accept-Encoding: identity",
        "Connection: close",
        "",
        "",
      ].join("\r\n"),
    );
    expect(built.value.usedSecrets).toEqual(["GITHUB_TOKEN"]);
  });

  test("other host → placeholders unchanged, Accept-Encoding kept", () => {
    const { secrets } = compileSecrets([rule]);
    const other = { host: "example.org", port: 80 };
    const built = buildUpstreamRequest(request, other, "/repos/SANDBOX_SECRET_GITHUB_TOKEN", secretsForTarget(secrets, other));
    if (!built.ok) throw new Error(built.reason);
    const text = built.value.head.toString("latin1");
    expect(text).toContain("Authorization: Bearer SANDBOX_SECRET_GITHUB_TOKEN");
    expect(text).toStartWith("POST /repos/SANDBOX_SECRET_GITHUB_TOKEN HTTP/1.1\r\nHost: example.org\r\n");
    expect(text).toContain("Accept-Encoding: gzip, br");
    expect(text).not.toContain(VALUE);
    expect(built.value.usedSecrets).toEqual([]);
  });

  const framing: Array<[string, string[]]> = [
    ["Content-Length and Transfer-Encoding", ["Content-Length: 3", "Transfer-Encoding: chunked"]],
    ["two different Content-Lengths", ["Content-Length: 3", "Content-Length: 4"]],
    ["a Transfer-Encoding not ending in chunked", ["Transfer-Encoding: chunked, gzip"]],
    ["a non-numeric Content-Length", ["Content-Length: 3x"]],
  ];
  for (const [what, lines] of framing) {
    test(`${what} → refused (smuggling)`, () => {
      const bad = head(["POST http://a.example/ HTTP/1.1", ...lines, "", ""].join("\r\n"));
      expect(buildUpstreamRequest(bad, { host: "a.example", port: 80 }, "/", []).ok).toBe(false);
    });
  }
});
