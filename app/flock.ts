// flock(2) from libc through bun:ffi: node:fs has no advisory locks. The kernel drops a flock when the last
// descriptor of its open file closes, which happens when the holder dies by any signal (kill -9 included),
// so a crash never leaves a stale lock behind. A pid file would need a liveness check (pid reuse, start
// times) and a child `flock` process would need to notice its parent's death; this needs neither.
import { dlopen, FFIType, read } from "bun:ffi";

const LOCK_EX = 2;
const LOCK_NB = 4;
const EWOULDBLOCK = 11;
// glibc first; musl names its libc differently.
const LIBC_NAMES = ["libc.so.6", "libc.so", "libc.musl-x86_64.so.1", "libc.musl-aarch64.so.1"];
const SYMBOLS = {
  flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  __errno_location: { args: [], returns: FFIType.ptr },
} as const;

let libc: ReturnType<typeof dlopen<typeof SYMBOLS>> | undefined;

function openLibc(): NonNullable<typeof libc> {
  for (const name of LIBC_NAMES) {
    try {
      return (libc ??= dlopen(name, SYMBOLS));
    } catch {
      // Not this libc: try the next name.
    }
  }
  throw new Error(`cannot load the C library (tried ${LIBC_NAMES.join(", ")}) to call flock(2)`);
}

/**
 * Takes an exclusive flock on `fd` without waiting. Returns false when another open file holds it; throws
 * for any other failure (e.g. a filesystem without flock support). Open `fd` close-on-exec (Bun's
 * openSync does), or every child process would inherit the lock and keep it past the holder's death.
 */
export function tryLockExclusive(fd: number): boolean {
  const { flock, __errno_location } = openLibc().symbols;
  if (flock(fd, LOCK_EX | LOCK_NB) === 0) return true;
  const errno = read.i32(__errno_location()!, 0);
  if (errno === EWOULDBLOCK) return false;
  throw new Error(`flock(2) failed with errno ${errno}`);
}
