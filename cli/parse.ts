// Parsing what an operator types: durations (30m, 7d, 0), sizes (2G, 512M), booleans, whole numbers.
import { UsageError } from "./errors";

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `30m`, `2h`, `7d`, `1.5h`, `0` → milliseconds. A bare number other than 0 is refused: minutes or days? */
export function parseDurationMs(text: string, what: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)?$/.exec(text.trim());
  const amount = match ? Number(match[1]) : NaN;
  if (!match || (match[2] === undefined && amount !== 0)) {
    throw new UsageError(`${what} ${JSON.stringify(text)} is not a duration`, "write it with a unit: 30m, 2h, 7d (or 0)");
  }
  const ms = Math.round(amount * DURATION_UNITS[match[2] ?? "ms"]!);
  if (!Number.isSafeInteger(ms)) throw new UsageError(`${what} ${JSON.stringify(text)} is too long`, "use a shorter duration");
  return ms;
}

/** `2G`, `512M`, `1.5GiB`, or a plain number of MiB → MiB (a whole number). */
export function parseSizeMib(text: string, what: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*([mMgG]?)(?:i?[bB])?$/.exec(text.trim());
  const amount = match ? Number(match[1]) : NaN;
  const mib = match?.[2]?.toLowerCase() === "g" ? amount * 1024 : amount;
  if (!match || !Number.isSafeInteger(mib) || mib <= 0) {
    throw new UsageError(`${what} ${JSON.stringify(text)} is not a size in whole MiB`, "write it like 2G, 512M or 1536 (MiB)");
  }
  return mib;
}

/** A whole number ≥ 0; the manager checks the range and names it. */
export function parseWholeNumber(text: string, what: string): number {
  const value = Number(text.trim());
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(value)) {
    throw new UsageError(`${what} ${JSON.stringify(text)} is not a whole number`, "write it like 2");
  }
  return value;
}

export function parseBoolean(text: string, what: string): boolean {
  const value = text.trim().toLowerCase();
  if (["true", "on", "yes", "1"].includes(value)) return true;
  if (["false", "off", "no", "0"].includes(value)) return false;
  throw new UsageError(`${what} ${JSON.stringify(text)} is not a boolean`, "write true or false (on/off, yes/no)");
}
