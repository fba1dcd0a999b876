// The output the plugin hands back to OpenCode is bounded: head and tail kept, the middle counted.
import { describe, expect, test } from "bun:test";
import { boundedOutput } from "../../plugin/bounded-output";

describe("bounded output", () => {
  test("under the bound → exactly what came, nothing left out", () => {
    const output = boundedOutput(100);
    for (const part of ["abc", "def", "\n"]) output.append(part);
    expect(output.text()).toBe("abcdef\n");
    expect(output.omitted()).toBe(0);
  });

  test("far past the bound → the first and last half kept, in order, with the count of what was left out between", () => {
    const output = boundedOutput(20);
    let all = "";
    for (let i = 0; i < 1000; i++) {
      const part = `${i},`;
      all += part;
      output.append(part);
    }
    const text = output.text();
    expect(text.startsWith(all.slice(0, 10))).toBe(true);
    expect(text.endsWith(all.slice(-10))).toBe(true);
    expect(output.omitted()).toBe(all.length - 20);
    expect(text).toContain(`[session-sandbox: ${all.length - 20} characters of output left out here; the first and last 10 are kept]`);
  });

  test("one chunk larger than the whole bound → still only its head and tail", () => {
    const output = boundedOutput(10);
    output.append("x".repeat(5) + "y".repeat(1000) + "z".repeat(5));
    expect(output.text()).toStartWith("xxxxx\n\n[session-sandbox: 1000 characters");
    expect(output.text()).toEndWith("zzzzz");
  });
});
