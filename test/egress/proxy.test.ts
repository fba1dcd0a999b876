// The egress proxy over its Unix socket against loopback targets: allow, deny with the rule, keywords, rebinding.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { createServer } from "node:net";
import type { Policy } from "../../egress/policy";
import { exchange, parseResponse, startEchoTarget, startHarness, type Harness } from "./proxy-harness";

const echo = startEchoTarget();
afterAll(() => echo.stop());

let harness: Harness | null = null;
afterEach(async () => {
  await harness?.close();
  harness = null;
});

const allow = (...entries: string[]): Policy => ({ mode: "allowlist", allow: entries });
const start = async (policy: Policy | (() => Policy), names: Record<string, string[]> = {}) => (harness = await startHarness({ policy, names }));

const get = (host: string, path = "/hello", extra = "") => `GET http://${host}:${echo.port}${path} HTTP/1.1\r\nHost: ignored.example\r\n${extra}\r\n`;
const connect = (host: string) => `CONNECT ${host}:${echo.port} HTTP/1.1\r\nHost: ${host}:${echo.port}\r\n\r\nGET /through-tunnel HTTP/1.1\r\nHost: tunnel.test\r\nConnection: close\r\n\r\n`;

/** CONNECT answers with the proxy's 200 and then the target's own response through the tunnel. */
function tunnelled(raw: Buffer) {
  const outer = parseResponse(raw.subarray(0, raw.indexOf("\r\n\r\n") + 4));
  return { outer, inner: outer.status === 200 ? parseResponse(raw.subarray(raw.indexOf("\r\n\r\n") + 4)) : null };
}

describe("egress proxy: allowed", () => {
  test("CONNECT to a listed name → 200 Connection Established, then the target answers through the tunnel", async () => {
    const h = await start(allow("api.test", "loopback"), { "api.test": ["127.0.0.1"] });
    const { outer, inner } = tunnelled(await exchange(h.socketPath, connect("api.test")));
    expect(outer.status).toBe(200);
    expect(inner?.status).toBe(200);
    expect(JSON.parse(inner?.body ?? "{}")).toMatchObject({ path: "/through-tunnel", headers: { host: "tunnel.test" } });
    expect(h.logLines.some((l) => l.includes('"egress allowed"') && l.includes('"kind":"connect"') && l.includes('"rule":"allow loopback"'))).toBe(true);
  });

  test("plain HTTP to a listed name → forwarded in origin form with Host from the URL, proxy headers dropped, Connection: close", async () => {
    const h = await start(allow("api.test", "loopback"), { "api.test": ["127.0.0.1"] });
    const raw = await exchange(h.socketPath, get("api.test", "/hello?x=1", "Proxy-Authorization: Basic Zm9vOmJhcg==\r\nProxy-Connection: keep-alive\r\nX-Custom: kept\r\n"));
    const response = parseResponse(raw);
    expect(response.status).toBe(200);
    expect(response.headers.connection).toBe("close");
    const seen = JSON.parse(response.body);
    expect(seen).toMatchObject({ method: "GET", path: "/hello?x=1", headers: { host: `api.test:${echo.port}`, connection: "close", "x-custom": "kept" } });
    expect(seen.headers["proxy-authorization"]).toBeUndefined();
    expect(seen.headers["proxy-connection"]).toBeUndefined();
  });

  test("a POST body → forwarded unchanged", async () => {
    const h = await start(allow("api.test", "loopback"), { "api.test": ["127.0.0.1"] });
    const body = '{"hello":"world"}';
    const raw = await exchange(h.socketPath, `POST http://api.test:${echo.port}/post HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    expect(JSON.parse(parseResponse(raw).body)).toMatchObject({ method: "POST", body });
  });

  test("the resolver is asked once per connection and the checked address is the one connected to", async () => {
    const h = await start(allow("api.test", "loopback"), { "api.test": ["127.0.0.1"] });
    await exchange(h.socketPath, get("api.test"));
    expect(h.lookups).toEqual(["api.test"]);
    expect(h.logLines.some((l) => l.includes('"address":"127.0.0.1"'))).toBe(true);
  });
});

describe("egress proxy: denied", () => {
  test("an unlisted name over plain HTTP → 403 naming the rule in X-Sandbox-Rule and the body, without a lookup", async () => {
    const h = await start(allow("api.test", "loopback"), { "api.test": ["127.0.0.1"], "other.test": ["127.0.0.1"] });
    const response = parseResponse(await exchange(h.socketPath, get("other.test")));
    expect(response.status).toBe(403);
    expect(response.headers["x-sandbox-rule"]).toBe(`no rule matches other.test:${echo.port}`);
    expect(response.body).toContain(`denied by session-sandbox egress policy: no rule matches other.test:${echo.port}`);
    expect(response.body).toContain(`add "other.test:${echo.port}" to network.allow`);
    expect(response.body).toContain("PUT /api/session-sandbox/:id");
    expect(h.lookups).toEqual([]);
    expect(echo.seen.some((s) => s.path === "/hello" && s.headers.host?.startsWith("other.test"))).toBe(false);
    // Its owner hears of it too (the manager says it on the command's stderr), with the 403's reason.
    expect(h.denials).toEqual([{ kind: "http", target: `other.test:${echo.port}`, rule: `no rule matches other.test:${echo.port}`, reason: `other.test is not in the allowlist; add "other.test:${echo.port}" to network.allow`, allowEntry: `other.test:${echo.port}` }]);
  });

  test("a refusal listener that throws → the guest still gets its 403, and the failure is logged", async () => {
    const h = (harness = await startHarness({ policy: allow("api.test"), failingDenialListener: true }));
    const raw = await exchange(h.socketPath, connect("other.test"));
    expect(tunnelled(raw).outer.status).toBe(403);
    expect(h.denials.map((d) => d.kind)).toEqual(["connect"]);
    expect(h.logLines.some((l) => l.includes("egress denial listener failed") && l.includes("listener broke"))).toBe(true);
  });

  test("an unlisted name over CONNECT → 403 and no tunnel", async () => {
    const h = await start(allow("api.test", "loopback"), { "other.test": ["127.0.0.1"] });
    const raw = await exchange(h.socketPath, connect("other.test"));
    const { outer } = tunnelled(raw);
    expect(outer.status).toBe(403);
    expect(outer.headers["x-sandbox-rule"]).toBe(`no rule matches other.test:${echo.port}`);
    expect(raw.toString()).not.toContain("through-tunnel");
    expect(h.denials.map(({ kind, target }) => ({ kind, target }))).toEqual([{ kind: "connect", target: `other.test:${echo.port}` }]);
  });

  test('mode "none" → 403 "network none"', async () => {
    const h = await start({ mode: "none" });
    expect(parseResponse(await exchange(h.socketPath, get("127.0.0.1"))).headers["x-sandbox-rule"]).toBe("network none");
  });

  test("a policy with a bad entry → the bad entry ignored with a warning, the rest still applies", async () => {
    const h = await start(allow("10.0.0.1/8", "loopback"));
    expect(parseResponse(await exchange(h.socketPath, get("127.0.0.1"))).status).toBe(200);
    expect(h.logLines.some((l) => l.includes('"egress policy entries ignored"') && l.includes("10.0.0.1/8"))).toBe(true);
  });

  test("a policy that cannot be read → 403 \"policy unavailable\"", async () => {
    const h = await start(() => {
      throw new Error("database is locked");
    });
    expect(parseResponse(await exchange(h.socketPath, get("127.0.0.1"))).headers["x-sandbox-rule"]).toBe("policy unavailable");
  });

  test("a policy change → applies to the next connection", async () => {
    let policy: Policy = { mode: "none" };
    const h = await start(() => policy);
    expect(parseResponse(await exchange(h.socketPath, get("127.0.0.1"))).status).toBe(403);
    policy = allow("loopback");
    expect(parseResponse(await exchange(h.socketPath, get("127.0.0.1"))).status).toBe(200);
  });
});

describe("egress proxy: loopback keywords", () => {
  const cases: Array<[string[], number, string]> = [
    [["api.test"], 403, "block loopback 127.0.0.0/8"],
    [["public"], 403, "block loopback 127.0.0.0/8"],
    [["loopback"], 200, ""],
    [["host"], 200, ""],
  ];
  for (const [entries, status, rule] of cases) {
    test(`127.0.0.1 with allow ${JSON.stringify(entries)} → ${status}${rule ? ` "${rule}"` : ""} (CONNECT and HTTP)`, async () => {
      const h = await start(allow(...entries));
      const plain = parseResponse(await exchange(h.socketPath, get("127.0.0.1")));
      const { outer } = tunnelled(await exchange(h.socketPath, connect("127.0.0.1")));
      expect([plain.status, outer.status]).toEqual([status, status]);
      if (rule) expect([plain.headers["x-sandbox-rule"], outer.headers["x-sandbox-rule"]]).toEqual([rule, rule]);
    });
  }

  test("localhost with loopback → 200, answered without the resolver", async () => {
    const h = await start(allow("loopback"));
    expect(parseResponse(await exchange(h.socketPath, get("localhost"))).status).toBe(200);
    expect(h.lookups).toEqual([]);
  });
});

describe("egress proxy: wildcard names through the injected resolver", () => {
  const names = { "a.svc.test": ["127.0.0.1"], "deep.b.svc.test": ["127.0.0.1"], "svc.test": ["127.0.0.1"] };

  test("*.svc.test without loopback → 403: a listed name that resolves to loopback is still blocked", async () => {
    const h = await start(allow("*.svc.test"), names);
    const response = parseResponse(await exchange(h.socketPath, get("a.svc.test")));
    expect(response.status).toBe(403);
    expect(response.headers["x-sandbox-rule"]).toBe("block loopback 127.0.0.0/8");
    expect(response.body).toContain("a.svc.test resolves to 127.0.0.1");
  });

  // The apex too: that is what msb's suffix rules enforce, and one grammar means one thing on every back end.
  test("*.svc.test with loopback → subdomains and the apex answer, a lookalike does not", async () => {
    const h = await start(allow("*.svc.test", "loopback"), { ...names, "badsvc.test": ["127.0.0.1"] });
    expect(parseResponse(await exchange(h.socketPath, get("a.svc.test"))).status).toBe(200);
    expect(tunnelled(await exchange(h.socketPath, connect("deep.b.svc.test"))).outer.status).toBe(200);
    expect(parseResponse(await exchange(h.socketPath, get("svc.test"))).status).toBe(200);
    const lookalike = parseResponse(await exchange(h.socketPath, get("badsvc.test")));
    expect(lookalike.status).toBe(403);
    expect(lookalike.headers["x-sandbox-rule"]).toBe(`no rule matches badsvc.test:${echo.port}`);
  });
});

describe("egress proxy: DNS rebinding", () => {
  test("a listed name resolving to a private address → 403 block private, nothing connected", async () => {
    const h = await start(allow("rebind.test"), { "rebind.test": ["10.0.0.1"] });
    for (const request of [get("rebind.test"), connect("rebind.test")]) {
      const response = parseResponse(await exchange(h.socketPath, request));
      expect(response.status).toBe(403);
      expect(response.headers["x-sandbox-rule"]).toBe("block private 10.0.0.0/8");
      expect(response.body).toContain('add the keyword "private"');
    }
    expect(h.logLines.some((l) => l.includes('"egress allowed"'))).toBe(false);
  });

  test("a mixed answer (private first, loopback second) with loopback listed → only the loopback address is used", async () => {
    const h = await start(allow("rebind.test", "loopback"), { "rebind.test": ["10.0.0.1", "127.0.0.1"] });
    expect(parseResponse(await exchange(h.socketPath, get("rebind.test"))).status).toBe(200);
    expect(h.logLines.some((l) => l.includes('"address":"127.0.0.1"'))).toBe(true);
    expect(h.logLines.some((l) => l.includes("10.0.0.1"))).toBe(false);
  });
});

describe("egress proxy: unreachable targets", () => {
  test("an unresolvable name → 502 with the reason", async () => {
    const h = await start(allow("public"));
    const response = parseResponse(await exchange(h.socketPath, get("nowhere.test")));
    expect(response.status).toBe(502);
    expect(response.body).toContain("cannot resolve nowhere.test: ENOTFOUND");
  });

  test("nothing listening on an allowed address → 502 connection refused", async () => {
    const closedPort = await freePort();
    const h = await start(allow("loopback"));
    const response = parseResponse(await exchange(h.socketPath, `CONNECT 127.0.0.1:${closedPort} HTTP/1.1\r\n\r\n`));
    expect(response.status).toBe(502);
    expect(response.body).toContain("ECONNREFUSED");
  });
});

/** A loopback port that was free a moment ago (bound, then released). */
async function freePort(): Promise<number> {
  const server = createServer();
  const { promise, resolve } = Promise.withResolvers<void>();
  server.listen(0, "127.0.0.1", () => resolve());
  await promise;
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

beforeAll(() => {
  expect(echo.port).toBeGreaterThan(0);
});
