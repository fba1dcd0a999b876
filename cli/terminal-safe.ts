// Text a guest controls (command output, paths, commands, error messages), made safe for a terminal the
// way `cat -v` shows it: every control character is printed visibly (`^[`, `^G`, `<U+009B>`), so no
// escape sequence reaches the operator's terminal (OSC 52 writes the clipboard; others retitle the window,
// move the cursor, hide text or fake a prompt). Only colors pass: an SGR sequence (`ESC [ … m`) without
// "conceal" (8). A carriage return alone (which lets a line overwrite itself) is shown as `^M`.
// Piped output and `--raw` get the bytes unchanged: this is for a terminal only.

const ESC = 0x1b;

/** `^@`…`^_` for C0, `^?` for DEL (cat -v's notation). */
function caret(code: number): string {
  return code === 0x7f ? "^?" : `^${String.fromCharCode(code + 0x40)}`;
}

/** C1 controls (8-bit CSI, OSC…) and the bidirectional overrides that reorder what a line appears to say. */
function isInvisibleControl(code: number): boolean {
  return (code >= 0x80 && code <= 0x9f) || (code >= 0x202a && code <= 0x202e) || (code >= 0x2066 && code <= 0x2069);
}

/** A color sequence: ESC [ digits and semicolons m, without parameter 8 (conceal). Its length, or 0. */
function colorSequenceLength(text: string, at: number): number {
  if (text.charCodeAt(at + 1) !== 0x5b) return 0; // "["
  let end = at + 2;
  while (end < text.length && /[0-9;]/.test(text[end]!)) end++;
  if (text[end] !== "m" || end - at > 64) return 0;
  const params = text.slice(at + 2, end).split(";");
  return params.includes("8") ? 0 : end - at + 1;
}

/** `text` with every control character visible, colors kept. */
export function terminalSafe(text: string): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === ESC) {
      const color = colorSequenceLength(text, i);
      if (color > 0) {
        out += text.slice(i, i + color);
        i += color - 1;
      } else out += "^[";
    } else if (code === 0x0a || code === 0x09) out += text[i];
    else if (code === 0x0d) out += text.charCodeAt(i + 1) === 0x0a ? "\r" : "^M";
    else if (code < 0x20 || code === 0x7f) out += caret(code);
    else if (isInvisibleControl(code)) out += `<U+${code.toString(16).toUpperCase().padStart(4, "0")}>`;
    else out += text[i];
  }
  return out;
}

/**
 * A byte stream (a command's output) written safely: decoded as UTF-8 across chunks, and a sequence cut at
 * a chunk's end waits for the next chunk, so it is judged whole.
 */
export function safeStream(write: (text: string) => void): { write(chunk: Uint8Array): void; end(): void } {
  const decoder = new TextDecoder("utf-8");
  let pending = "";
  const flush = (text: string, final: boolean) => {
    let cut = text.length;
    if (!final) {
      // Keep back an unfinished ESC sequence or a lone CR (its meaning depends on what follows).
      const lastEsc = text.lastIndexOf("\x1b");
      const tail = lastEsc >= 0 ? text.slice(lastEsc) : "";
      const complete = /^\x1b\[[0-?]*[ -/]*[@-~]/.test(tail) || /^\x1b[^[]/.test(tail);
      if (lastEsc >= 0 && !complete && tail.length < 64) cut = lastEsc;
      if (text.endsWith("\r")) cut = Math.min(cut, text.length - 1);
    }
    if (cut > 0) write(terminalSafe(text.slice(0, cut)));
    pending = text.slice(cut);
  };
  return {
    write: (chunk) => flush(pending + decoder.decode(chunk, { stream: true }), false),
    end: () => flush(pending + decoder.decode(), true),
  };
}

/**
 * Where one of a command's streams goes: a pipe gets its bytes unchanged; a terminal gets them with every
 * control sequence but colors shown, not obeyed (a guest's output must not drive the user's terminal),
 * unless `--raw`. Used by `exec` and by `logs <session> <call id>`.
 */
export function sinkFor(stream: NodeJS.WriteStream, raw: boolean): { write(chunk: Uint8Array): void; end(): void } {
  if (raw || !stream.isTTY) return { write: (chunk) => void stream.write(chunk), end: () => {} };
  return safeStream((text) => void stream.write(text));
}
