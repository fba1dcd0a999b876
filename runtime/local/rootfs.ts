// Locates and (on request) builds the cached guest root filesystem via scripts/build-rootfs.sh.
import { existsSync, lstatSync, readlinkSync, type Stats } from "node:fs";
import { join } from "node:path";

export const BUILD_ROOTFS_SCRIPT = new URL("../../scripts/build-rootfs.sh", import.meta.url).pathname;
export const INSTALL_DEPS_SCRIPT = new URL("../../scripts/install-runtime-deps.sh", import.meta.url).pathname;

/** The script owns the recipe hash, so the path is asked from it rather than recomputed here. */
export function defaultRootfsDir(): string {
  const result = Bun.spawnSync(["bash", BUILD_ROOTFS_SCRIPT, "--print-path"], { stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`${BUILD_ROOTFS_SCRIPT} --print-path failed: ${result.stderr.toString()}`);
  return result.stdout.toString().trim();
}

/** True once the build script finished (it writes this marker last). */
export function rootfsReady(dir: string): boolean {
  return existsSync(join(dir, "etc/session-sandbox-rootfs"));
}

/** Builds the rootfs if missing (minutes the first time, instant after) and returns its path. Progress goes to stderr. */
export async function ensureRootfs(): Promise<string> {
  const proc = Bun.spawn(["bash", BUILD_ROOTFS_SCRIPT], { stdout: "pipe", stderr: "inherit" });
  const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  if (code !== 0) throw new Error(`${BUILD_ROOTFS_SCRIPT} failed with exit ${code}`);
  return out.trim().split("\n").at(-1) ?? "";
}

const MAX_SYMLINK_HOPS = 40;

/**
 * Where `guestPath` leads inside the image at `root`: the guest path with every symlink resolved as the
 * guest would see it (an absolute target restarts at `root`, `..` never climbs above it); undefined when
 * it leads nowhere. The host's own files are never consulted, so a pulled image's `/bin/sh ->
 * /bin/busybox` is judged by the image.
 */
export function resolveInRoot(root: string, guestPath: string): { path: string; stats: Stats } | undefined {
  let pending = guestPath.split("/").filter(Boolean);
  const resolved: string[] = [];
  for (let hops = 0; pending.length > 0; ) {
    const name = pending.shift()!;
    if (name === ".") continue;
    if (name === "..") {
      resolved.pop();
      continue;
    }
    const path = join(root, ...resolved, name);
    let stats;
    try {
      stats = lstatSync(path);
    } catch {
      return undefined;
    }
    if (stats.isSymbolicLink()) {
      if (++hops > MAX_SYMLINK_HOPS) return undefined;
      const target = readlinkSync(path);
      if (target.startsWith("/")) resolved.length = 0;
      pending = [...target.split("/").filter(Boolean), ...pending];
      continue;
    }
    if (pending.length > 0 && !stats.isDirectory()) return undefined;
    resolved.push(name);
    if (pending.length === 0) return { path: `/${resolved.join("/")}`, stats };
  }
  // Ended on "." or "..": the directory reached.
  return { path: `/${resolved.join("/")}`, stats: lstatSync(join(root, ...resolved)) };
}

/** resolveInRoot, when the path leads to a regular file. */
export function resolveFileInRoot(root: string, guestPath: string): string | undefined {
  const found = resolveInRoot(root, guestPath);
  return found?.stats.isFile() ? found.path : undefined;
}

/** Whether `guestPath` names a regular file inside the image at `root` (see resolveFileInRoot). */
export function fileExistsInRoot(root: string, guestPath: string): boolean {
  return resolveFileInRoot(root, guestPath) !== undefined;
}
