// The answers the proxy gives itself (403 with the rule, 400, 408, 431, 502, 503, 504), always closing.
import type { Denial, EgressTarget } from "./policy";
import { formatTarget } from "./policy";

const STATUS_TEXT: Record<number, string> = {
  400: "Bad Request",
  403: "Forbidden",
  405: "Method Not Allowed",
  408: "Request Timeout",
  431: "Request Header Fields Too Large",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

/** Header values come from host names and rules; anything outside printable ASCII is replaced. */
function headerSafe(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, "?");
}

export function plainResponse(status: number, body: string, headers: Record<string, string> = {}): Buffer {
  const payload = Buffer.from(body.endsWith("\n") ? body : `${body}\n`, "utf8");
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? "Error"}`,
    "Content-Type: text/plain; charset=utf-8",
    `Content-Length: ${payload.length}`,
    "Connection: close",
    ...Object.entries(headers).map(([name, value]) => `${name}: ${headerSafe(value)}`),
  ];
  return Buffer.concat([Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1"), payload]);
}

/** The 403 a denied request gets: the rule in `X-Sandbox-Rule` and in the body, with how to allow it. */
export function deniedResponse(decision: Denial, target: EgressTarget, howToAllow: string): Buffer {
  const body = [
    `denied by session-sandbox egress policy: ${decision.rule}`,
    `target: ${formatTarget(target)}`,
    `why: ${decision.reason}`,
    howToAllow,
  ].join("\n");
  return plainResponse(403, body, { "X-Sandbox-Rule": decision.rule });
}
