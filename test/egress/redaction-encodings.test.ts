// A generator over the encodings redaction knows: a secret value echoed back percent-encoded (upper, lower or
// mixed case, only where needed or every byte), JSON-escaped (also every character as \uXXXX, either case),
// hex (either case) or base64 (both alphabets, any alignment), inside other text and split into chunks at
// random points, never comes out whole. FUZZ_SEED replays a run.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { SecretRedactor } from "../../egress/secret-redactor";
import { compileSecrets, redactionPatterns } from "../../egress/secrets";

const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);

const mixCase = (text: string, flips: boolean[]) => [...text].map((c, i) => (flips[i % flips.length] ? c.toUpperCase() : c.toLowerCase())).join("");
const percentEvery = (value: string) => [...Buffer.from(value)].map((b) => `%${b.toString(16).padStart(2, "0")}`).join("");
const jsonUnicode = (value: string) => [...value].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("");

type Encoding = { name: string; encode: (value: string, flips: boolean[]) => string; leaked: (out: string, value: string, encoded: string) => boolean };
const plain = (name: string, encode: Encoding["encode"]): Encoding => ({ name, encode, leaked: (out, _value, encoded) => out.includes(encoded) });
const base64 = (name: string, url: boolean): Encoding => ({
  name,
  // The value at a random alignment inside other bytes, as a server would echo "user:<value>" in Basic auth.
  encode: (value, flips) => {
    const b64 = Buffer.from(`${"x".repeat(flips.filter(Boolean).length % 3)}${value}!`).toString("base64");
    return url ? b64.replace(/\+/g, "-").replace(/\//g, "_") : b64;
  },
  leaked: (out, value) => Buffer.from(out.replace(/-/g, "+").replace(/_/g, "/"), "base64").toString("latin1").includes(value),
});

const ENCODINGS: Encoding[] = [
  plain("as is", (v) => v),
  plain("percent, upper", (v) => encodeURIComponent(v)),
  plain("percent, lower", (v) => encodeURIComponent(v).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase())),
  plain("percent, mixed case", (v, flips) => mixCase(encodeURIComponent(v), flips).replace(/%[0-9a-fA-F]{2}|[^%]+/g, (m) => (m.startsWith("%") ? m : m))),
  plain("percent, every byte, upper", (v) => percentEvery(v).toUpperCase()),
  plain("percent, every byte, lower", (v) => percentEvery(v)),
  plain("JSON escapes", (v) => JSON.stringify(v).slice(1, -1)),
  plain("JSON escapes with \\/", (v) => JSON.stringify(v).slice(1, -1).replace(/\//g, "\\/")),
  plain("JSON \\u escapes, lower", (v) => jsonUnicode(v)),
  plain("JSON \\u escapes, upper", (v) => jsonUnicode(v).replace(/[a-f]/g, (c) => c.toUpperCase())),
  plain("hex, lower", (v) => Buffer.from(v).toString("hex")),
  plain("hex, upper", (v) => Buffer.from(v).toString("hex").toUpperCase()),
  base64("base64", false),
  base64("base64url", true),
];

describe("redaction over encodings", () => {
  test(`every known encoding, any case, split anywhere → never passes whole (seed ${seed})`, () => {
    fc.assert(
      fc.property(
        // Secret-like values: letters, digits and the symbols tokens carry.
        fc.stringMatching(/^[A-Za-z0-9_\-+/=.:~!$]{12,40}$/),
        fc.constantFrom(...ENCODINGS),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }),
        fc.string({ maxLength: 20 }),
        fc.string({ maxLength: 20 }),
        fc.array(fc.nat(), { maxLength: 6 }),
        (value, encoding, flips, before, after, cuts) => {
          const encoded = encoding.encode(value, flips);
          const { secrets } = compileSecrets([{ name: "TOKEN", value, hosts: ["api.example.com"], placeholder: "sandbox-placeholder-token" }]);
          const redactor = new SecretRedactor(redactionPatterns(secrets));
          const body = Buffer.from(`${before}${encoded}${after}`, "utf8");
          const points = [...new Set(cuts.map((cut) => cut % (body.length + 1)))].sort((a, b) => a - b);
          const chunks: Buffer[] = [];
          let last = 0;
          for (const point of [...points, body.length]) {
            chunks.push(redactor.push(body.subarray(last, point)));
            last = point;
          }
          chunks.push(redactor.flush());
          const out = Buffer.concat(chunks).toString("latin1");
          expect({ encoding: encoding.name, leaked: encoding.leaked(out, value, encoded) }).toEqual({ encoding: encoding.name, leaked: false });
        },
      ),
      { seed, numRuns: 1500 },
    );
  });
});
