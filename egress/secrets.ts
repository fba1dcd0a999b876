// Secret rules for plain HTTP: validation (never echoing a value) and placeholder → value substitution.
import { domainMatches, normalizeHostName, parseDomainPattern, type DomainPattern } from "./allow-entry";
import type { EgressTarget } from "./policy";

/** The guest only ever sees `placeholder`; the proxy swaps in `value` for requests to `hosts`. */
export type SecretRule = { name: string; placeholder: string; value: string; hosts: string[] };

export type CompiledSecret = { name: string; placeholder: string; value: string; hosts: DomainPattern[] };

/** Short values would be redacted out of ordinary response text; real tokens are far longer. */
export const MIN_SECRET_VALUE_LENGTH = 8;
const MAX_SECRET_VALUE_LENGTH = 16_384;
const NAME = /^[A-Za-z0-9_.-]{1,128}$/;
// URL- and header-safe, so the placeholder survives unchanged wherever the guest puts it.
const PLACEHOLDER = /^[A-Za-z0-9_.~-]{8,256}$/;
// Printable ASCII only: a CR or LF in a value would inject header lines once substituted.
const VALUE = /^[\x20-\x7e]+$/;

/** Why a rule cannot be used, or null. The message may name the secret and placeholder, never the value. */
export function secretRuleProblem(rule: SecretRule): string | null {
  if (typeof rule !== "object" || rule === null) return "a secret rule must be an object {name, placeholder, value, hosts}";
  if (typeof rule.name !== "string" || !NAME.test(rule.name)) return `secret name ${JSON.stringify(String(rule.name).slice(0, 40))} must match ${NAME.source}`;
  const label = `secret ${rule.name}`;
  if (typeof rule.placeholder !== "string" || !PLACEHOLDER.test(rule.placeholder)) return `${label}: placeholder must be 8-256 characters of A-Z a-z 0-9 _ . ~ -`;
  const value = rule.value;
  if (typeof value !== "string" || value.length < MIN_SECRET_VALUE_LENGTH || value.length > MAX_SECRET_VALUE_LENGTH) {
    return `${label}: value must be ${MIN_SECRET_VALUE_LENGTH}-${MAX_SECRET_VALUE_LENGTH} characters`;
  }
  if (!VALUE.test(value)) return `${label}: value must be printable ASCII (no control characters or line breaks)`;
  if (value.includes(rule.placeholder) || rule.placeholder.includes(value)) return `${label}: the placeholder and the value must not contain each other`;
  if (!Array.isArray(rule.hosts) || rule.hosts.length === 0) return `${label}: hosts must list at least one domain`;
  for (const host of rule.hosts) {
    const parsed = typeof host === "string" ? parseDomainPattern(host) : { ok: false as const, reason: "is not a string" };
    if (!parsed.ok) return `${label}: host ${JSON.stringify(String(host).slice(0, 80))} ${parsed.reason}`;
  }
  return null;
}

/** Keeps the usable rules and reports the rest; an unusable rule substitutes nothing (fails closed). */
export function compileSecrets(rules: readonly SecretRule[]): { secrets: CompiledSecret[]; problems: Array<{ name: string; problem: string }> } {
  const secrets: CompiledSecret[] = [];
  const problems: Array<{ name: string; problem: string }> = [];
  for (const rule of rules) {
    const problem = secretRuleProblem(rule);
    if (problem !== null) {
      problems.push({ name: String(rule?.name ?? "?").slice(0, 128), problem });
      continue;
    }
    const hosts = rule.hosts.map((h) => (parseDomainPattern(h) as { ok: true; value: DomainPattern }).value);
    secrets.push({ name: rule.name, placeholder: rule.placeholder, value: rule.value, hosts });
  }
  return { secrets, problems };
}

/** Rules whose hosts include the target; the first rule for a placeholder wins. IP literals never match. */
export function secretsForTarget(secrets: readonly CompiledSecret[], target: EgressTarget): CompiledSecret[] {
  const host = normalizeHostName(target.host);
  const seen = new Set<string>();
  return secrets.filter((s) => {
    if (seen.has(s.placeholder) || !s.hosts.some((p) => domainMatches(p, host, target.port))) return false;
    seen.add(s.placeholder);
    return true;
  });
}

/**
 * Replaces placeholders in `text` in one pass (an inserted value is never scanned again). In a request
 * target the value is percent-encoded (encodeURIComponent), so `+`, `/`, `=` or a space in a token reach
 * the server as the token; in a header value it goes in as is.
 */
export function substitute(text: string, secrets: readonly CompiledSecret[], where: "target" | "header", used: Set<string>): string {
  const present = secrets.filter((s) => text.includes(s.placeholder)).sort((a, b) => b.placeholder.length - a.placeholder.length);
  if (present.length === 0) return text;
  const byPlaceholder = new Map(present.map((s) => [s.placeholder, s]));
  const pattern = new RegExp(present.map((s) => s.placeholder.replace(/[.~-]/g, "\\$&")).join("|"), "g");
  return text.replace(pattern, (placeholder) => {
    const secret = byPlaceholder.get(placeholder) as CompiledSecret;
    used.add(secret.name);
    return where === "target" ? encodeURIComponent(secret.value) : secret.value;
  });
}

/**
 * The stable run of base64 characters that encodes `value` wherever it sits in a base64 stream: one per
 * alignment (the value starting at byte offset 0, 1 or 2 of a 3-byte group), dropping the characters
 * that also depend on the neighbouring bytes. Standard and URL-safe alphabets.
 */
function base64Forms(value: string): string[] {
  const forms: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.from("\0".repeat(offset) + value, "latin1").toString("base64").replace(/=+$/, "");
    // Characters before this position also carry the padding bytes; the last one may carry what follows.
    const start = Math.ceil((offset * 4) / 3);
    const stableEnd = Math.floor(((offset + value.length) * 4) / 3);
    const core = encoded.slice(start, stableEnd);
    if (core.length >= 8) forms.push(core, core.replace(/\+/g, "-").replace(/\//g, "_"));
  }
  return forms;
}

/** The value as a JSON string body would carry it: `\` and `"` escaped, and `/` optionally escaped too. */
function jsonForms(value: string): string[] {
  const escaped = value.replace(/\\/g, "\\\\").replace(/"/g, '\\"');
  return [escaped, escaped.replace(/\//g, "\\/")];
}

/** Every byte as `%XX`, and encodeURIComponent's form (only what needs it escaped). */
function percentForms(value: string): string[] {
  const every = [...Buffer.from(value, "utf8")].map((byte) => `%${byte.toString(16).padStart(2, "0")}`).join("");
  return [encodeURIComponent(value), every];
}

/** Every character as a JSON `\uXXXX` escape (a serializer that escapes everything). */
function jsonUnicodeForm(value: string): string {
  return [...value].map((char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`).join("");
}

/**
 * What response redaction looks for, each mapped to the placeholder: the value as is; percent-encoded
 * (only where needed, or every byte); JSON-escaped (`\"`, `\\`, `\/`, or every character as `\uXXXX`);
 * hex; and base64 (standard and URL-safe, at any alignment). Hex digits are matched in either case
 * (`%2f` and `%2F`, `\u002f`, `DEADbeef`): those forms are compared without case, so a value's own letters
 * match in either case there too, which redacts more, never less. A value sent back in pieces, or in an
 * encoding not listed, is not caught (docs/network-and-secrets.md).
 */
export function redactionPatterns(secrets: readonly CompiledSecret[]): Array<{ name: string; find: string; replacement: string; ignoreCase?: boolean }> {
  return secrets.flatMap((s) => {
    const exact = new Set([s.value, ...jsonForms(s.value), ...base64Forms(s.value)]);
    const anyCase = new Set([...percentForms(s.value), jsonUnicodeForm(s.value), Buffer.from(s.value, "utf8").toString("hex")].map((form) => form.toLowerCase()));
    for (const form of anyCase) exact.delete(form);
    return [
      ...[...exact].map((find) => ({ name: s.name, find, replacement: s.placeholder })),
      ...[...anyCase].map((find) => ({ name: s.name, find, replacement: s.placeholder, ignoreCase: true })),
    ];
  });
}
