// Formatting values for tables: times (relative on a terminal, ISO when piped), sizes, durations.
import type { Output } from "./output";

/** ISO 8601 in UTC to the second: what --json and piped tables print. */
export function isoTime(epochMs: number): string {
  return new Date(epochMs).toISOString().replace(/\.\d{3}Z$/, "Z");
}

export function isoOrNull(epochMs: number | null): string | null {
  return epochMs === null ? null : isoTime(epochMs);
}

/** "just now", "45s ago", "3m ago", "5h ago", "2d ago". Exported so a test checks each unit. */
export function timeAgo(epochMs: number, now: number): string {
  const seconds = Math.floor((now - epochMs) / 1000);
  if (seconds < 1) return "just now";
  if (seconds < 60) return `${seconds}s ago`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h ago`;
  return `${Math.floor(hours / 24)}d ago`;
}

/** A table cell for a time: relative for a person, ISO for a pipe, "-" when there is none. */
export function timeCell(epochMs: number | null, out: Pick<Output, "human" | "now">): string {
  if (epochMs === null) return "-";
  return out.human ? timeAgo(epochMs, out.now) : isoTime(epochMs);
}

/** 512 → "512M", 2048 → "2G", 1536 → "1.5G". */
export function formatMib(mib: number): string {
  if (mib < 1024) return `${mib}M`;
  const gib = mib / 1024;
  return Number.isInteger(gib) ? `${gib}G` : `${gib.toFixed(1).replace(/\.0$/, "")}G`;
}

/** 0 → "0", 90_000 → "90s", 7 days → "7d": the largest unit that divides evenly. */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0";
  const units: [string, number][] = [["d", 86_400_000], ["h", 3_600_000], ["m", 60_000], ["s", 1000]];
  for (const [unit, size] of units) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/** 512 → "512B", 1536 → "1.5KiB", 268435456 → "256MiB": binary units, one decimal below 10. */
export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const text = unit === 0 || value >= 10 ? Math.round(value).toString() : value.toFixed(1).replace(/\.0$/, "");
  return `${text}${units[unit]}`;
}
