// The streaming redactor: split values still replaced; streaming equals redacting the whole text.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { SecretRedactor } from "../../egress/secret-redactor";

const run = (redactor: SecretRedactor, chunks: string[]) => Buffer.concat([...chunks.map((c) => redactor.push(Buffer.from(c, "latin1"))), redactor.flush()]).toString("latin1");

describe("SecretRedactor", () => {
  const patterns = [{ name: "TOKEN", find: "s3cr3t-value", replacement: "PLACEHOLDER" }];

  test("value inside one chunk → placeholder", () => {
    expect(run(new SecretRedactor(patterns), ["a s3cr3t-value b"])).toBe("a PLACEHOLDER b");
  });

  test("value split at every position across two chunks → placeholder", () => {
    const text = "xx s3cr3t-value yy";
    for (let cut = 0; cut <= text.length; cut++) {
      expect(run(new SecretRedactor(patterns), [text.slice(0, cut), text.slice(cut)])).toBe("xx PLACEHOLDER yy");
    }
  });

  test("value delivered one byte per chunk → placeholder", () => {
    expect(run(new SecretRedactor(patterns), [..."<s3cr3t-value>"])).toBe("<PLACEHOLDER>");
  });

  test("a prefix at the end of the stream → passed on unchanged at flush", () => {
    const redactor = new SecretRedactor(patterns);
    expect(redactor.push(Buffer.from("abc s3cr")).toString()).toBe("abc ");
    expect(redactor.flush().toString()).toBe("s3cr");
  });

  test("held-back bytes that turn out not to be the value → released with the next chunk", () => {
    const redactor = new SecretRedactor(patterns);
    expect(redactor.push(Buffer.from("s3c")).toString()).toBe("");
    expect(redactor.push(Buffer.from("XYZ")).toString()).toBe("s3cXYZ");
  });

  test("two values, one a prefix of the other, split → the longer wins", () => {
    const two = [
      { name: "SHORT", find: "tokenAAA", replacement: "<S>" },
      { name: "LONG", find: "tokenAAABBB", replacement: "<L>" },
    ];
    expect(run(new SecretRedactor(two), ["x tokenAAA", "BBB y"])).toBe("x <L> y");
    expect(run(new SecretRedactor(two), ["x tokenAAA", " y"])).toBe("x <S> y");
  });

  test("hits → the names of the secrets seen, never values", () => {
    const redactor = new SecretRedactor(patterns);
    run(redactor, ["s3cr3t-value"]);
    expect([...redactor.hits]).toEqual(["TOKEN"]);
  });

  test("no patterns → bytes unchanged", () => {
    expect(run(new SecretRedactor([]), ["abc", "def"])).toBe("abcdef");
  });

  test("property: any chunking → same as redacting the whole, and no value survives", () => {
    // Values and placeholders use disjoint alphabets, so a value can only survive if redaction missed it.
    const value = fc.stringMatching(/^[a-d0-3]{8,14}$/);
    fc.assert(
      fc.property(
        fc.array(value, { minLength: 1, maxLength: 3 }),
        fc.array(fc.oneof(fc.stringMatching(/^[a-d0-3 ]{0,12}$/), fc.nat({ max: 2 })), { maxLength: 12 }),
        fc.array(fc.nat({ max: 40 }), { maxLength: 8 }),
        (values, parts, cuts) => {
          const text = parts.map((p) => (typeof p === "number" ? (values[p % values.length] as string) : p)).join("");
          const list = values.map((find, i) => ({ name: `S${i}`, find, replacement: `PH${"X".repeat(i + 6)}` }));
          const whole = run(new SecretRedactor(list), [text]);
          const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
          const chunks = [0, ...points, text.length].slice(1).map((end, i, all) => text.slice(i === 0 ? 0 : (all[i - 1] as number), end));
          expect(run(new SecretRedactor(list), chunks)).toBe(whole);
          for (const v of values) expect(whole.includes(v)).toBe(false);
        },
      ),
      { numRuns: 1500 },
    );
  });
});
