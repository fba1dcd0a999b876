// GET / PUT /api/sessions/:id/files?path=/abs/in/vm: a file's bytes out of the session's VM, or into it
// (app/services/files.ts resolves every path inside the VM). GET with `Accept: application/x-tar` answers a
// tar (a directory's contents, or the one file); PUT with `Content-Type: application/x-tar` unpacks one into
// the directory `path`. Uploads stream to the VM as the command there takes them, up to MAX_UPLOAD_BYTES.
import { Type } from "@sinclair/typebox";
import { Elysia, t } from "elysia";
import { UnsupportedMediaTypeError } from "../errors";
import { MAX_STDIN_BYTES } from "../http/exec-body";
import { limitedStream, type BodyReader } from "../http/limited-stream";
import { createPacedStream } from "../http/paced-stream";
import { errors, SessionParams } from "../http/schemas";
import type { FilesService } from "../services/files";

/** The largest upload: as large as a command's streamed stdin, which is what it becomes. */
export const MAX_UPLOAD_BYTES = MAX_STDIN_BYTES;
const TAR = "application/x-tar";
const BYTES = "application/octet-stream";

const FilePath = t.String({ minLength: 1, maxLength: 4096, pattern: "^/[^\\u0000]*$", description: "Absolute path inside the session's VM (resolved there: links are the VM's)" });
const FileQuery = t.Object({ path: FilePath });
const WriteQuery = t.Object({
  path: FilePath,
  mode: t.Optional(t.String({ pattern: "^[0-7]{3,4}$", description: "Octal permissions, e.g. 0755; default: the replaced file's, else 0644 less the VM's umask" })),
});
const FileWritten = t.Object({ path: t.String(), bytes: Type.Integer({ description: "Bytes taken from the body" }) });

/** Whether the client asked for a tar: `Accept: application/x-tar` (or `?format=tar`-less clients: none). */
function wantsTar(accept: string | null): boolean {
  return accept !== null && accept.toLowerCase().includes(TAR);
}

export function fileRoutes(files: FilesService, maxUploadBytes = MAX_UPLOAD_BYTES) {
  return new Elysia({ tags: ["files"] })
    .get(
      "/api/sessions/:id/files",
      async ({ params, query, request, server }) => {
        server?.timeout(request, 0); // a large file to a slow reader takes as long as it takes
        const cancel = new AbortController();
        const target = createPacedStream(() => cancel.abort());
        request.signal.addEventListener("abort", () => (cancel.abort(), target.close()), { once: true });
        const read = await files.read(params.id, query.path, { tar: wantsTar(request.headers.get("accept")), signal: cancel.signal, target });
        const headers: Record<string, string> = { "content-type": read.kind === "tar" ? TAR : BYTES, "cache-control": "no-store" };
        if (read.kind === "file") Object.assign(headers, { "x-session-sandbox-file-size": String(read.size), "x-session-sandbox-file-mode": read.mode });
        return new Response(read.body, { headers });
      },
      {
        params: SessionParams,
        query: FileQuery,
        response: { 200: t.String({ description: "The file's bytes (application/octet-stream), or a tar (application/x-tar)" }), ...errors(400, 401, 404, 409, 422, 429, 503) },
        detail: { operationId: "readFile", summary: "Read a file (or, with Accept: application/x-tar, a tar of a file or directory) from the session's VM" },
      },
    )
    .put(
      "/api/sessions/:id/files",
      async ({ params, query, request, server, set }) => {
        server?.timeout(request, 0);
        const contentType = (request.headers.get("content-type") ?? "").toLowerCase();
        const tar = contentType.startsWith(TAR);
        if (!tar && !contentType.startsWith(BYTES)) throw new UnsupportedMediaTypeError(contentType, [BYTES, TAR]);
        const reader = (request.body ?? new Blob([]).stream()).getReader() as BodyReader;
        const body = limitedStream(reader, maxUploadBytes, "the upload");
        const written = await files.write(params.id, query.path, { body, tar, signal: request.signal, ...(query.mode ? { mode: query.mode } : {}) });
        set.status = 201;
        return written;
      },
      {
        params: SessionParams,
        query: WriteQuery,
        // The body is the file itself, read as a stream by the handler: no parser may buffer it.
        parse: "none",
        response: { 201: FileWritten, ...errors(400, 401, 404, 409, 413, 415, 422, 429, 503) },
        detail: { operationId: "writeFile", summary: "Write a file into the session's VM (application/octet-stream), or unpack a tar into a directory there (application/x-tar)" },
      },
    );
}
