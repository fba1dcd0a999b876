// Where a proxied request goes: CONNECT's host:port and plain HTTP's absolute URL, normalized for the policy.
import { normalizeHostName, type Parsed } from "./allow-entry";
import { formatIp, parseIp, parseIpv4 } from "./ip-address";
import type { EgressTarget } from "./policy";

const NAME_LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

function parseHost(raw: string): Parsed<string> {
  if (raw.startsWith("[")) {
    const inner = raw.endsWith("]") ? raw.slice(1, -1) : "";
    const address = inner.includes(":") ? parseIp(inner) : null;
    return address ? { ok: true, value: formatIp(address) } : { ok: false, reason: `${JSON.stringify(raw)} is not a bracketed IPv6 address` };
  }
  const name = normalizeHostName(raw);
  if (parseIpv4(name) !== null) return { ok: true, value: name };
  // Non-ASCII names must arrive as punycode; anything odd is refused rather than guessed at.
  if (name.length === 0 || name.length > 253 || !name.split(".").every((l) => NAME_LABEL.test(l))) {
    return { ok: false, reason: `${JSON.stringify(raw)} is not a valid host name` };
  }
  return { ok: true, value: name };
}

/** `host:port` or `[v6]:port`; the port is required unless `defaultPort` is given. */
export function parseAuthority(text: string, defaultPort: number | null): Parsed<EgressTarget> {
  const match = /^(\[[^\]]*\]|[^:[\]]*)(?::(\d{1,5}))?$/.exec(text);
  if (!match) return { ok: false, reason: `${JSON.stringify(text)} is not host:port` };
  const portText = match[2];
  const port = portText === undefined ? defaultPort : Number(portText);
  if (port === null) return { ok: false, reason: `${JSON.stringify(text)} has no port; CONNECT needs host:port` };
  if (port < 1 || port > 65535) return { ok: false, reason: `port ${port} is not 1-65535` };
  const host = parseHost(match[1] ?? "");
  return host.ok ? { ok: true, value: { host: host.value, port } } : host;
}

/** `http://host[:port]/path?query` → the target and the origin-form `/path?query` to send upstream. */
export function parseAbsoluteUrl(text: string): Parsed<{ target: EgressTarget; originForm: string }> {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text);
  if (!scheme) return { ok: false, reason: "this is a forward proxy: send the absolute URL (GET http://host/path), or CONNECT host:port for TLS" };
  if (scheme[1]?.toLowerCase() !== "http") {
    return { ok: false, reason: `${scheme[1]}:// is not proxied as plain HTTP; use CONNECT host:port for https and other protocols` };
  }
  const rest = text.slice(scheme[0].length);
  const end = rest.search(/[/?#]/);
  const authority = end === -1 ? rest : rest.slice(0, end);
  if (authority.includes("@")) return { ok: false, reason: "credentials in the URL (user@host) are not forwarded; send an Authorization header" };
  const target = parseAuthority(authority, 80);
  if (!target.ok) return target;
  let originForm = end === -1 ? "/" : rest.slice(end).replace(/#.*$/, "");
  if (originForm.startsWith("?")) originForm = `/${originForm}`;
  if (originForm === "") originForm = "/";
  return { ok: true, value: { target: target.value, originForm } };
}

/** The Host header value for a target: the port is left out when it is the scheme's default. */
export function hostHeader(target: EgressTarget, defaultPort = 80): string {
  const host = target.host.includes(":") ? `[${target.host}]` : target.host;
  return target.port === defaultPort ? host : `${host}:${target.port}`;
}
