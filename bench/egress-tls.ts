// Egress TLS benchmark (not a test), `bun run bench:egress-tls`: one HTTPS request through the egress
// proxy — Unix socket, CONNECT, TLS handshake, GET, the whole answer — to a host that receives a secret
// (intercepted: the guest's TLS ends at the proxy, which opens its own verified TLS upstream and rewrites
// the request) against the same request to a host that receives none (an opaque tunnel), interleaved
// in the same run; ratio intercepted / opaque. The leaf for the intercepted name is minted once by the
// real manager CA (that first mint is reported on its own); the upstreams are loopback HTTPS servers with
// certificates from a test CA the proxy trusts.
import { mkdtempSync, rmSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { startEgressProxy } from "../egress/index";
import { createLogger } from "../app/log";
import { loadOrCreateManagerCa } from "../app/tls/manager-ca";
import { makeTestPki } from "../test/fixtures/test-pki";

const RUNS = Number(process.env.BENCH_RUNS ?? 200);
const work = mkdtempSync(join(tmpdir(), "ss-bench-egress-tls-"));
const pki = makeTestPki();
const ca = await loadOrCreateManagerCa(work);
const serve = (name: string) => {
  const cert = pki.issue(name);
  return Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: cert.certPem, key: cert.keyPem }, fetch: () => new Response("ok ".repeat(100)) });
};
const secretHost = serve("secret.bench");
const secretPort = secretHost.port as number;
const openHost = serve("open.bench");
const openPort = openHost.port as number;
const proxy = await startEgressProxy({
  socketPath: join(work, "proxy.sock"),
  policy: () => ({ mode: "allowlist", allow: ["secret.bench", "open.bench", "loopback"] }),
  resolve: async () => ["127.0.0.1"],
  secrets: () => [{ name: "TOKEN", placeholder: "BENCH_PLACEHOLDER_TOKEN", value: "bench-secret-value-0123456789", hosts: ["secret.bench"] }],
  log: createLogger("silent"),
  interception: { leafFor: (host) => ca.leafFor(host), upstreamRoots: [pki.caPem] },
});

/** One request as a guest makes it: CONNECT through the proxy's socket, TLS for `host`, GET, read to the end. */
function request(host: string, port: number, trust: string): Promise<number> {
  const start = performance.now();
  const { promise, resolve, reject } = Promise.withResolvers<number>();
  const socket = createConnection({ path: proxy.socketPath });
  socket.once("error", reject);
  socket.once("data", (head: Buffer) => {
    if (!head.toString("latin1").startsWith("HTTP/1.1 200")) return reject(new Error(head.toString("latin1")));
    const secure = tlsConnect({ socket, servername: host, ca: trust }, () => {
      secure.write(`GET / HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer BENCH_PLACEHOLDER_TOKEN\r\nConnection: close\r\n\r\n`);
    });
    let body = "";
    secure.on("data", (chunk: Buffer) => (body += chunk.toString("latin1")));
    secure.on("error", reject);
    secure.on("end", () => (body.startsWith("HTTP/1.1 200") ? resolve(performance.now() - start) : reject(new Error(body.slice(0, 200)))));
  });
  socket.write(`CONNECT ${host}:${port} HTTP/1.1\r\n\r\n`);
  return promise;
}

const median = (samples: number[]) => [...samples].sort((a, b) => a - b)[Math.floor((samples.length - 1) / 2)]!;
const p95 = (samples: number[]) => [...samples].sort((a, b) => a - b)[Math.ceil(0.95 * samples.length) - 1]!;

try {
  const firstMint = await request("secret.bench", secretPort, ca.certPem());
  for (let i = 0; i < 10; i++) {
    await request("secret.bench", secretPort, ca.certPem());
    await request("open.bench", openPort, pki.caPem);
  }
  const intercepted: number[] = [];
  const opaque: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    opaque.push(await request("open.bench", openPort, pki.caPem));
    intercepted.push(await request("secret.bench", secretPort, ca.certPem()));
  }
  const o = median(opaque);
  const n = median(intercepted);
  console.log(`\negress TLS: ${RUNS} requests each, interleaved; one request = connect + CONNECT + TLS handshake + GET + whole answer\n`);
  console.log(`${"measurement".padEnd(44)} ${"median ms".padStart(10)} ${"p95 ms".padStart(10)} ${"ratio".padStart(8)}`);
  console.log(`${"opaque tunnel (no secret for the host)".padEnd(44)} ${o.toFixed(2).padStart(10)} ${p95(opaque).toFixed(2).padStart(10)} ${"1.00x".padStart(8)}`);
  console.log(`${"intercepted (secret host, leaf cached)".padEnd(44)} ${n.toFixed(2).padStart(10)} ${p95(intercepted).toFixed(2).padStart(10)} ${`${(n / o).toFixed(2)}x`.padStart(8)}`);
  console.log(`first intercepted request (leaf minted by the manager CA): ${firstMint.toFixed(1)} ms`);
} finally {
  await proxy.close();
  secretHost.stop(true);
  openHost.stop(true);
  pki.cleanup();
  rmSync(work, { recursive: true, force: true });
}
