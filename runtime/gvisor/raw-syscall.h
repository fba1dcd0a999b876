/*
 * One system call, made directly (no libc): the guest programs of the gvisor tier (seccomp-exec.c,
 * statx-shim.c) are built without libc so that they run in any image. Returns the kernel's answer: the
 * result, or -errno.
 */
#ifndef SESSION_SANDBOX_RAW_SYSCALL_H
#define SESSION_SANDBOX_RAW_SYSCALL_H

static inline long raw_syscall6(long n, long a, long b, long c, long d, long e) {
  long ret;
#if defined(__x86_64__)
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8) : "rcx", "r11", "memory");
#elif defined(__aarch64__)
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4) : "memory");
  ret = x0;
#else
#error "session-sandbox guest programs: only x86_64 and aarch64"
#endif
  return ret;
}

#endif
