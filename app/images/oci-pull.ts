// Pulls an OCI image from a registry into a root filesystem directory: skopeo asks the registry for
// the digest and copies the image into an OCI layout, umoci unpacks its layers. Neither runs anything
// from the image; the unpacked tree is then treated as hostile input (no device nodes, no set-id bits).
import { createHash } from "node:crypto";
import { mkdirSync, renameSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import { fileExistsInRoot } from "../../runtime/local/rootfs";
import { isLoopbackRegistry, type ParsedReference } from "./image-choice";
import { diesWithManager, runWithLines as run, type Line } from "./run-with-lines";
import { runWithinSize } from "./size-watch";

/** How long the registry may take to answer the digest question; the copy itself has no deadline but its own progress. */
const INSPECT_TIMEOUT_MS = 60_000;

export class ImagePullError extends Error {}

/**
 * skopeo's fatal lines are logrus records: keep only the message, which names the cause.
 * Exported so a test checks it directly.
 */
export function skopeoReason(stderr: string): string {
  const lines = stderr.trim().split("\n").filter(Boolean);
  const last = lines.at(-1) ?? "no output";
  const message = /msg="((?:[^"\\]|\\.)*)"/.exec(last)?.[1]?.replace(/\\"/g, '"') ?? last;
  return message.replace(/^Error parsing image name "[^"]*": /, "");
}

function tlsFlags(parsed: ParsedReference, flag: string): string[] {
  return isLoopbackRegistry(parsed.domain) ? [`${flag}=false`] : [];
}

/**
 * The digest of the manifest the registry serves for this reference now: sha256 of its exact bytes
 * (`skopeo inspect --raw` fetches the manifest only, no blob). For a multi-arch index that is the index's
 * digest; `skopeo copy` of `name@digest` then picks this host's platform, so the cache stays correct.
 */
export async function resolveDigest(parsed: ParsedReference): Promise<string> {
  if (parsed.digest) return parsed.digest;
  const ref = `docker://${parsed.domain}/${parsed.path}:${parsed.tag}`;
  const proc = Bun.spawn(diesWithManager(["skopeo", "inspect", "--raw", "--no-tags", "--retry-times", "0", ...tlsFlags(parsed, "--tls-verify"), ref]), {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    timeout: INSPECT_TIMEOUT_MS,
    killSignal: "SIGKILL",
  });
  const [manifest, stderr, code] = await Promise.all([new Response(proc.stdout).bytes(), new Response(proc.stderr).text(), proc.exited]);
  if (proc.signalCode === "SIGKILL") throw new ImagePullError(`the registry ${parsed.domain} did not answer within ${INSPECT_TIMEOUT_MS / 1000} s`);
  if (code !== 0) throw new ImagePullError(skopeoReason(stderr));
  if (manifest.length === 0 || manifest[0] !== 0x7b) throw new ImagePullError(`the registry ${parsed.domain} answered something that is not a manifest`);
  return `sha256:${createHash("sha256").update(manifest).digest("hex")}`;
}

/** Everything the guest cannot do without: the command shell and PID 1's `sleep`. */
const REQUIRED_IN_IMAGE = ["/bin/sh", "/bin/sleep"];

/** Removes what an image must not bring to the host: device nodes, and set-user/group-id bits. */
async function sanitize(rootfs: string): Promise<void> {
  // find -P (the default) never follows a symlink, and -xdev stays on this file system.
  const devices = await run(["find", rootfs, "-xdev", "(", "-type", "b", "-o", "-type", "c", ")", "-delete"], undefined);
  const setid = await run(["find", rootfs, "-xdev", "-type", "f", "-perm", "/6000", "-exec", "chmod", "ug-s", "{}", "+"], undefined);
  if (devices.code !== 0 || setid.code !== 0) throw new ImagePullError(`could not sanitize the unpacked image: ${(devices.stderr || setid.stderr).trim()}`);
}

/**
 * Treats an unpacked tree as hostile (sanitize), checks it can be booted, and publishes it at `rootfs`
 * with one rename: what a pull and a Dockerfile build (dockerfile-build.ts) both end with.
 */
export async function publishUnpacked(unpacked: string, rootfs: string): Promise<void> {
  await sanitize(unpacked);
  const missing = REQUIRED_IN_IMAGE.filter((path) => !fileExistsInRoot(unpacked, path));
  if (missing.length > 0) {
    throw new ImagePullError(`the image has no ${missing.join(" or ")}: every command runs as \`sh -c\` and the VM's first process is \`sleep\`; use an image with a shell (e.g. debian, ubuntu, alpine, busybox)`);
  }
  mkdirSync(dirname(rootfs), { recursive: true, mode: 0o700 });
  renameSync(unpacked, rootfs);
}

/**
 * Copies `domain/path@digest` into a temporary OCI layout beside `rootfs`, unpacks it, checks it, and
 * publishes it at `rootfs` with one rename. The download and the unpacked tree are each bounded by
 * `limitBytes` while they are written (size-watch.ts: ImageSizeExceeded). A failure leaves nothing behind.
 */
export async function pullRootfs(parsed: ParsedReference, digest: string, rootfs: string, onLine: Line, limitBytes: number): Promise<void> {
  const work = `${rootfs}.partial`;
  const layout = `${work}/layout`;
  const unpacked = `${work}/rootfs`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true, mode: 0o700 });
  try {
    onLine(`copying ${parsed.domain}/${parsed.path}@${digest}`);
    const fsPath = dirname(work);
    const copy = await runWithinSize(["skopeo", "copy", "--retry-times", "0", ...tlsFlags(parsed, "--src-tls-verify"), `docker://${parsed.domain}/${parsed.path}@${digest}`, `oci:${layout}:image`], onLine, { dir: layout, fsPath, limitBytes });
    if (copy.code !== 0) throw new ImagePullError(skopeoReason(copy.stderr));
    onLine("unpacking the layers (umoci)");
    const unpack = await runWithinSize(["umoci", "raw", "unpack", "--image", `${layout}:image`, unpacked], onLine, { dir: unpacked, fsPath, limitBytes });
    if (unpack.code !== 0) throw new ImagePullError(`umoci could not unpack the image: ${unpack.stderr.trim().split("\n").at(-1)}`);
    await publishUnpacked(unpacked, rootfs);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
