// What reaches the operator's terminal from text a guest controls: every control sequence visible, colors kept.
import { describe, expect, test } from "bun:test";
import { safeStream, sinkFor, terminalSafe } from "../../cli/terminal-safe";

describe("terminalSafe", () => {
  test.each([
    ["OSC 52 (clipboard write)", "\x1b]52;c;ZXZpbA==\x07", "^[]52;c;ZXZpbA==^G"],
    ["a window title", "\x1b]0;pwned\x1b\\", "^[]0;pwned^[\\"],
    ["clear screen and cursor home", "\x1b[2J\x1b[H", "^[[2J^[[H"],
    ["conceal (hidden text)", "\x1b[8msecret\x1b[0m", "^[[8msecret\x1b[0m"],
    ["conceal among other parameters", "\x1b[1;8m", "^[[1;8m"],
    ["a fake prompt over the line (lone CR)", "done\r$ sudo x", "done^M$ sudo x"],
    ["8-bit CSI", "\u009b2J", "<U+009B>2J"],
    ["right-to-left override", "evil\u202Etxt.exe", "evil<U+202E>txt.exe"],
    ["NUL, BEL, backspace and DEL", "a\0b\x07c\x08d\x7f", "a^@b^Gc^Hd^?"],
  ])("%s → shown, not obeyed", (_, input, shown) => {
    expect(terminalSafe(input)).toBe(shown);
  });

  test("colors, tabs, newlines and CRLF pass as they are", () => {
    const text = "\x1b[1m\x1b[31mred\x1b[39m\x1b[22m\tok\r\nnext\n";
    expect(terminalSafe(text)).toBe(text);
  });
});

describe("safeStream", () => {
  test("a sequence split across chunks is judged whole; UTF-8 split across chunks stays whole", () => {
    let out = "";
    const stream = safeStream((text) => (out += text));
    const bytes = new TextEncoder().encode("é\x1b]52;c;QQ==\x07 and \x1b[32mgreen\x1b[39m\r\n");
    for (const byte of bytes) stream.write(new Uint8Array([byte]));
    stream.end();
    expect(out).toBe("é^[]52;c;QQ==^G and \x1b[32mgreen\x1b[39m\r\n");
  });

  test("a complete sequence is not held back: what follows it is written at once", () => {
    let out = "";
    const stream = safeStream((text) => (out += text));
    stream.write(new TextEncoder().encode("\x1b[2Jafter"));
    expect(out).toBe("^[[2Jafter");
  });
});

describe("sinkFor (exec and logs <session> <call id>)", () => {
  const fakeStream = (isTTY: boolean) => {
    const written: string[] = [];
    return { stream: { isTTY, write: (chunk: string | Uint8Array) => written.push(typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk)) } as unknown as NodeJS.WriteStream, written };
  };
  const clipboardWrite = new TextEncoder().encode("\x1b]52;c;ZXZpbA==\x07out\n");

  test("a terminal → a guest's escape sequence shown, not obeyed; --raw → as it is", () => {
    const tty = fakeStream(true);
    const sink = sinkFor(tty.stream, false);
    sink.write(clipboardWrite);
    sink.end();
    expect(tty.written.join("")).not.toContain("\x1b");
    const raw = fakeStream(true);
    sinkFor(raw.stream, true).write(clipboardWrite);
    expect(raw.written.join("")).toContain("\x1b]52");
  });

  test("a pipe → the bytes unchanged", () => {
    const pipe = fakeStream(false);
    sinkFor(pipe.stream, false).write(clipboardWrite);
    expect(pipe.written.join("")).toBe(new TextDecoder().decode(clipboardWrite));
  });
});
