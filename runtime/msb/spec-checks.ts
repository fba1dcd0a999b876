// Input checks for everything the msb driver puts on a command line: a value that could be misread by
// msb's parser (a leading "-", a ":" inside a mount path, a "," inside a rule) is refused, never escaped.
import { posix } from "node:path";
import { RuntimeError } from "../driver";

/** Thrown when a VmSpec or ExecRequest holds a value the msb command line cannot carry unambiguously. */
export class InvalidSpecError extends RuntimeError {
  constructor(message: string) {
    super("FAILED", `invalid msb argument: ${message}`);
    this.name = "InvalidSpecError";
  }
}

/** The design fixes VM names to this shape; msb itself allows up to 128 bytes. */
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const NAME_MAX_LENGTH = 63;
const ENV_KEY_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
const LABEL_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._/-]*$/;
// Control characters never belong in a path, label or image reference passed to msb.
const CONTROL_CHARS = /[\u0000-\u001f\u007f]/;

export function checkName(value: string, what: string): string {
  if (!NAME_PATTERN.test(value) || value.length > NAME_MAX_LENGTH) {
    throw new InvalidSpecError(`${what} "${value}" must match ${NAME_PATTERN.source} and be at most ${NAME_MAX_LENGTH} characters`);
  }
  return value;
}

/**
 * An absolute, already-normalised path without ":" or ",": msb splits mount specs on ":" and mount
 * options on ",", so such a path would be read as something else.
 */
export function checkMountPath(value: string, what: string): string {
  if (!value.startsWith("/") || posix.normalize(value) !== value || (value.length > 1 && value.endsWith("/"))) {
    throw new InvalidSpecError(`${what} "${value}" must be an absolute, normalised path`);
  }
  if (/[:,]/.test(value) || CONTROL_CHARS.test(value)) {
    throw new InvalidSpecError(`${what} "${value}" contains ":" , "," or a control character, which msb's mount syntax cannot carry`);
  }
  return value;
}

export function checkPositiveInteger(value: number, what: string): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new InvalidSpecError(`${what} must be a positive integer (got ${value})`);
  return value;
}

export function checkImage(value: string): string {
  if (value.length === 0 || value.startsWith("-") || /\s/.test(value) || CONTROL_CHARS.test(value)) {
    throw new InvalidSpecError(`image "${value}" must be a non-empty reference or path without whitespace that does not start with "-"`);
  }
  return value;
}

export function checkLabel(key: string, value: string): void {
  if (!LABEL_KEY_PATTERN.test(key)) throw new InvalidSpecError(`label key "${key}" must match ${LABEL_KEY_PATTERN.source}`);
  if (CONTROL_CHARS.test(value)) throw new InvalidSpecError(`label "${key}" has a control character in its value`);
}

/** `-e KEY` without "=" would copy KEY from the host environment of msb, so a key must be a plain name. */
export function checkEnvEntry(key: string, value: string): void {
  if (!ENV_KEY_PATTERN.test(key)) throw new InvalidSpecError(`environment variable name "${key}" must match ${ENV_KEY_PATTERN.source}`);
  if (value.includes("\u0000")) throw new InvalidSpecError(`environment variable "${key}" has a NUL byte in its value`);
}

export function checkWorkdir(value: string): string {
  if (!value.startsWith("/") || CONTROL_CHARS.test(value)) {
    throw new InvalidSpecError(`working directory "${value}" must be an absolute path without control characters`);
  }
  return value;
}
