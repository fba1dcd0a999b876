// The seccomp program every VM of every tier runs under (seccomp-profile.ts, compiled by seccomp-bpf.ts):
// one per thread. An actor Worker adopts the one its manager's main thread compiled from this same code
// (workers/protocol.ts, withStartupFindings) instead of compiling it again: that saves time on a new session's
// first command in a fresh Worker, and the compiler's bytecode in each actor's memory.
import { compileSeccomp } from "./seccomp-bpf";
import { seccompProfile } from "./seccomp-profile";

let program: Buffer | undefined;

export function vmSeccompProgram(): Buffer {
  return (program ??= compileSeccomp(seccompProfile()));
}

/** Base64, as it crosses to a Worker. */
export function vmSeccompProgramBase64(): string {
  return vmSeccompProgram().toString("base64");
}

/** Takes the main thread's compile of this same program (base64), if this thread has none yet. */
export function adoptVmSeccompProgram(base64: string): void {
  program ??= Buffer.from(base64, "base64");
}
