// `session-sandbox cp`: files between this host and a session's VM, as `docker cp` copies them
// (GET/PUT /api/sessions/:id/files). Paths in the VM are resolved there; this side writes only the one
// local file it is told to, and unpacks nothing: a directory travels as a tar on stdin or stdout (`-`),
// for the user's own tar to pack or unpack.
import { chmodSync, createReadStream, existsSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { Readable } from "node:stream";
import { FileRefusedError, type SandboxClient } from "../../sdk/index";
import { UsageError } from "../errors";
import { executeCommand, expectPositionals } from "../frame";

const HELP = `usage: bun run cp <session>:<path> <local path>     copy a file out of the session's VM
       bun run cp <local path> <session>:<path>     copy a file into it (parents made, mode kept)
       bun run cp <session>:<dir> - | tar -x -C here     a file or directory out, as a tar on stdout
       tar -C dir -c . | bun run cp - <session>:<dir>    a tar on stdin, unpacked into <dir> in the VM

<path> is absolute and resolved inside the VM: a link there is the VM's, never this host's. Copying into
an existing directory of the VM puts the file inside it. A local directory is not copied file by file:
pack it with tar and use \`-\` (this command runs no program here, and unpacks nothing here).`;

type Remote = { session: string; path: string };

/** `<session>:<absolute path>`; anything else is local (a local path with a colon: write it as ./a:b). */
function remoteOf(arg: string): Remote | undefined {
  const colon = arg.indexOf(":");
  if (colon <= 0 || arg.startsWith(".") || arg.startsWith("/")) return undefined;
  const path = arg.slice(colon + 1);
  if (!path.startsWith("/")) throw new UsageError(`${JSON.stringify(arg)}: the path in the VM must be absolute`, `write ${arg.slice(0, colon)}:/abs/path (e.g. ${arg.slice(0, colon)}:/home/agent/${path || "file"})`);
  return { session: arg.slice(0, colon), path };
}

export function run(argv: string[]): Promise<number> {
  return executeCommand({ name: "cp", help: HELP, options: {} }, argv, async ({ positionals, client, out }) => {
    const [from, to] = expectPositionals(positionals, ["from", "to"]) as [string, string];
    const source = remoteOf(from);
    const target = remoteOf(to);
    if (source && target) throw new UsageError("both sides are in a VM", "copy through this host: cp ses_a:/f ./f, then cp ./f ses_b:/f");
    if (!source && !target) throw new UsageError("neither side is in a VM", "name one side as <session>:<path>, e.g. ses_1:/home/agent/notes.txt");
    const written = source ? await copyOut(client, source, to) : await copyIn(client, from, target!);
    if (written && !out.json) out.line(written);
    if (written && out.json) out.printJson({ copied: written });
  });
}

/** Out of the VM: one file to a local path (an existing directory: into it), or a tar to stdout. */
async function copyOut(client: SandboxClient, source: Remote, local: string): Promise<string | undefined> {
  if (local === "-") {
    // A tar is bytes for a pipe (`| tar -x`); on a terminal its contents, the guest's, would drive the terminal.
    if (process.stdout.isTTY) throw new UsageError("refusing to write a tar to a terminal", `pipe it: session-sandbox cp ${source.session}:${source.path} - | tar -x -C <dir>`);
    const { body: tar } = await client.files.open(source.session, source.path, { tar: true });
    for await (const chunk of tar) if (!process.stdout.write(chunk)) await new Promise((resolve) => process.stdout.once("drain", resolve));
    return undefined;
  }
  const file = existsSync(local) && statSync(local).isDirectory() ? join(local, basename(source.path)) : local;
  const refused = (error: unknown) => {
    if (error instanceof FileRefusedError && error.message.includes("is a directory")) {
      throw new UsageError(`${source.session}:${source.path} is a directory`, `copy it as a tar: session-sandbox cp ${source.session}:${source.path} - | tar -x -C ${local}`);
    }
    throw error;
  };
  const opened = await client.files.open(source.session, source.path).catch(refused);
  // Written beside the destination and renamed over it: a broken transfer leaves what was there. The mode
  // is the VM file's, less set-id bits: nothing copied out of a VM becomes setuid here.
  const temp = join(dirname(file), `.${basename(file)}.session-sandbox-cp.${process.pid}`);
  try {
    writeFileSync(temp, "", { mode: 0o600 });
    await Bun.write(temp, new Response(opened.body));
    chmodSync(temp, opened.mode ? Number.parseInt(opened.mode, 8) & 0o777 : 0o644);
    renameSync(temp, file);
  } finally {
    rmSync(temp, { force: true });
  }
  return `copied ${source.session}:${source.path} to ${file}`;
}

/** Into the VM: one local file (its mode kept), or a tar from stdin unpacked into a directory. */
async function copyIn(client: SandboxClient, local: string, target: Remote): Promise<string> {
  if (local === "-") {
    const { bytes } = await client.files.write(target.session, target.path, Bun.stdin.stream(), { tar: true });
    return `unpacked ${bytes} bytes of tar into ${target.session}:${target.path}`;
  }
  if (!existsSync(local)) throw new UsageError(`${JSON.stringify(local)} does not exist here`);
  const stat = statSync(local);
  if (stat.isDirectory()) throw new UsageError(`${JSON.stringify(local)} is a directory`, `send it as a tar: tar -C ${local} -c . | session-sandbox cp - ${target.session}:${target.path}`);
  const mode = (stat.mode & 0o7777).toString(8).padStart(4, "0");
  const body = () => Readable.toWeb(createReadStream(local)) as ReadableStream<Uint8Array>;
  let path = target.path;
  const written = await client.files.write(target.session, path, body(), { mode }).catch(async (error: unknown) => {
    // As docker cp: a directory of the VM as the target takes the file inside it.
    if (!(error instanceof FileRefusedError && error.message.includes("is a directory"))) throw error;
    path = `${target.path.replace(/\/+$/, "")}/${basename(local)}`;
    return client.files.write(target.session, path, body(), { mode });
  });
  return `copied ${local} to ${target.session}:${path} (${written.bytes} bytes)`;
}
