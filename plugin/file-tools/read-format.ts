// The `read` tool's output, byte for byte as OpenCode 1.18.33 formats it: line-numbered file windows
// with their notices, directory listings, the binary test and the media types it attaches instead.
import { extname } from "node:path";

export const DEFAULT_READ_LIMIT = 2000;
export const MAX_LINE_CHARS = 2000;
export const MAX_OUTPUT_BYTES = 50 * 1024;
const LINE_TRUNCATED = `... (line truncated to ${MAX_LINE_CHARS} chars)`;

const BINARY_EXTENSIONS = new Set(
  ".zip .tar .gz .exe .dll .so .class .jar .war .7z .doc .docx .xls .xlsx .ppt .pptx .odt .ods .odp .bin .dat .obj .o .a .lib .wasm .pyc .pyo".split(" "),
);

/** By extension, or by a sample with a NUL byte or more than 30% control bytes. */
export function looksBinary(path: string, sample: Uint8Array): boolean {
  if (BINARY_EXTENSIONS.has(extname(path).toLowerCase())) return true;
  if (sample.length === 0) return false;
  let control = 0;
  for (const byte of sample) {
    if (byte === 0) return true;
    if (byte < 9 || (byte > 13 && byte < 32)) control++;
  }
  return control / sample.length > 0.3;
}

const MEDIA_BY_EXTENSION: Record<string, string> = { ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp", ".bmp": "image/bmp", ".pdf": "application/pdf" };
const startsWith = (bytes: Uint8Array, magic: number[], at = 0) => magic.every((byte, index) => bytes[at + index] === byte);

/** The media type OpenCode attaches a file as (images and PDFs), or null to read it as text. */
export function attachableMime(path: string, sample: Uint8Array): string | null {
  let mime = MEDIA_BY_EXTENSION[extname(path).toLowerCase()] ?? null;
  if (startsWith(sample, [137, 80, 78, 71, 13, 10, 26, 10])) mime = "image/png";
  else if (startsWith(sample, [255, 216, 255])) mime = "image/jpeg";
  else if (startsWith(sample, [71, 73, 70, 56])) mime = "image/gif";
  else if (startsWith(sample, [66, 77])) mime = "image/bmp";
  else if (startsWith(sample, [37, 80, 68, 70, 45])) mime = "application/pdf";
  else if (startsWith(sample, [82, 73, 70, 70]) && startsWith(sample, [87, 69, 66, 80], 8)) mime = "image/webp";
  return mime && ["image/jpeg", "image/png", "image/gif", "image/webp", "application/pdf"].includes(mime) ? mime : null;
}

type FileWindow = { output: string; preview: string; truncated: boolean; lineEnd: number; text: string };

/**
 * Formats lines `offset`… of a file of `count` lines. `lines` are the raw lines from `offset` on (at
 * most `limit`); each is cut to 2000 characters, and the whole stops before 50 KiB.
 */
export function formatFileWindow(path: string, lines: string[], count: number, offset: number, limit: number): FileWindow {
  if (count < offset && !(count === 0 && offset === 1)) throw new Error(`Offset ${offset} is out of range for this file (${count} lines)`);
  const shown: string[] = [];
  let bytes = 0;
  let cut = false;
  for (const raw of lines.slice(0, limit)) {
    const line = raw.length > MAX_LINE_CHARS ? raw.substring(0, MAX_LINE_CHARS) + LINE_TRUNCATED : raw;
    const size = Buffer.byteLength(line, "utf8") + (shown.length > 0 ? 1 : 0);
    if (bytes + size > MAX_OUTPUT_BYTES) {
      cut = true;
      break;
    }
    shown.push(line);
    bytes += size;
  }
  const more = cut || count >= offset + limit;
  const lineEnd = offset + shown.length - 1;
  let output = `<path>${path}</path>\n<type>file</type>\n<content>\n`;
  output += shown.map((line, index) => `${index + offset}: ${line}`).join("\n");
  if (cut) output += `\n\n(Output capped at ${MAX_OUTPUT_BYTES / 1024} KB. Showing lines ${offset}-${lineEnd}. Use offset=${lineEnd + 1} to continue.)`;
  else if (more) output += `\n\n(Showing lines ${offset}-${lineEnd} of ${count}. Use offset=${lineEnd + 1} to continue.)`;
  else output += `\n\n(End of file - total ${count} lines)`;
  output += "\n</content>";
  return { output, preview: shown.slice(0, 20).join("\n"), truncated: more, lineEnd, text: shown.join("\n") };
}

type DirectoryWindow = { output: string; entries: string[]; truncated: boolean };

/** Formats entries `offset`… of a directory listing (sorted as OpenCode sorts them). */
export function formatDirectory(path: string, all: string[], offset: number, limit: number): DirectoryWindow {
  const sorted = [...all].sort((a, b) => a.localeCompare(b));
  const entries = sorted.slice(offset - 1, offset - 1 + limit);
  const truncated = offset - 1 + entries.length < sorted.length;
  const notice = truncated ? `(Showing ${entries.length} of ${sorted.length} entries. Use 'offset' parameter to read beyond entry ${offset + entries.length})` : `(${sorted.length} entries)`;
  const output = [`<path>${path}</path>`, "<type>directory</type>", "<entries>", `${entries.join("\n")}\n\n${notice}`, "</entries>"].join("\n");
  return { output, entries, truncated };
}

/** "File not found", with up to three similar names from the same directory. */
export function notFoundMessage(path: string, dir: string, siblings: string[]): string {
  const base = path.slice(dir.length).replace(/^\/+/, "").toLowerCase();
  const similar = siblings
    .filter((name) => name.toLowerCase().includes(base) || base.includes(name.toLowerCase()))
    .slice(0, 3)
    .map((name) => (dir.endsWith("/") ? dir + name : `${dir}/${name}`));
  return similar.length > 0 ? `File not found: ${path}\n\nDid you mean one of these?\n${similar.join("\n")}` : `File not found: ${path}`;
}
