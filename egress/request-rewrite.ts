// The upstream request head for plain HTTP: origin form, Host from the URL, proxy headers out, secrets in.
import type { Parsed } from "./allow-entry";
import { headerTokens, headerValues, serializeHead, type HeaderField, type RequestHead } from "./http-head";
import type { EgressTarget } from "./policy";
import { substitute, type CompiledSecret } from "./secrets";
import { hostHeader } from "./target";

type UpstreamRequest = { head: Buffer; usedSecrets: string[] };

// Upgrade is dropped because the connection is closed after one response (no WebSocket over plain HTTP).
const DROPPED = new Set(["host", "connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te", "upgrade"]);

/** Refuses framing a server could read differently from the proxy (request smuggling). */
function framingProblem(headers: readonly HeaderField[]): string | null {
  const codings = headerTokens(headers, "transfer-encoding");
  const lengths = headerValues(headers, "content-length");
  if (codings.length > 0 && lengths.length > 0) return "both Transfer-Encoding and Content-Length are present";
  if (codings.length > 0 && codings[codings.length - 1] !== "chunked") return "Transfer-Encoding must end with chunked";
  if (new Set(lengths).size > 1 || lengths.some((l) => !/^\d{1,15}$/.test(l))) return "Content-Length is invalid or repeated with different values";
  return null;
}

/**
 * `secrets` are the rules already matched to this target. Substitution covers the request target (path
 * and query) and every forwarded header value; header names, the method and the body are never touched.
 */
export function buildUpstreamRequest(request: RequestHead, target: EgressTarget, originForm: string, secrets: readonly CompiledSecret[]): Parsed<UpstreamRequest> {
  const problem = framingProblem(request.headers);
  if (problem !== null) return { ok: false, reason: problem };
  // Headers the client lists in Connection are hop-by-hop too, except the ones that frame the body.
  const named = new Set(headerTokens(request.headers, "connection").filter((t) => t !== "content-length" && t !== "transfer-encoding"));
  const used = new Set<string>();
  const path = substitute(originForm, secrets, "target", used);
  const headers: HeaderField[] = [{ name: "Host", value: hostHeader(target) }];
  for (const header of request.headers) {
    const name = header.name.toLowerCase();
    if (DROPPED.has(name) || named.has(name)) continue;
    headers.push({ name: header.name, value: substitute(header.value, secrets, "header", used) });
  }
  // Redaction reads plain bytes only, so ask for an uncompressed answer when a secret went out.
  const forwarded = used.size > 0 ? [...headers.filter((h) => h.name.toLowerCase() !== "accept-encoding"), { name: "Accept-Encoding", value: "identity" }] : headers;
  forwarded.push({ name: "Connection", value: "close" });
  return { ok: true, value: { head: serializeHead(`${request.method} ${path} ${request.version}`, forwarded), usedSecrets: [...used] } };
}
