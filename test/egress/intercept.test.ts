// TLS interception in the egress proxy, with real TLS end to end: HTTPS
// upstreams on loopback with certificates from a test CA the proxy trusts (as SANDBOX_EXTRA_CA_FILE does),
// a second test CA standing in for the manager's (the guest trusts it), and curl as the guest, through a
// TCP→Unix forwarder as socat does in a VM.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createConnection } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { makeTestPki, type TestPki } from "../fixtures/test-pki";
import { startHarness, startTcpForwarder, type Harness } from "./proxy-harness";

const VALUE = "s3cr3t/v4lue+with\"quotes\\-0123456789";
const PLACEHOLDER = "SANDBOX_SECRET_API_0123456789";
const curl = Bun.which("curl") as string;

let upstreamPki: TestPki;
let managerPki: TestPki;
let harness: Harness;
let forwarder: Awaited<ReturnType<typeof startTcpForwarder>>;
let forwarderPort = 0;
const upstreams: ReturnType<typeof Bun.serve>[] = [];
const received: { path: string; auth: string | null; body: string }[] = [];
/** Values the upstreams stored through one request and give back through another (hole 2). */
const stored: string[] = [];

function https(name: string, cert: { certPem: string; keyPem: string }, fetch?: (request: Request) => Response | Promise<Response>, hostname = "127.0.0.1") {
  const server = Bun.serve({
    hostname,
    port: 0,
    tls: { cert: cert.certPem, key: cert.keyPem },
    fetch:
      fetch ??
      (async (request) => {
        const url = new URL(request.url);
        const auth = request.headers.get("authorization");
        received.push({ path: url.pathname + url.search, auth, body: await request.text() });
        // The echo every hostile or careless server gives: the credential back, in every common encoding.
        const echoed = auth ?? "";
        return Response.json({ server: name, path: url.pathname + url.search, auth: echoed, base64: Buffer.from(echoed).toString("base64"), url: encodeURIComponent(echoed) });
      }),
  });
  upstreams.push(server);
  return server;
}

let secretHost: ReturnType<typeof Bun.serve>;
let plainHost: ReturnType<typeof Bun.serve>;
let selfSigned: ReturnType<typeof Bun.serve>;
let wrongName: ReturnType<typeof Bun.serve>;
let expired: ReturnType<typeof Bun.serve>;
let storeHost: ReturnType<typeof Bun.serve>;
let storeHttp: ReturnType<typeof Bun.serve>;

beforeAll(async () => {
  upstreamPki = makeTestPki();
  managerPki = makeTestPki("manager CA stand-in");
  secretHost = https("api.test", upstreamPki.issue("api.test"));
  // A host that receives no secret lives at another address than the secret hosts (secret-destinations.ts).
  plainHost = https("open.test", upstreamPki.issue("open.test"), undefined, "127.0.0.2");
  selfSigned = https("self.test", upstreamPki.selfSigned("self.test"));
  wrongName = https("wrong.test", upstreamPki.issue("somewhere-else.test"));
  expired = https("old.test", upstreamPki.issue("old.test", { expired: true }));
  const storeHandler = async (request: Request) => {
    const url = new URL(request.url);
    if (url.pathname === "/store") stored.push(request.headers.get("authorization") ?? "");
    return new Response(`stored: ${stored.at(-1) ?? ""}\n`);
  };
  storeHost = https("store.test", upstreamPki.issue("store.test"), storeHandler);
  storeHttp = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: storeHandler });
  const names: Record<string, string[]> = { ...Object.fromEntries(["api.test", "self.test", "wrong.test", "old.test", "store.test", "alias.test"].map((n) => [n, ["127.0.0.1"]])), "open.test": ["127.0.0.2"] };
  const issued = new Map<string, { certPem: string; keyPem: string }>();
  harness = await startHarness({
    policy: { mode: "allowlist", allow: ["api.test", "open.test", "self.test", "wrong.test", "old.test", "store.test", "alias.test", "loopback"] },
    names,
    secrets: [
      { name: "API_TOKEN", placeholder: PLACEHOLDER, value: VALUE, hosts: ["api.test", "self.test", "wrong.test", "old.test", "store.test"] },
    ],
    interception: {
      async leafFor(host) {
        if (!issued.has(host)) issued.set(host, managerPki.issue(host));
        return issued.get(host)!;
      },
      upstreamRoots: [upstreamPki.caPem],
    },
  });
  forwarder = await startTcpForwarder(harness.socketPath);
  forwarderPort = forwarder.port;
}, 60_000);

afterAll(async () => {
  await forwarder?.close();
  await harness?.close();
  for (const server of upstreams) server.stop(true);
  storeHttp?.stop(true);
  upstreamPki?.cleanup();
  managerPki?.cleanup();
});

/** curl as the guest: through the proxy, trusting only the manager's CA (as a VM's bundle does). */
async function guestCurl(args: string[], cacert = managerPki.caFile) {
  const proc = Bun.spawn([curl, "-sS", "--max-time", "20", "--cacert", cacert, "-x", `http://127.0.0.1:${forwarderPort}`, ...args], { stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { exitCode, stdout, stderr };
}

/** Every form of the value the acceptance names: plain, base64 (at any alignment), URL-encoded, JSON-escaped. */
function leaks(text: string): string[] {
  const forms = [VALUE, encodeURIComponent(VALUE), JSON.stringify(VALUE).slice(1, -1)];
  const found = forms.filter((form) => text.includes(form));
  for (const token of text.split(/[^A-Za-z0-9+/=_-]+/)) {
    const decoded = Buffer.from(token.replace(/-/g, "+").replace(/_/g, "/"), "base64").toString("latin1");
    if (decoded.includes(VALUE)) found.push(`base64 ${token}`);
  }
  return found;
}

describe.skipIf(curl === undefined)("TLS interception", () => {
  test("HTTPS to a secret host → the upstream receives the value (header and query); the guest sees only the placeholder, in every encoding", async () => {
    const result = await guestCurl(["-H", `Authorization: Bearer ${PLACEHOLDER}`, `https://api.test:${secretHost.port}/v1/items?token=${PLACEHOLDER}`]);
    expect(result.stderr).toBe("");
    expect(result.exitCode).toBe(0);
    expect(received.at(-1)).toEqual({ path: `/v1/items?token=${encodeURIComponent(VALUE)}`, auth: `Bearer ${VALUE}`, body: "" });
    const answer = JSON.parse(result.stdout) as Record<string, string>;
    expect(answer.auth).toBe(`Bearer ${PLACEHOLDER}`);
    expect(answer.path).toBe(`/v1/items?token=${PLACEHOLDER}`);
    expect(leaks(result.stdout)).toEqual([]);
    expect(leaks(harness.logLines.join("\n"))).toEqual([]);
    expect(harness.logLines.some((line) => line.includes('"kind":"intercept"') && line.includes(`api.test:${secretHost.port}`))).toBe(true);
  });

  test("the guest's TLS is answered by a leaf of the manager's CA for that name (not the upstream's)", async () => {
    const issuer = await new Promise<string>((resolve, reject) => {
      const socket = createConnection({ path: harness.socketPath });
      socket.once("data", () => {
        const secure = tlsConnect({ socket, servername: "api.test", ca: managerPki.caPem }, () => {
          resolve(String(secure.getPeerCertificate().issuer.CN));
          secure.destroy();
        });
        secure.on("error", reject);
      });
      socket.write(`CONNECT api.test:${secretHost.port} HTTP/1.1\r\n\r\n`);
    });
    expect(issuer).toBe("manager CA stand-in");
  });

  test("a host that receives no secret → still an opaque tunnel: the guest sees the upstream's own certificate", async () => {
    expect((await guestCurl([`https://open.test:${plainHost.port}/`])).exitCode).not.toBe(0); // the manager CA does not vouch for it
    const direct = await guestCurl([`https://open.test:${plainHost.port}/opaque`], upstreamPki.caFile);
    expect(direct.exitCode).toBe(0);
    expect(JSON.parse(direct.stdout)).toMatchObject({ server: "open.test", path: "/opaque" });
    expect(harness.logLines.some((line) => line.includes('"kind":"connect"') && line.includes(`open.test:${plainHost.port}`))).toBe(true);
  });

  test("a CONNECT by another name to where a secret host lives → opened up (the manager CA's certificate), never an opaque tunnel; by its IP literal → refused (403)", async () => {
    // The guest's TLS ends at the proxy: what it sees is the manager CA's leaf (issued for the name it asked),
    // and the upstream, which has no certificate for that name, is not reached: 502, never a tunnel.
    const alias = await guestCurl(["-v", `https://alias.test:${secretHost.port}/`]);
    expect(alias.stderr).toContain("manager CA stand-in");
    expect(alias.stdout).toContain("for another name");
    expect(harness.logLines.some((line) => line.includes('"kind":"intercept"') && line.includes(`alias.test:${secretHost.port}`))).toBe(true);
    const literal = await guestCurl(["-v", `https://127.0.0.1:${secretHost.port}/`]);
    expect(literal.exitCode).toBe(56);
    expect(literal.stderr).toContain("403");
  });

  test.each([
    ["self-signed", () => `https://self.test:${selfSigned.port}/`, "self-signed"],
    ["for another name", () => `https://wrong.test:${wrongName.port}/`, "for another name"],
    ["expired", () => `https://old.test:${expired.port}/`, "has expired"],
  ])("an upstream whose certificate is %s → 502 naming the reason; nothing is sent to it", async (_, url, reason) => {
    const before = received.length;
    const result = await guestCurl(["-i", "-H", `Authorization: Bearer ${PLACEHOLDER}`, url()]);
    expect(result.exitCode).toBe(0);
    // curl -i shows the proxy's CONNECT answer first, then the answer inside the tunnel.
    expect(result.stdout).toStartWith("HTTP/1.1 200 Connection Established\r\n\r\nHTTP/1.1 502 Bad Gateway");
    expect(result.stdout).toContain(reason);
    expect(result.stdout).toContain("SANDBOX_EXTRA_CA_FILE");
    expect(received.length).toBe(before);
  });

  test("hole: a value stored over plain HTTP, read back through CONNECT → redacted (the tunnel is intercepted)", async () => {
    const store = await guestCurl(["-H", `Authorization: ${PLACEHOLDER}`, `http://store.test:${storeHttp.port}/store`]);
    expect(store.exitCode).toBe(0);
    expect(stored.at(-1)).toBe(VALUE);
    const load = await guestCurl([`https://store.test:${storeHost.port}/load`]);
    expect(load).toMatchObject({ exitCode: 0, stdout: `stored: ${PLACEHOLDER}\n` });
  });

  test("a guest that does not trust the manager's CA → its handshake fails; nothing reaches the upstream", async () => {
    const before = received.length;
    const result = await guestCurl(["-H", `Authorization: Bearer ${PLACEHOLDER}`, `https://api.test:${secretHost.port}/`], upstreamPki.caFile);
    expect(result.exitCode).not.toBe(0);
    expect(received.length).toBe(before);
  });

  test("inside the tunnel, a request for another Host → still sent to the CONNECT target, with its Host", async () => {
    const result = await guestCurl(["-H", "Host: evil.test", "-H", `Authorization: Bearer ${PLACEHOLDER}`, `https://api.test:${secretHost.port}/host`]);
    expect(result.exitCode).toBe(0);
    expect(received.at(-1)?.path).toBe("/host");
  });
});
