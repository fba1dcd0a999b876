// The two programs of ours every gVisor guest runs, built from C with gcc once per source version
// (runtime/c-build.ts) into the driver's state dir (where the VM's gofer, the VM's unprivileged uid, can read
// them), and the VM's seccomp filter they install: statx-shim.c (preloaded: works around a runsc bug) and
// seccomp-exec.c (the first program of each guest process: installs the filter, then runs the command).
import { sha256Hex } from "../bun-crypto";
import { chmodSync, existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildCProgram, cProgramPath, type CProgram } from "../c-build";
import { vmSeccompProgram } from "../local/vm-seccomp";

/** Where they are inside every gVisor guest (on the VM's own /run tmpfs, like its init). */
export const GUEST_STATX_SHIM = "/run/vm-statx.so";
export const GUEST_SECCOMP_EXEC = "/run/vm-seccomp-exec";
export const GUEST_SECCOMP_FILTER = "/run/vm-seccomp.bpf";

export type GuestBinaries = { statxShim: string; seccompExec: string; seccompFilter: string };

const sourcePath = (name: string) => new URL(`./${name}`, import.meta.url).pathname;

/** Included by both sources: a change to it must rebuild them. */
const HEADERS = [sourcePath("raw-syscall.h")];
const GCC_FIX = "scripts/install-runtime-deps.sh installs it";

/** Without libc either way: they run in any image (glibc or musl), and gcc needs no libc headers. */
const PROGRAMS = {
  statxShim: { label: "statx-shim.c", name: "statx-shim", suffix: ".so", sources: [sourcePath("statx-shim.c")], headers: HEADERS, flags: ["-O2", "-nostdlib", "-shared", "-fPIC"], mode: 0o644, gccFix: GCC_FIX },
  seccompExec: {
    label: "seccomp-exec.c",
    name: "seccomp-exec",
    sources: [sourcePath("seccomp-exec.c")],
    headers: HEADERS,
    // Freestanding: gcc must not turn its loops into calls of libc's strlen or memcpy, which is absent.
    flags: ["-O2", "-static", "-nostdlib", "-ffreestanding", "-fno-builtin", "-fno-tree-loop-distribute-patterns", "-fno-stack-protector"],
    gccFix: GCC_FIX,
  },
} satisfies Record<"statxShim" | "seccompExec", CProgram>;

/** The gofer reads these as the VM's uid: the directory is searchable, not listable. */
const DIR_MODE = 0o711;

function pathOf(program: CProgram, dir: string): string {
  const binary = cProgramPath(program, dir);
  if (binary.path === undefined) throw new Error(binary.problem);
  return binary.path;
}

/** The paths the binaries will have (whether built yet or not). */
export function guestBinaryPaths(stateDir: string): GuestBinaries {
  const dir = join(stateDir, "gvisor");
  const filter = vmSeccompProgram();
  return { statxShim: pathOf(PROGRAMS.statxShim, dir), seccompExec: pathOf(PROGRAMS.seccompExec, dir), seccompFilter: join(dir, `seccomp-${sha256Hex(filter).slice(0, 12)}.bpf`) };
}

/** Returns the binaries and the filter, building what is missing; throws with gcc's message when it cannot. */
export function ensureGuestBinaries(stateDir: string): GuestBinaries {
  const paths = guestBinaryPaths(stateDir);
  const dir = join(stateDir, "gvisor");
  mkdirSync(dir, { recursive: true, mode: DIR_MODE });
  for (const program of [PROGRAMS.statxShim, PROGRAMS.seccompExec]) {
    const built = buildCProgram(program, dir, DIR_MODE);
    if (built.problem !== undefined) throw new Error(built.problem);
  }
  if (!existsSync(paths.seccompFilter)) {
    // Written next to the target and renamed, world-readable, like the binaries.
    const partial = `${paths.seccompFilter}.${process.pid}.tmp`;
    writeFileSync(partial, vmSeccompProgram());
    chmodSync(partial, 0o644);
    renameSync(partial, paths.seccompFilter);
  }
  return paths;
}
