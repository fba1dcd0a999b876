// The one body parser: JSON objects only, at most MAX_BODY_BYTES, with a reason for every refusal.
// Elysia's own parser turns `[]`, `null` and bodies without a content type into `{}`; we refuse them.
import { BodyTooLargeError, MalformedJsonError, UnsupportedMediaTypeError } from "../errors";

export const MAX_BODY_BYTES = 1024 * 1024;

export async function parseJsonObject({ request, contentType }: { request: Request; contentType: string }): Promise<unknown> {
  if (!/^application\/json\b/i.test(contentType)) throw new UnsupportedMediaTypeError(contentType);
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > MAX_BODY_BYTES) throw new BodyTooLargeError(MAX_BODY_BYTES);
  const text = await readLimited(request, MAX_BODY_BYTES);
  if (text.trim() === "") throw new MalformedJsonError("the body is empty; send a JSON object such as {}");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new MalformedJsonError((error as Error).message);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new MalformedJsonError(`expected an object, got ${Array.isArray(value) ? "an array" : String(value === null ? "null" : typeof value)}`);
  }
  return value;
}

/**
 * The `parse` of every route that takes a JSON object. parseJsonObject answers or throws, so the named
 * "application/json" after it never runs: it is there for the OpenAPI generator, which cannot see inside a
 * function and would otherwise describe the request body with no media type at all.
 */
export const jsonObjectBody: [typeof parseJsonObject, "application/json"] = [parseJsonObject, "application/json"];

/** Reads the body as text, stopping as soon as it passes `limitBytes` (a chunked body has no length). */
async function readLimited(request: Request, limitBytes: number): Promise<string> {
  if (!request.body) return "";
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of request.body) {
    total += chunk.byteLength;
    if (total > limitBytes) throw new BodyTooLargeError(limitBytes);
    chunks.push(chunk);
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new MalformedJsonError("the body is not valid UTF-8");
  }
}
