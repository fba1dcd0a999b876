// The intercepted tunnel's upstream side: TLS to the real server, verified against the host's trust
// store (plus the operator's extra CAs) for the name the guest asked for. A failure names the reason.
import type { Socket } from "node:net";
import { connect, type TLSSocket } from "node:tls";
import { whenReady } from "./upstream";

/** What the TLS stack's verification codes mean, in words a user can act on. */
const REASONS: Record<string, string> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: "its certificate is self-signed",
  SELF_SIGNED_CERT_IN_CHAIN: "its certificate chain ends in a self-signed certificate this host does not trust",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "its certificate is signed by a CA this host does not trust",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "its certificate is signed by a CA this host does not trust",
  UNABLE_TO_GET_ISSUER_CERT: "its certificate is signed by a CA this host does not trust",
  CERT_HAS_EXPIRED: "its certificate has expired",
  CERT_NOT_YET_VALID: "its certificate is not valid yet",
  ERR_TLS_CERT_ALTNAME_INVALID: "its certificate is for another name",
  CERT_REVOKED: "its certificate is revoked",
};

const FIX = "if the server uses a private CA, give its certificate to the manager with SANDBOX_EXTRA_CA_FILE";

function reasonFor(error: Error & { code?: string }, host: string): string {
  const known = error.code ? REASONS[error.code] : undefined;
  if (known) return `the upstream ${host} failed TLS verification: ${known} (${error.code}); nothing was sent to it; ${FIX}`;
  return `TLS with the upstream ${host} failed: ${error.code ?? error.message}; nothing was sent to it`;
}

/**
 * Speaks TLS over `socket` (already connected to an allowed address) as a client that verifies the
 * server for `host` against `roots`. HTTP/1.1 only (ALPN), since the proxy parses what goes through.
 */
export function secureUpstream(socket: Socket, host: string, roots: readonly string[], timeoutMs: number): Promise<TLSSocket> {
  const secure = connect({ socket, servername: host, ca: [...roots], rejectUnauthorized: true, ALPNProtocols: ["http/1.1"] });
  const says = { timedOut: `TLS with the upstream ${host} took longer than ${timeoutMs} ms`, failed: (error: Error & { code?: string }) => reasonFor(error, host) };
  return whenReady(secure, "secureConnect", timeoutMs, says, () => {
    secure.destroy();
    socket.destroy();
  });
}
