// Files in and out of a session's VM (GET/PUT /api/sessions/:id/files). Every path is resolved inside
// the VM, by a command the manager runs there (cat, tar, mv), exactly as the session's commands run: the
// host never opens a guest path, so no link the guest made can point the host at its own files. A link to
// /etc/shadow reads the VM's /etc/shadow. The bytes stream both ways with the exec path's backpressure.
import { DomainError, FileNotFoundError, FileRefusedError } from "../errors";
import type { ExecService } from "./exec";

/**
 * Reads $1 in the VM. Its first line says what follows: `file <size> <octal mode>` then the bytes, `tar` then a tar
 * (with $2 = tar: a directory's contents, or the one file), or why nothing follows (missing, dir, special).
 */
const READ_SCRIPT = `p=$1
if [ -d "$p" ]; then
  [ "$2" = tar ] || { echo dir; exit 0; }
  echo tar; exec tar -C "$p" -cf - .
fi
[ -e "$p" ] || { echo missing; exit 0; }
[ -f "$p" ] || { echo special; exit 0; }
[ -r "$p" ] || { echo unreadable; exit 0; }
if [ "$2" = tar ]; then echo tar; exec tar -C "$(dirname -- "$p")" -cf - -- "$(basename -- "$p")"; fi
echo "file $(stat -L -c '%s %a' -- "$p")"
exec cat -- "$p"`;

/**
 * Writes stdin to $1 in the VM: parents made, written beside it and renamed over it (a broken upload leaves
 * the old file), with mode $2, or the old file's mode, or the default. Prints the temp file's path first
 * (an upload cancelled part-way is killed before its trap runs: the service removes it), then the size.
 */
const WRITE_SCRIPT = `set -e
p=$1 mode=$2
case "$p" in */) echo "the path ends with /: name the file to write" >&2; exit 65;; esac
d=$(dirname -- "$p")
mkdir -p -- "$d"
[ ! -d "$p" ] || { echo "$p is a directory: name a file inside it, or send a tar (content-type application/x-tar) to unpack into it" >&2; exit 65; }
[ -n "$mode" ] || mode=$(stat -c %a -- "$p" 2>/dev/null || true)
tmp="$d/.session-sandbox-upload.$$"
printf '%s\\n' "$tmp"
trap 'rm -f -- "$tmp"' EXIT
cat > "$tmp"
[ -z "$mode" ] || chmod -- "$mode" "$tmp"
mv -f -- "$tmp" "$p"
trap - EXIT
stat -c %s -- "$p"`;

/** Unpacks a tar from stdin into the directory $1 in the VM (made if missing). */
const UNPACK_SCRIPT = `set -e
mkdir -p -- "$1"
tar -C "$1" -xf - --no-same-owner
echo unpacked`;

/** Bytes of a failed command's stderr kept for the reason. */
const REASON_BYTES = 2048;

export type FileRead = { kind: "file"; size: number; mode: string; body: ReadableStream<Uint8Array> } | { kind: "tar"; body: ReadableStream<Uint8Array> };
export type FileWritten = { path: string; bytes: number };

/** Where a read's bytes go: a paced body (app/http/paced-stream.ts) that can also be broken off. */
export type ReadTarget = { write(bytes: Uint8Array): Promise<void> | undefined; close(): void; fail(reason: Error): void; stream: ReadableStream<Uint8Array> };

export function createFilesService(exec: Pick<ExecService, "startManaged">) {
  /**
   * Streams `path` from the session's VM into `target`: the file's bytes, or with `tar` a tar of it (a
   * directory: its contents). Rejects before anything is sent when it is missing, a directory without
   * `tar`, or not a regular file.
   */
  async function read(sessionId: string, path: string, options: { tar: boolean; signal: AbortSignal; target: ReadTarget }): Promise<FileRead> {
    const { target } = options;
    const header = Promise.withResolvers<string>();
    let head = Buffer.alloc(0);
    let headerDone = false;
    let stderr = "";
    const started = await exec.startManaged(sessionId, { argv: ["sh", "-c", READ_SCRIPT, "sh", path, options.tar ? "tar" : "raw"], label: `(files: read ${path})` }, {
      signal: options.signal,
      onChunk: (stream, data) => {
        if (stream === "stderr") {
          stderr = (stderr + Buffer.from(data).toString("utf8")).slice(-REASON_BYTES);
          return undefined;
        }
        if (headerDone) return target.write(data);
        head = Buffer.concat([head, data]);
        const newline = head.indexOf(10);
        if (newline < 0) return undefined;
        headerDone = true;
        header.resolve(head.subarray(0, newline).toString("utf8"));
        const rest = head.subarray(newline + 1);
        return rest.byteLength > 0 ? target.write(new Uint8Array(rest)) : undefined;
      },
    });
    void started.outcome.then((settled) => {
      if (!headerDone) header.resolve("");
      if (settled.ok && settled.result.exitCode === 0) return target.close();
      const why = settled.ok ? stderr.trim() || `exit ${settled.result.exitCode}` : String((settled.error as Error)?.message ?? settled.error);
      target.fail(new Error(`reading ${path} in the VM broke off: ${why}`));
    });
    const line = await header.promise;
    if (line === "missing") throw new FileNotFoundError(path);
    if (line === "dir") throw new FileRefusedError(`${JSON.stringify(path)} is a directory in the VM: ask for a tar of it (Accept: application/x-tar; session-sandbox cp copies it as one)`);
    if (line === "special") throw new FileRefusedError(`${JSON.stringify(path)} is not a regular file in the VM (a device, FIFO or socket): only files and directories can be read`);
    if (line === "unreadable") throw new FileRefusedError(`${JSON.stringify(path)} cannot be read in the VM (permission denied)`);
    if (line === "tar") return { kind: "tar", body: target.stream };
    const [, size, mode] = /^file (\d+) ([0-7]{3,4})$/.exec(line) ?? [];
    if (size === undefined || mode === undefined) throw new FileRefusedError(`${JSON.stringify(path)} could not be read in the VM: ${stderr.trim() || "its reader said nothing"}`);
    return { kind: "file", size: Number(size), mode, body: target.stream };
  }

  /**
   * Writes `body` to `path` in the session's VM, or with `tar` unpacks it into the directory `path`. Resolves
   * once it is there, with the bytes taken; rejects with the VM's reason when it could not be written.
   */
  async function write(sessionId: string, path: string, options: { body: ReadableStream<Uint8Array>; mode?: string; tar: boolean; signal: AbortSignal }): Promise<FileWritten> {
    let bytes = 0;
    let broken: unknown;
    const reader = options.body.getReader();
    // Counts what the VM took, and keeps why the upload broke off (over its limit, cut): that is the answer.
    const counted = new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          try {
            const { done, value } = await reader.read();
            if (done) return controller.close();
            bytes += value.byteLength;
            controller.enqueue(value);
          } catch (error) {
            broken = error;
            controller.error(error);
          }
        },
        cancel: (reason) => reader.cancel(reason),
      },
      { highWaterMark: 0 },
    );
    const argv = options.tar ? ["sh", "-c", UNPACK_SCRIPT, "sh", path] : ["sh", "-c", WRITE_SCRIPT, "sh", path, options.mode ?? ""];
    let stderr = "";
    let stdout = "";
    const started = await exec.startManaged(sessionId, { argv, label: `(files: ${options.tar ? "unpack into" : "write"} ${path})` }, {
      signal: options.signal,
      stdin: counted,
      onChunk: (stream, data) => {
        if (stream === "stderr") stderr = (stderr + Buffer.from(data).toString("utf8")).slice(-REASON_BYTES);
        else stdout = (stdout + Buffer.from(data).toString("utf8")).slice(0, REASON_BYTES);
        return undefined;
      },
    });
    const settled = await started.outcome;
    // A broken upload cancelled the command before its end of input: nothing was renamed into place, and
    // the temp file it was writing goes now (the kill left it).
    const temp = stdout.split("\n")[0] ?? "";
    if (broken !== undefined && !options.tar && temp.includes("/.session-sandbox-upload.")) {
      await exec.startManaged(sessionId, { argv: ["rm", "-f", "--", temp], label: `(files: remove the broken upload of ${path})` }, { signal: options.signal, onChunk: () => undefined })
        .then((cleanup) => cleanup.outcome)
        .catch(() => undefined);
    }
    if (broken !== undefined) throw broken instanceof DomainError ? broken : new FileRefusedError(`the upload of ${JSON.stringify(path)} broke off (${String(broken)}); nothing was written`);
    if (!settled.ok) throw settled.error;
    if (settled.result.exitCode !== 0) {
      throw new FileRefusedError(`${JSON.stringify(path)} could not be written in the VM: ${stderr.trim() || `exit ${settled.result.exitCode}`}`);
    }
    return { path, bytes };
  }

  return { read, write };
}

export type FilesService = ReturnType<typeof createFilesService>;
