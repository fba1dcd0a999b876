// Builds statx-shim.c (see its header: why every gVisor guest process preloads it) once per source
// version, into the driver's state dir, where the VM's gofer (the VM's unprivileged uid) can read it.
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync } from "node:fs";
import { join } from "node:path";

const SOURCE = new URL("./statx-shim.c", import.meta.url).pathname;

/** Where the shim is inside every gVisor guest (on the VM's own /run tmpfs, like its init). */
export const GUEST_STATX_SHIM = "/run/vm-statx.so";

export function statxShimPath(stateDir: string): string {
  const hash = createHash("sha256").update(readFileSync(SOURCE)).digest("hex").slice(0, 12);
  return join(stateDir, "gvisor", `statx-shim-${hash}.so`);
}

/** Returns the built shim, compiling it first if needed; throws with gcc's message when it cannot. */
export function ensureStatxShim(stateDir: string): string {
  const path = statxShimPath(stateDir);
  if (existsSync(path)) return path;
  mkdirSync(join(stateDir, "gvisor"), { recursive: true, mode: 0o711 });
  const partial = `${path}.${process.pid}.tmp`;
  const result = Bun.spawnSync(["gcc", "-O2", "-nostdlib", "-shared", "-fPIC", "-o", partial, SOURCE], { stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`gcc could not build ${SOURCE}: ${result.stderr.toString().trim()}`);
  chmodSync(partial, 0o644);
  renameSync(partial, path);
  return path;
}
