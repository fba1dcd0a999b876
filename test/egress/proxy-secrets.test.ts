// Secrets through the proxy: substituted only for the listed host, echoes redacted, tunnels untouched, logs clean.
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import type { SecretRule } from "../../egress/secrets";
import { exchange, parseResponse, startEchoTarget, startHarness, startRawTarget, type Harness } from "./proxy-harness";

const VALUE = "ghp_R3alT0kenValue+with/slash=";
const PLACEHOLDER = "SANDBOX_SECRET_GITHUB_TOKEN";
const RULE: SecretRule = { name: "GITHUB_TOKEN", placeholder: PLACEHOLDER, value: VALUE, hosts: ["api.test"] };
const NAMES = { "api.test": ["127.0.0.1"], "other.test": ["127.0.0.1"] };
const POLICY = { mode: "allowlist" as const, allow: ["api.test", "other.test", "loopback"] };

const echo = startEchoTarget((request) => {
  // Answers the way a misbehaving API might: the received credential in a header too.
  if (new URL(request.url).pathname === "/gzip") return new Response("x", { headers: { "Content-Encoding": "gzip" } });
  return undefined;
});
afterAll(() => echo.stop());

let harness: Harness | null = null;
afterEach(async () => {
  const logs = harness?.logLines ?? [];
  await harness?.close();
  harness = null;
  // Whatever a test did, no log line may hold the value, raw or percent-encoded.
  for (const line of logs) {
    expect(line).not.toContain(VALUE);
    expect(line).not.toContain(encodeURIComponent(VALUE));
  }
});

const start = async (secrets: SecretRule[] = [RULE]) => (harness = await startHarness({ policy: POLICY, names: NAMES, secrets }));

const request = (host: string, port = echo.port, path = `/repos?token=${PLACEHOLDER}`) => {
  const body = `body keeps ${PLACEHOLDER}`;
  return [
    `POST http://${host}:${port}${path} HTTP/1.1`,
    `Authorization: Bearer ${PLACEHOLDER}`,
    `X-Both: ${PLACEHOLDER}:${PLACEHOLDER}`,
    `Content-Length: ${body.length}`,
    "",
    body,
  ].join("\r\n");
};

describe("egress proxy: secrets", () => {
  test("listed host → value in the query and header values, not the body; the echo comes back with the placeholder only", async () => {
    const h = await start();
    const raw = await exchange(h.socketPath, request("api.test"));
    const seen = echo.seen.at(-1);
    expect(seen?.path).toBe(`/repos?token=${encodeURIComponent(VALUE)}`);
    expect(seen?.headers.authorization).toBe(`Bearer ${VALUE}`);
    expect(seen?.headers["x-both"]).toBe(`${VALUE}:${VALUE}`);
    expect(seen?.body).toBe(`body keeps ${PLACEHOLDER}`);
    expect(seen?.headers["accept-encoding"]).toBe("identity");

    const text = raw.toString("latin1");
    expect(text).not.toContain(VALUE);
    expect(text).not.toContain(encodeURIComponent(VALUE));
    const echoed = JSON.parse(parseResponse(raw).body);
    expect(echoed.headers.authorization).toBe(`Bearer ${PLACEHOLDER}`);
    expect(echoed.path).toBe(`/repos?token=${PLACEHOLDER}`);
    expect(h.logLines.some((l) => l.includes('"egress allowed"') && l.includes('"secrets":["GITHUB_TOKEN"]'))).toBe(true);
    expect(h.logLines.some((l) => l.includes('"egress secret redacted from response"') && l.includes("GITHUB_TOKEN"))).toBe(true);
  });

  test("another host → placeholders unchanged everywhere", async () => {
    const h = await start();
    await exchange(h.socketPath, request("other.test"));
    const seen = echo.seen.at(-1);
    expect(seen?.headers.host).toBe(`other.test:${echo.port}`);
    expect(seen?.path).toBe(`/repos?token=${PLACEHOLDER}`);
    expect(seen?.headers.authorization).toBe(`Bearer ${PLACEHOLDER}`);
    expect(JSON.stringify(seen)).not.toContain(VALUE);
  });

  test("the same host by IP literal → placeholder unchanged (rules match names only)", async () => {
    const h = await start();
    await exchange(h.socketPath, request("127.0.0.1"));
    expect(echo.seen.at(-1)?.headers.authorization).toBe(`Bearer ${PLACEHOLDER}`);
  });

  test("CONNECT to a listed host, on any port, with no interception configured → 403 naming why; nothing reaches the host", async () => {
    const h = await start();
    const before = echo.seen.length;
    const inner = `GET /tunnel HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer ${PLACEHOLDER}\r\nConnection: close\r\n\r\n`;
    const answer = (await exchange(h.socketPath, `CONNECT api.test:${echo.port} HTTP/1.1\r\n\r\n${inner}`)).toString("latin1");
    expect(answer).toStartWith("HTTP/1.1 403 Forbidden");
    expect(answer).toContain("receives secrets");
    expect(echo.seen.length).toBe(before);
  });

  test("a target that echoes the value in pieces (split across writes) → the guest sees the placeholder", async () => {
    const target = await startRawTarget((socket, received) => {
      // Echo the credential it was sent, split mid-value, in a close-delimited body.
      const token = /Authorization: Bearer (\S+)/.exec(received)?.[1] ?? "";
      const body = `you sent ${token} ok`;
      const cut = body.indexOf(token) + 7;
      socket.write(`HTTP/1.1 200 OK\r\nX-Echo: ${token}\r\n\r\n${body.slice(0, cut)}`, () => socket.end(body.slice(cut)));
    });
    try {
      const h = await start();
      const raw = await exchange(h.socketPath, `GET http://api.test:${target.port}/ HTTP/1.1\r\nAuthorization: Bearer ${PLACEHOLDER}\r\n\r\n`);
      const response = parseResponse(raw);
      expect(raw.toString("latin1")).not.toContain(VALUE);
      expect(response.headers["x-echo"]).toBe(PLACEHOLDER);
      expect(response.body).toBe(`you sent ${PLACEHOLDER} ok`);
    } finally {
      await target.stop();
    }
  });

  test("a malformed answer quoting the value → 502 whose body and logs show only the placeholder", async () => {
    const target = await startRawTarget((socket, received) => {
      const token = /Authorization: Bearer (\S+)/.exec(received)?.[1] ?? "";
      socket.end(`HTTP/1.1 200 OK\r\nnot a header ${token}\r\n\r\n`);
    });
    try {
      const h = await start();
      const raw = await exchange(h.socketPath, `GET http://api.test:${target.port}/ HTTP/1.1\r\nAuthorization: Bearer ${PLACEHOLDER}\r\n\r\n`);
      const response = parseResponse(raw);
      expect(response.status).toBe(502);
      expect(response.body).toContain(PLACEHOLDER);
      expect(raw.toString("latin1")).not.toContain(VALUE);
    } finally {
      await target.stop();
    }
  });

  test("hole: a malformed chunk that echoes the value → the 502 body and the logs hold no part of it", async () => {
    const target = await startRawTarget((socket, received) => {
      const token = /Authorization: Bearer (\S+)/.exec(received)?.[1] ?? "";
      socket.end(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${token}\r\n`);
    });
    try {
      const h = await start();
      const raw = (await exchange(h.socketPath, `GET http://api.test:${target.port}/ HTTP/1.1\r\nAuthorization: Bearer ${PLACEHOLDER}\r\n\r\n`)).toString("latin1");
      expect(raw).toStartWith("HTTP/1.1 502 Bad Gateway");
      expect(raw).toContain("bad chunk size line");
      // Not even a prefix: a quoted fragment of a value is not recognised by redaction.
      for (const text of [raw, ...h.logLines]) expect(text).not.toContain(VALUE.slice(0, 10));
    } finally {
      await target.stop();
    }
  });

  test("a compressed answer to a request that carried a secret → 502, since it cannot be checked", async () => {
    const h = await start();
    const response = parseResponse(await exchange(h.socketPath, request("api.test", echo.port, `/gzip?t=${PLACEHOLDER}`)));
    expect(response.status).toBe(502);
    expect(response.body).toContain("cannot be checked for the secret");
  });

  test("an unusable rule → warned by name, substitutes nothing, its value never logged", async () => {
    const broken: SecretRule = { name: "BROKEN", placeholder: "SANDBOX_SECRET_BROKEN", value: `${VALUE}\r\nX-Injected: 1`, hosts: ["api.test"] };
    const h = await start([broken]);
    await exchange(h.socketPath, `GET http://api.test:${echo.port}/ HTTP/1.1\r\nAuthorization: Bearer SANDBOX_SECRET_BROKEN\r\n\r\n`);
    expect(echo.seen.at(-1)?.headers.authorization).toBe("Bearer SANDBOX_SECRET_BROKEN");
    expect(echo.seen.at(-1)?.headers["x-injected"]).toBeUndefined();
    expect(h.logLines.some((l) => l.includes('"egress secret rule unusable"') && l.includes('"secret":"BROKEN"'))).toBe(true);
  });
});
