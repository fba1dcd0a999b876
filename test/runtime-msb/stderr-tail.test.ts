// Finding msb's error block in stderr, and holding a trailing one back while the rest streams through.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { lastErrorBlock, StderrHoldback, trailingErrorBlock } from "../../runtime/msb/stderr-tail";

const bootFailure = 'error: failed to start "box"\n  → other: sandbox process exited\n  → run `msb logs --source system box` for full diagnostics\n';

function feed(chunks: string[]) {
  const forwarded: string[] = [];
  const holdback = new StderrHoldback((chunk) => forwarded.push(new TextDecoder().decode(chunk)));
  const encoder = new TextEncoder();
  for (const chunk of chunks) holdback.push(encoder.encode(chunk));
  return { forwarded: forwarded.join(""), held: holdback.heldText(), holdback };
}

describe("trailingErrorBlock", () => {
  test("msb boot failure → header and detail lines", () => {
    expect(trailingErrorBlock(`guest output\n${bootFailure}`)).toEqual({
      header: 'failed to start "box"',
      details: ["other: sandbox process exited", "run `msb logs --source system box` for full diagnostics"],
    });
  });

  test("an error line followed by other output → no trailing block", () => {
    expect(trailingErrorBlock("error: x\nmore output\n")).toBeUndefined();
  });

  test("colour escapes → stripped", () => {
    expect(trailingErrorBlock("\u001b[31m\u001b[1merror:\u001b[0m sandbox not found: box\n")?.header).toBe("sandbox not found: box");
  });
});

describe("lastErrorBlock", () => {
  test("progress lines after the error → still found, details end at the first non-detail line", () => {
    expect(lastErrorBlock("error: a\n  → b\n   ✓ Done x\n")).toEqual({ header: "a", details: ["b"] });
  });
});

describe("StderrHoldback", () => {
  test("ordinary output → forwarded at once, nothing held", () => {
    expect(feed(["compiling\n", "done\n"])).toMatchObject({ forwarded: "compiling\ndone\n", held: "" });
  });

  test("output ending in an error block → block held, the rest forwarded", () => {
    expect(feed(["warning: x\n", bootFailure])).toMatchObject({ forwarded: "warning: x\n", held: bootFailure });
  });

  test("an error line the guest continues after → forwarded once the next line shows it", () => {
    const { forwarded, held } = feed(["error: one\n", "  → hint\n", "next\n"]);
    expect(forwarded).toBe("error: one\n  → hint\nnext\n");
    expect(held).toBe("");
  });

  test("partial line that may become `error: ` → held until it cannot", () => {
    expect(feed(["ok\ner"]).held).toBe("er");
    expect(feed(["ok\ner", "m\n"])).toMatchObject({ forwarded: "ok\nerm\n", held: "" });
  });

  test("release → held bytes forwarded; discard → dropped", () => {
    const a = feed([bootFailure]);
    a.holdback.release();
    expect(a.holdback.heldText()).toBe("");
    const b = feed([bootFailure]);
    b.holdback.discard();
    expect(b.holdback.heldText()).toBe("");
  });

  test("any chunking of any text → forwarded + held equals the input, in order", () => {
    const line = fc.constantFrom("error: x", "  → y", "plain", "", "err", "  ", "é→");
    fc.assert(
      fc.property(fc.array(line, { maxLength: 8 }), fc.array(fc.nat(40), { maxLength: 6 }), (lines, cuts) => {
        const text = lines.join("\n");
        const points = [...new Set(cuts.map((c) => Math.min(c, text.length)))].sort((a, b) => a - b);
        const chunks = [0, ...points].map((start, i) => text.slice(start, points[i] ?? text.length)).filter((c) => c.length > 0);
        const { forwarded, held } = feed(chunks);
        expect(forwarded + held).toBe(text);
        if (trailingErrorBlock(text) === undefined && !/(^|\n)(e|er|err|erro|error|error:)$/.test(text)) {
          expect(trailingErrorBlock(held)).toBeUndefined();
        }
      }),
    );
  });
});
