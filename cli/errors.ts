// Exit codes and the one place a failure becomes a one-line reason plus a fix.
import {
  ManagerUnreachableError,
  RouteNotFoundError,
  SandboxDisabledError,
  SandboxError,
  SessionNotFoundError,
  UnauthorizedError,
  ValidationFailedError,
  VmNotFoundError,
} from "../sdk/index";

/** 0 ok, 1 the operation failed (or doctor found a problem), 2 the command line is wrong, 3 no manager answered. */
export const EXIT = { ok: 0, failed: 1, usage: 2, unreachable: 3 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** Thrown for a command line the script cannot run: unknown option, missing argument, a bad value. */
export class UsageError extends Error {
  readonly code = "USAGE";
  constructor(
    message: string,
    readonly fix: string | undefined = undefined,
  ) {
    super(message);
    this.name = "UsageError";
  }
}

export type Failure = { exitCode: ExitCode; code: string; message: string; fix: string | null };

export const START_FIX = "start it with `bash scripts/start.sh` (or point SANDBOX_URL at the running manager)";

/** The fix for an SDK error the manager's own message does not already spell out. */
function sdkFix(error: SandboxError, context: { command: string; tokenProblem: string | undefined }): string | null {
  if (error instanceof ManagerUnreachableError) return START_FIX;
  if (error instanceof UnauthorizedError) {
    const why = context.tokenProblem ? `${context.tokenProblem}; ` : "";
    return `${why}set SANDBOX_API_TOKEN to the manager's token (\`bun run --silent token\` prints it on the manager's host)`;
  }
  if (error instanceof SessionNotFoundError) return "list the registered sessions with `bun run sessions`";
  if (error instanceof VmNotFoundError) return "list the VMs with `bun run vms`";
  if (error instanceof SandboxDisabledError) return "enable sandboxing first: `bun run settings set enabled=true`";
  if (error instanceof ValidationFailedError) return `see \`bun run ${context.command} --help\``;
  if (error instanceof RouteNotFoundError) return "the manager is older than these scripts: update it and restart it";
  return null;
}

/** One line: the reason, never a stack or a multi-line dump. */
function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, "; ").trim();
}

export function describeFailure(error: unknown, context: { command: string; tokenProblem: string | undefined }): Failure {
  if (error instanceof UsageError) {
    return { exitCode: EXIT.usage, code: error.code, message: oneLine(error.message), fix: error.fix ?? `see \`bun run ${context.command} --help\`` };
  }
  if (error instanceof SandboxError) {
    // A 422 is the manager's schema refusing a value the user typed: a usage error.
    const exitCode = error instanceof ManagerUnreachableError ? EXIT.unreachable : error instanceof ValidationFailedError ? EXIT.usage : EXIT.failed;
    return { exitCode, code: error.code, message: oneLine(error.message), fix: sdkFix(error, context) };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { exitCode: EXIT.failed, code: "INTERNAL", message: oneLine(`unexpected failure: ${message}`), fix: "this is a bug in the admin script; please report it with the command line" };
}
