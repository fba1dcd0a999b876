// TLS interception of a CONNECT to a host that receives secrets: the proxy answers the guest's TLS with a
// leaf the manager's CA minted for that name (the guest trusts the CA), opens its own verified TLS to the
// real server, and forwards the one HTTP/1.1 request inside exactly as a plain-HTTP request: placeholders
// substituted in the request line and headers, every value redacted from the answer. HTTP/1.1 only (ALPN
// `http/1.1`); one request per tunnel (`Connection: close`), as for plain HTTP.
import type { Socket } from "node:net";
import { createSecureContext, TLSSocket } from "node:tls";
import { answer, forwardPrepared, prepareHttp, refuse } from "./forward-request";
import type { ConnectionContext, Interception } from "./connection-context";
import { parseRequestHead } from "./http-head";
import { parseIp } from "./ip-address";
import { formatTarget, type EgressTarget } from "./policy";
import { plainResponse } from "./proxy-responses";
import { HeadReadError, readHead } from "./read-head";
import { domainMatches, normalizeHostName } from "./allow-entry";
import type { CompiledSecret } from "./secrets";
import { ESTABLISHED } from "./tunnel";
import { UpstreamError } from "./upstream";
import { secureUpstream } from "./upstream-tls";

/**
 * A tunnel is opened up when any secret rule names its host, on any port: a value stored through one
 * port must not be readable through another. IP literals are never matched by rules, so never opened.
 */
export function needsInterception(secrets: readonly CompiledSecret[], target: EgressTarget): boolean {
  if (parseIp(target.host) !== null) return false;
  const host = normalizeHostName(target.host);
  return secrets.some((secret) => secret.hosts.some((pattern) => domainMatches({ ...pattern, port: null }, host, target.port)));
}

/**
 * Resolves when the guest's side is closed. `early` holds bytes the guest sent right after CONNECT;
 * `secrets` are the rules read for this connection (a change of rules drops the connection anyway).
 */
export async function interceptTunnel(
  client: Socket,
  upstream: Socket,
  early: Buffer,
  target: EgressTarget,
  secrets: readonly CompiledSecret[],
  ctx: ConnectionContext & { interception: Interception },
): Promise<void> {
  const shown = formatTarget(target);
  let leaf: { certPem: string; keyPem: string };
  try {
    leaf = await ctx.interception.leafFor(target.host);
  } catch (error) {
    upstream.destroy();
    ctx.log.error("egress interception certificate failed", { target: shown, error: (error as Error).message });
    return void refuse(client, 502, `no certificate could be made for ${shown}, so nothing was sent`, ctx);
  }
  const verified = secureUpstream(upstream, target.host, ctx.interception.upstreamRoots, ctx.limits.connectTimeoutMs);
  verified.catch(() => undefined); // awaited below; a failure must not be unhandled meanwhile
  client.write(ESTABLISHED);
  if (early.length > 0) client.unshift(early);
  const guest = new TLSSocket(client, { isServer: true, secureContext: createSecureContext({ cert: leaf.certPem, key: leaf.keyPem }), ALPNProtocols: ["http/1.1"] });
  // Tracked itself: in Bun, destroying the wrapped socket does not close the connection (revocation).
  ctx.track(guest);
  const closed = new Promise<void>((resolve) => guest.once("close", () => resolve()));
  guest.on("error", (error: Error & { code?: string }) => {
    // Typically the guest does not trust the manager's CA (an image without it, a pinned client).
    ctx.log.info("egress interception handshake failed", { target: shown, reason: error.code ?? error.message });
    guest.destroy();
    client.destroy();
    upstream.destroy();
  });
  let head: { head: Buffer; rest: Buffer };
  try {
    head = await readHead(guest, ctx.limits.maxHeadBytes, ctx.limits.headTimeoutMs);
  } catch (error) {
    upstream.destroy();
    if (error instanceof HeadReadError && error.status !== null) answer(guest, plainResponse(error.status, `session-sandbox egress proxy: ${error.message}`), ctx);
    else guest.destroy();
    return closed;
  }
  const parsed = parseRequestHead(head.head.toString("latin1"));
  const originForm = parsed.ok && parsed.value.target.startsWith("/") ? parsed.value.target : null;
  if (!parsed.ok || originForm === null || parsed.value.method === "CONNECT") {
    upstream.destroy();
    refuse(guest, 400, parsed.ok ? "inside a tunnel, send an origin-form request (GET /path HTTP/1.1)" : parsed.reason, ctx);
    return closed;
  }
  const request = { head: parsed.value, target, originForm, rest: head.rest };
  const prepared = prepareHttp(guest, request, ctx, secrets);
  if (prepared === null) {
    upstream.destroy();
    return closed;
  }
  let secureSide: Socket;
  try {
    secureSide = await verified;
  } catch (error) {
    const reason = error instanceof UpstreamError ? error.message : String(error);
    ctx.log.warn("egress upstream TLS refused", { target: shown, reason });
    answer(guest, plainResponse(error instanceof UpstreamError ? error.status : 502, `session-sandbox egress proxy: ${reason}`), ctx);
    return closed;
  }
  ctx.track(secureSide);
  if (prepared.usedSecrets.length > 0) {
    ctx.log.info("egress secrets substituted", { kind: "intercept", target: shown, secrets: prepared.usedSecrets });
    ctx.onSubstituted(prepared.usedSecrets, target.host);
  }
  await forwardPrepared(guest, secureSide, prepared, request, ctx);
  return closed;
}
