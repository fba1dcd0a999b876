// HTTP/1.x message heads: find the end, parse strictly (latin1, no obs-fold, no bare LF), write back.
import type { Parsed } from "./allow-entry";

export type HeaderField = { name: string; value: string };
export type RequestHead = { method: string; target: string; version: "HTTP/1.0" | "HTTP/1.1"; headers: HeaderField[] };
export type ResponseHead = { version: string; status: number; reason: string; headers: HeaderField[] };

const TERMINATOR = Buffer.from("\r\n\r\n");
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Index just past the blank line ending the head, or -1. `from` lets a caller resume a search. */
export function findHeadEnd(buffer: Buffer, from = 0): number {
  const at = buffer.indexOf(TERMINATOR, Math.max(0, from - 3));
  return at === -1 ? -1 : at + TERMINATOR.length;
}

function parseHeaders(lines: string[]): Parsed<HeaderField[]> {
  const headers: HeaderField[] = [];
  for (const line of lines) {
    if (line.startsWith(" ") || line.startsWith("\t")) return { ok: false, reason: "folded header lines (obs-fold) are not accepted" };
    const colon = line.indexOf(":");
    const name = colon === -1 ? "" : line.slice(0, colon);
    if (!TOKEN.test(name)) return { ok: false, reason: `malformed header line ${JSON.stringify(line.slice(0, 80))}` };
    const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, "");
    // Bare CR, LF or NUL inside a value is how requests get smuggled; refuse rather than repair.
    if (/[\r\n\0]/.test(value)) return { ok: false, reason: `header ${name} has a control character in its value` };
    headers.push({ name, value });
  }
  return { ok: true, value: headers };
}

function splitHead(text: string): string[] {
  // RFC 9112 §2.2: ignore blank lines before the start line.
  const lines = text.replace(/^(\r\n)+/, "").split("\r\n");
  while (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  return lines;
}

export function parseRequestHead(text: string): Parsed<RequestHead> {
  const [start = "", ...rest] = splitHead(text);
  const match = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) (\S+) (HTTP\/1\.[01])$/.exec(start);
  if (!match) return { ok: false, reason: `malformed request line ${JSON.stringify(start.slice(0, 120))}` };
  const headers = parseHeaders(rest);
  if (!headers.ok) return headers;
  return { ok: true, value: { method: match[1] as string, target: match[2] as string, version: match[3] as RequestHead["version"], headers: headers.value } };
}

export function parseResponseHead(text: string): Parsed<ResponseHead> {
  const [start = "", ...rest] = splitHead(text);
  const match = /^(HTTP\/1\.[01]) (\d{3})(?: ([^\r\n]*))?$/.exec(start);
  if (!match) return { ok: false, reason: `malformed status line ${JSON.stringify(start.slice(0, 120))}` };
  const headers = parseHeaders(rest);
  if (!headers.ok) return headers;
  return { ok: true, value: { version: match[1] as string, status: Number(match[2]), reason: match[3] ?? "", headers: headers.value } };
}

export function headerValues(headers: readonly HeaderField[], name: string): string[] {
  const lower = name.toLowerCase();
  return headers.filter((h) => h.name.toLowerCase() === lower).map((h) => h.value);
}

/** Comma-separated tokens across every instance of a header, lowercased (Connection, Transfer-Encoding). */
export function headerTokens(headers: readonly HeaderField[], name: string): string[] {
  return headerValues(headers, name).flatMap((v) => v.split(",").map((t) => t.trim().toLowerCase()).filter((t) => t !== ""));
}

export function serializeHead(startLine: string, headers: readonly HeaderField[]): Buffer {
  const lines = [startLine, ...headers.map((h) => `${h.name}: ${h.value}`)];
  return Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1");
}
