// The body of POST /api/sessions/:id/exec, in either of its two forms:
//   application/json                          the exec request, its stdin (if any) as a base64 `stdin` field
//   application/vnd.session-sandbox.exec-stdin the exec request as one JSON line, then the raw stdin bytes,
//                                             streamed to the command as they arrive (any size up to
//                                             MAX_STDIN_BYTES; `curl --data-binary @-` sends it)
// Either way the route gets the request as a validated ExecBody, and the stdin as a stream (stdinOf).
import { BodyTooLargeError, MalformedExecBodyError, UnsupportedMediaTypeError } from "../errors";
import { MAX_BODY_BYTES, parseJsonObject } from "./json-body";
import { limitedStream, type BodyReader } from "./limited-stream";

export const EXEC_STDIN_MEDIA_TYPE = "application/vnd.session-sandbox.exec-stdin";
/** What one command's streamed stdin may total: beyond it the upload is cut and the command sees an error. */
export const MAX_STDIN_BYTES = 1024 * 1024 * 1024;

/** The streamed stdin of each exec request of the second form, set aside by the parser for the handler. */
const streamedStdin = new WeakMap<Request, ReadableStream<Uint8Array>>();

async function parseExecBody(context: { request: Request; contentType: string }): Promise<unknown> {
  const { request, contentType } = context;
  if (!contentType.toLowerCase().startsWith(EXEC_STDIN_MEDIA_TYPE)) {
    if (!/^application\/json\b/i.test(contentType)) throw new UnsupportedMediaTypeError(contentType, ["application/json", EXEC_STDIN_MEDIA_TYPE]);
    return parseJsonObject(context);
  }
  if (!request.body) throw new MalformedExecBodyError("it is empty");
  const { line, rest } = await firstLine(request.body.getReader() as BodyReader);
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    throw new MalformedExecBodyError(`its first line is not JSON (${(error as Error).message})`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new MalformedExecBodyError("its first line must be a JSON object");
  if ("stdin" in value) throw new MalformedExecBodyError(`the input is what follows the first line, not a "stdin" field (that is for application/json)`);
  streamedStdin.set(request, rest);
  return value;
}

/** The route's `parse`: both forms (the named "application/json" is for the OpenAPI generator, as in json-body.ts). */
export const execBody: [typeof parseExecBody, "application/json"] = [parseExecBody, "application/json"];

/** The command's stdin: the streamed rest of the body, the decoded `stdin` field, or none. */
export function stdinOf(request: Request, stdinField: string | undefined): ReadableStream<Uint8Array> | undefined {
  const streamed = streamedStdin.get(request);
  if (streamed) return streamed;
  if (stdinField === undefined) return undefined;
  const bytes = Buffer.from(stdinField, "base64");
  return new ReadableStream({
    start(controller) {
      if (bytes.byteLength > 0) controller.enqueue(new Uint8Array(bytes));
      controller.close();
    },
  });
}

/**
 * Reads up to the first newline (at most MAX_BODY_BYTES), and hands back the rest of the body — what came
 * after the newline in the same chunk, then every later chunk — as a stream of its own, limited to MAX_STDIN_BYTES.
 */
async function firstLine(reader: BodyReader): Promise<{ line: string; rest: ReadableStream<Uint8Array> }> {
  const head: Uint8Array[] = [];
  let headBytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done || !value) throw new MalformedExecBodyError("the body ended before the newline after its JSON line");
    const newline = value.indexOf(10);
    if (newline < 0) {
      headBytes += value.byteLength;
      if (headBytes > MAX_BODY_BYTES) throw new BodyTooLargeError(MAX_BODY_BYTES, "its first line (the exec request)");
      head.push(value);
      continue;
    }
    head.push(value.subarray(0, newline));
    const line = Buffer.concat(head).toString("utf8");
    return { line, rest: limitedStream(reader, MAX_STDIN_BYTES, "the command's stdin", value.subarray(newline + 1)) };
  }
}
