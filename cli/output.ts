// How the CLI prints: colored tables on a terminal, plain text when piped or NO_COLOR, JSON with --json.
import { terminalSafe } from "./terminal-safe";

type Env = Record<string, string | undefined>;

export type Paint = Record<"bold" | "dim" | "red" | "green" | "yellow" | "cyan", (text: string) => string>;

const SGR = { bold: [1, 22], dim: [2, 22], red: [31, 39], green: [32, 39], yellow: [33, 39], cyan: [36, 39] } as const;

export function makePaint(enabled: boolean): Paint {
  const style = ([open, close]: readonly [number, number]) => (text: string) => (enabled && text ? `\x1b[${open}m${text}\x1b[${close}m` : text);
  return { bold: style(SGR.bold), dim: style(SGR.dim), red: style(SGR.red), green: style(SGR.green), yellow: style(SGR.yellow), cyan: style(SGR.cyan) };
}

/** https://no-color.org: NO_COLOR (non-empty) wins; FORCE_COLOR (not "0") forces; else only a terminal that is not dumb. */
export function colorEnabled(env: Env, isTty: boolean): boolean {
  if (env.NO_COLOR) return false;
  if (env.FORCE_COLOR && env.FORCE_COLOR !== "0") return true;
  return isTty && env.TERM !== "dumb";
}

export type Output = {
  json: boolean;
  /** stdout is a terminal: times are relative ("3m ago"); piped, they are ISO 8601. */
  human: boolean;
  paint: Paint;
  now: number;
  line(text?: string): void;
  printJson(value: unknown): void;
};

/**
 * `raw`: guest-controlled text goes to a terminal as it is (`--raw`); without it, a terminal gets it with
 * every control sequence shown, not obeyed (terminal-safe.ts). Piped output is always unchanged.
 */
export function makeOutput(options: { json: boolean; env: Env; isTty: boolean; raw?: boolean; write?: (text: string) => void }): Output {
  const write = options.write ?? ((text: string) => void process.stdout.write(text));
  const safe = options.isTty && !options.raw ? terminalSafe : (text: string) => text;
  return {
    json: options.json,
    human: options.isTty,
    paint: makePaint(!options.json && colorEnabled(options.env, options.isTty)),
    now: Date.now(),
    line: (text = "") => write(safe(text) + "\n"),
    printJson: (value) => write(JSON.stringify(value, null, 2) + "\n"),
  };
}

type Column = { header: string; align?: "left" | "right" };

/** Aligned columns, two spaces apart, header in bold; widths ignore color codes; no trailing spaces. */
export function renderTable(columns: Column[], rows: string[][], paint: Paint): string {
  const widths = columns.map((column, i) => Math.max(Bun.stringWidth(column.header), ...rows.map((row) => Bun.stringWidth(row[i] ?? ""))));
  const pad = (text: string, i: number) => {
    const gap = " ".repeat((widths[i] ?? 0) - Bun.stringWidth(text));
    return columns[i]?.align === "right" ? gap + text : text + gap;
  };
  const render = (cells: string[]) => cells.map(pad).join("  ").trimEnd();
  const header = paint.bold(render(columns.map((column) => column.header)));
  return [header, ...rows.map(render)].join("\n");
}

/** Two columns without a header: KEY value. */
export function renderPairs(pairs: [string, string][], paint: Paint): string {
  const width = Math.max(...pairs.map(([key]) => key.length));
  return pairs.map(([key, value]) => `${paint.bold(key.padEnd(width))}  ${value}`.trimEnd()).join("\n");
}

/**
 * Wraps `text` at spaces so no line is wider than `width` columns, indenting every line after the first by
 * `indent` spaces; `firstWidth` is what is left on the first line (a first word wider than that starts on
 * the next line). Words are never split: one wider than a whole line stays whole.
 */
export function wrapWords(text: string, options: { width: number; firstWidth?: number; indent: number }): string {
  const lines: string[] = [];
  let line = "";
  let room = options.firstWidth ?? options.width;
  for (const word of text.split(" ")) {
    const candidate = line === "" ? word : `${line} ${word}`;
    if (Bun.stringWidth(candidate) > room && (line !== "" || lines.length === 0)) {
      lines.push(line);
      line = word;
      room = options.width - options.indent;
    } else line = candidate;
  }
  lines.push(line);
  return lines.join(`\n${" ".repeat(options.indent)}`);
}

/** How wide lines may be: the terminal's columns, else COLUMNS; undefined (no wrapping) when piped without it. */
export function lineWidth(env: Record<string, string | undefined>, stream: { isTTY?: boolean; columns?: number }): number | undefined {
  if (stream.isTTY && stream.columns) return stream.columns;
  const columns = Number(env.COLUMNS);
  return Number.isInteger(columns) && columns > 0 ? columns : undefined;
}
