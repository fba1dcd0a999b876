// A guest command: Node's https GET of host.sandbox.internal:<port> through the VM's proxy, printing the
// body, or the TLS error code on stderr with exit 1.
export const GUEST_HOST_ALIAS = "host.sandbox.internal";

/**
 * Node 18's fetch ignores HTTPS_PROXY, so the tunnel is opened by hand; the TLS on top is Node's own, as
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
