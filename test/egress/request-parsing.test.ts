// Strict parsing of what the guest sends: request heads, CONNECT authorities, absolute URLs, IP literals.
import { describe, expect, test } from "bun:test";
import { findHeadEnd, parseRequestHead } from "../../egress/http-head";
import { formatIp, parseCidr, parseIp } from "../../egress/ip-address";
import { hostHeader, parseAbsoluteUrl, parseAuthority } from "../../egress/target";

describe("request head", () => {
  test("leading blank line, request line and headers → parsed, values trimmed", () => {
    const parsed = parseRequestHead("\r\nGET http://a.example/ HTTP/1.1\r\nHost:  a.example \r\nX-A: 1\r\n\r\n");
    expect(parsed).toEqual({ ok: true, value: { method: "GET", target: "http://a.example/", version: "HTTP/1.1", headers: [{ name: "Host", value: "a.example" }, { name: "X-A", value: "1" }] } });
  });

  const bad: Array<[string, string]> = [
    ["HTTP/2", "GET http://a.example/ HTTP/2.0\r\n\r\n"],
    ["a space in the target", "GET http://a.example/a b HTTP/1.1\r\n\r\n"],
    ["obs-fold", "GET http://a.example/ HTTP/1.1\r\nX-A: 1\r\n  continued\r\n\r\n"],
    ["a bare LF inside a value", "GET http://a.example/ HTTP/1.1\r\nX-A: 1\nX-B: 2\r\n\r\n"],
    ["a space before the colon", "GET http://a.example/ HTTP/1.1\r\nX-A : 1\r\n\r\n"],
  ];
  for (const [what, text] of bad) {
    test(`${what} → refused`, () => {
      expect(parseRequestHead(text).ok).toBe(false);
    });
  }

  test("head end across chunks → found when resuming the search", () => {
    const buffer = Buffer.from("GET / HTTP/1.1\r\n\r\nbody");
    expect(findHeadEnd(buffer, 16)).toBe(18);
    expect(findHeadEnd(Buffer.from("GET / HTTP/1.1\r\n"), 0)).toBe(-1);
  });
});

describe("targets", () => {
  const authorities: Array<[string, { host: string; port: number } | null]> = [
    ["api.github.com:443", { host: "api.github.com", port: 443 }],
    ["API.GitHub.com.:443", { host: "api.github.com", port: 443 }],
    ["127.0.0.1:8080", { host: "127.0.0.1", port: 8080 }],
    ["[::1]:443", { host: "::1", port: 443 }],
    ["[::ffff:127.0.0.1]:80", { host: "127.0.0.1", port: 80 }],
    ["api.github.com", null],
    ["api.github.com:0", null],
    ["api.github.com:65536", null],
    ["::1:443", null],
    ["bad host:443", null],
    ["xn--nxasmq6b.example:443", { host: "xn--nxasmq6b.example", port: 443 }],
    ["ünïcode.example:443", null],
  ];
  for (const [text, expected] of authorities) {
    test(`CONNECT ${text} → ${expected ? `${expected.host} port ${expected.port}` : "refused"}`, () => {
      const parsed = parseAuthority(text, null);
      expect(parsed.ok ? parsed.value : null).toEqual(expected);
    });
  }

  const urls: Array<[string, string | null]> = [
    ["http://a.example/p?q=1", "a.example:80 /p?q=1"],
    ["HTTP://a.example:8080", "a.example:8080 /"],
    ["http://a.example?x", "a.example:80 /?x"],
    ["http://a.example/p#frag", "a.example:80 /p"],
    ["http://[::1]:81/x", "::1:81 /x"],
    ["https://a.example/", null],
    ["ftp://a.example/", null],
    ["/just/a/path", null],
    ["http://user:pw@a.example/", null],
  ];
  for (const [text, expected] of urls) {
    test(`absolute URL ${text} → ${expected ?? "refused"}`, () => {
      const parsed = parseAbsoluteUrl(text);
      expect(parsed.ok ? `${parsed.value.target.host}:${parsed.value.target.port} ${parsed.value.originForm}` : null).toBe(expected);
    });
  }

  test("Host header → port only when not the default, IPv6 in brackets", () => {
    expect(hostHeader({ host: "a.example", port: 80 })).toBe("a.example");
    expect(hostHeader({ host: "a.example", port: 8080 })).toBe("a.example:8080");
    expect(hostHeader({ host: "::1", port: 81 })).toBe("[::1]:81");
  });
});

describe("IP literals", () => {
  const cases: Array<[string, string | null]> = [
    ["10.0.0.1", "10.0.0.1"],
    ["::ffff:7f00:1", "127.0.0.1"],
    ["0:0:0:0:0:ffff:127.0.0.1", "127.0.0.1"],
    ["FE80::1%eth0", "fe80::1"],
    ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"],
    ["127.1", null],
    ["0x7f.0.0.1", null],
    ["010.0.0.1", null],
    ["2130706433", null],
    ["1:2:3:4:5:6:7:8:9", null],
    ["1::2::3", null],
  ];
  for (const [text, expected] of cases) {
    test(`${text} → ${expected ?? "not a literal (goes to the resolver, whose answer is checked)"}`, () => {
      const parsed = parseIp(text);
      expect(parsed ? formatIp(parsed) : null).toBe(expected);
    });
  }

  test("CIDR host bits → masked", () => {
    const cidr = parseCidr("10.1.2.3/8");
    expect(cidr && `${formatIp(cidr)}/${cidr.prefix}`).toBe("10.0.0.0/8");
  });
});
