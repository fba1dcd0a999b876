// Narrowing helpers for JSON printed by msb: each returns undefined for a missing or mistyped value, so
// parsers can read what is there and report the rest instead of crashing on an unexpected shape.

export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

export function asArray(value: unknown): unknown[] | undefined {
  return Array.isArray(value) ? value : undefined;
}

export function asString(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

export function asNumber(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

export function asBoolean(value: unknown): boolean | undefined {
  return typeof value === "boolean" ? value : undefined;
}

/** JSON.parse that names the command whose output was not JSON, instead of a bare SyntaxError. */
export function parseJsonOutput(text: string, what: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    const preview = text.length > 200 ? `${text.slice(0, 200)}…` : text;
    return { ok: false, error: `${what} did not print JSON (${(error as Error).message}): ${JSON.stringify(preview)}` };
  }
}
