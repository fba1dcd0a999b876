// What the VM trust tests share: an HTTPS server on the host's loopback (reached by the guest as
// host.sandbox.internal), and a guest command that GETs it with Node's own TLS.
export const GUEST_HOST_ALIAS = "host.sandbox.internal";

/** An HTTPS server on 127.0.0.1 with `certificate`, added to `servers` (the test stops them); its port. */
export function serveTlsOnLoopback(servers: ReturnType<typeof Bun.serve>[], certificate: { certPem: string; keyPem: string }, fetch: (request: Request) => Response): number {
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: certificate.certPem, key: certificate.keyPem }, fetch });
  servers.push(server);
  return server.port!;
}

/**
 * The guest's Node GETs host.sandbox.internal:<port> through the VM's proxy, printing the body, or the TLS
 * error code on stderr with exit 1. Node 18's fetch ignores HTTPS_PROXY, so the tunnel is opened by hand; the TLS on top is Node's own, as
 * fetch's is. --use-bundled-ca: Node's own roots, not the system store, so only NODE_EXTRA_CA_CERTS can
 * make it trust a CA of ours.
 */
export const nodeGet = (port: number, flags = "--use-bundled-ca") =>
  `node ${flags} -e '
const http = require("http"), https = require("https");
const proxy = new URL(process.env.HTTPS_PROXY);
http.request({ host: proxy.hostname, port: proxy.port, method: "CONNECT", path: "${GUEST_HOST_ALIAS}:${port}" }).on("connect", (res, socket) => {
  https.get({ host: "${GUEST_HOST_ALIAS}", port: ${port}, path: "/", socket, agent: false }, (r) => r.pipe(process.stdout)).on("error", (e) => { console.error(e.code || e.message); process.exit(1); });
}).end();'`;
