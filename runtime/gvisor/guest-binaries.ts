// The two programs of ours every gVisor guest runs, built from C with gcc once per source version into the
// driver's state dir (where the VM's gofer, the VM's unprivileged uid, can read them), and the VM's seccomp
// filter they install: statx-shim.c (preloaded: works around a runsc bug) and seccomp-exec.c (the first
// program of each guest process: installs the filter, then runs the command).
import { sha256Hex } from "../bun-crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { vmSeccompProgram } from "../local/vm-seccomp";

/** Where they are inside every gVisor guest (on the VM's own /run tmpfs, like its init). */
export const GUEST_STATX_SHIM = "/run/vm-statx.so";
export const GUEST_SECCOMP_EXEC = "/run/vm-seccomp-exec";
export const GUEST_SECCOMP_FILTER = "/run/vm-seccomp.bpf";

export type GuestBinaries = { statxShim: string; seccompExec: string; seccompFilter: string };

/** Without libc either way: they run in any image (glibc or musl), and gcc needs no libc headers. */
const BUILDS = {
  statxShim: { source: "statx-shim.c", flags: ["-O2", "-nostdlib", "-shared", "-fPIC"], suffix: ".so" },
  seccompExec: {
    source: "seccomp-exec.c",
    // Freestanding: gcc must not turn its loops into calls of libc's strlen or memcpy, which is absent.
    flags: ["-O2", "-static", "-nostdlib", "-ffreestanding", "-fno-builtin", "-fno-tree-loop-distribute-patterns", "-fno-stack-protector"],
    suffix: "",
  },
} as const;

/** Included by both sources: a change to it must rebuild them. */
const HEADER = "raw-syscall.h";

function sourcePath(name: string): string {
  return new URL(`./${name}`, import.meta.url).pathname;
}

function hashOf(data: string | Uint8Array): string {
  return sha256Hex(data).slice(0, 12);
}

/** Writes atomically, world-readable: the gofer reads these as the VM's uid. */
function install(path: string, write: (partial: string) => void, mode: number): string {
  if (existsSync(path)) return path;
  const partial = `${path}.${process.pid}.tmp`;
  write(partial);
  chmodSync(partial, mode);
  renameSync(partial, path);
  return path;
}

/** The paths the binaries will have (whether built yet or not). */
export function guestBinaryPaths(stateDir: string): GuestBinaries {
  const dir = join(stateDir, "gvisor");
  const built = (key: keyof typeof BUILDS) => {
    const build = BUILDS[key];
    const hash = hashOf(`${readFileSync(sourcePath(build.source), "utf8")}\n${readFileSync(sourcePath(HEADER), "utf8")}\n${build.flags.join(" ")}`);
    return join(dir, `${build.source.replace(/\.c$/, "")}-${hash}${build.suffix}`);
  };
  const filter = vmSeccompProgram();
  return { statxShim: built("statxShim"), seccompExec: built("seccompExec"), seccompFilter: join(dir, `seccomp-${hashOf(filter)}.bpf`) };
}

/** Returns the binaries and the filter, building what is missing; throws with gcc's message when it cannot. */
export function ensureGuestBinaries(stateDir: string): GuestBinaries {
  const paths = guestBinaryPaths(stateDir);
  mkdirSync(join(stateDir, "gvisor"), { recursive: true, mode: 0o711 });
  for (const key of ["statxShim", "seccompExec"] as const) {
    const build = BUILDS[key];
    install(paths[key], (partial) => {
      const result = Bun.spawnSync(["gcc", ...build.flags, "-o", partial, sourcePath(build.source)], { stdout: "pipe", stderr: "pipe" });
      if (result.exitCode !== 0) throw new Error(`gcc could not build ${build.source}: ${result.stderr.toString().trim()}`);
    }, key === "statxShim" ? 0o644 : 0o755);
  }
  install(paths.seccompFilter, (partial) => writeFileSync(partial, vmSeccompProgram()), 0o644);
  return paths;
}
