// The global onError: maps every failure to `{ code, message }` with its status. Uses instanceof, never
// Elysia's error registry (a `code` field on an error confuses it).
import { Elysia, ValidationError } from "elysia";
import { DomainError, RouteNotFoundError } from "../errors";
import type { Logger } from "../log";

function describeValidation(error: ValidationError): string {
  const issues = (error.all ?? []) as { path?: string; summary?: string; message?: string }[];
  const where = error.type === "params" ? "path parameter" : error.type;
  const details = issues.slice(0, 5).map((issue) => `${issue.path || "/"}: ${issue.summary ?? issue.message}`);
  return `invalid ${where}: ${details.join("; ") || error.message}`;
}

export function errorHandler(log: Logger) {
  return new Elysia({ name: "error-handler" }).onError({ as: "global" }, ({ error: raised, code, request, set }) => {
    // Elysia wraps whatever a parse hook throws in its ParseError; our parser's reason is the cause.
    const error = code === "PARSE" && raised.cause instanceof DomainError ? raised.cause : raised;
    if (error instanceof DomainError) {
      set.status = error.status;
      return { code: error.errorCode, message: error.message };
    }
    if (error instanceof ValidationError && error.type !== "response") {
      set.status = 422;
      return { code: "VALIDATION_FAILED" as const, message: describeValidation(error) };
    }
    if (code === "NOT_FOUND") {
      const url = new URL(request.url);
      set.status = 404;
      return { code: "ROUTE_NOT_FOUND" as const, message: new RouteNotFoundError(request.method, url.pathname).message };
    }
    if (code === "PARSE") {
      set.status = 400;
      return { code: "MALFORMED_JSON" as const, message: "request body could not be parsed; send a JSON object" };
    }
    log.error("unhandled error", { method: request.method, path: new URL(request.url).pathname, error: String(error) });
    set.status = 500;
    return { code: "INTERNAL" as const, message: "internal error; the manager logged the details" };
  });
}
