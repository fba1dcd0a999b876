// The program of ours every gVisor guest runs, built from C with gcc once per source version
// (runtime/c-build.ts) into the driver's state dir (where the VM's gofer, the VM's unprivileged uid, can read
// it), and the VM's seccomp filter it installs: seccomp-exec.c (the first program of each guest process:
// installs the filter, then runs the command). (A statx shim preloaded into every guest worked around
// runsc 20221219's AT_NO_AUTOMOUNT bug; the tier needs 20240729 now, which has no such bug.)
import { sha256Hex } from "../bun-crypto";
import { chmodSync, existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildCProgram, cProgramPath, type CProgram } from "../c-build";
import { vmSeccompProgram } from "../local/vm-seccomp";

/** Where they are inside every gVisor guest (on the VM's own /run tmpfs, like its init). */
export const GUEST_SECCOMP_EXEC = "/run/vm-seccomp-exec";
export const GUEST_SECCOMP_FILTER = "/run/vm-seccomp.bpf";

export type GuestBinaries = { seccompExec: string; seccompFilter: string };

const sourcePath = (name: string) => new URL(`./${name}`, import.meta.url).pathname;

/** Included by the source: a change to it must rebuild the program. */
const HEADERS = [sourcePath("raw-syscall.h")];
const GCC_FIX = "scripts/install-runtime-deps.sh installs it";

/** Without libc: it runs in any image (glibc or musl), and gcc needs no libc headers. */
const PROGRAMS = {
  seccompExec: {
    label: "seccomp-exec.c",
    name: "seccomp-exec",
    sources: [sourcePath("seccomp-exec.c")],
    headers: HEADERS,
    // Freestanding: gcc must not turn its loops into calls of libc's strlen or memcpy, which is absent.
    flags: ["-O2", "-static", "-nostdlib", "-ffreestanding", "-fno-builtin", "-fno-tree-loop-distribute-patterns", "-fno-stack-protector"],
    gccFix: GCC_FIX,
  },
} satisfies Record<"seccompExec", CProgram>;

/** The gofer reads them as the VM's uid: the directory is searchable, not listable. */
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
  return { seccompExec: pathOf(PROGRAMS.seccompExec, dir), seccompFilter: join(dir, `seccomp-${sha256Hex(filter).slice(0, 12)}.bpf`) };
}

/** Returns the binary and the filter, building what is missing; throws with gcc's message when it cannot. */
export function ensureGuestBinaries(stateDir: string): GuestBinaries {
  const paths = guestBinaryPaths(stateDir);
  const dir = join(stateDir, "gvisor");
  mkdirSync(dir, { recursive: true, mode: DIR_MODE });
  const built = buildCProgram(PROGRAMS.seccompExec, dir, DIR_MODE);
  if (built.problem !== undefined) throw new Error(built.problem);
  if (!existsSync(paths.seccompFilter)) {
    // Written next to the target and renamed, world-readable, like the binaries.
    const partial = `${paths.seccompFilter}.${process.pid}.tmp`;
    writeFileSync(partial, vmSeccompProgram());
    chmodSync(partial, 0o644);
    renameSync(partial, paths.seccompFilter);
  }
  return paths;
}
