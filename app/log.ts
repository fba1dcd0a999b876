// Structured logs: one JSON line per event on stderr, level from SANDBOX_LOG_LEVEL. Callers pass
// fields, never secrets; the token is never handed to the logger.
const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
export type LogLevel = keyof typeof LEVELS;

export type Logger = Record<Exclude<LogLevel, "silent">, (message: string, fields?: Record<string, unknown>) => void>;

export function createLogger(level: LogLevel = "info", write: (line: string) => void = (line) => process.stderr.write(line + "\n")): Logger {
  const emit = (at: Exclude<LogLevel, "silent">) => (message: string, fields: Record<string, unknown> = {}) => {
    if (LEVELS[at] < LEVELS[level]) return;
    write(JSON.stringify({ time: new Date().toISOString(), level: at, message, ...fields }));
  };
  return { debug: emit("debug"), info: emit("info"), warn: emit("warn"), error: emit("error") };
}

export function parseLogLevel(text: string | undefined): LogLevel {
  if (!text) return "info";
  if (text in LEVELS) return text as LogLevel;
  throw new Error(`SANDBOX_LOG_LEVEL=${JSON.stringify(text)} is not one of ${Object.keys(LEVELS).join(", ")}`);
}
