/*
 * Preloaded (LD_PRELOAD) into every process of a gVisor VM. runsc 0.0~20221219 (Debian 12) answers
 * statx(2) and fstatat(2) with EINVAL when the flags hold AT_NO_AUTOMOUNT, which coreutils 9 passes on
 * every call: `ls` and `stat` fail on every path. This statx drops that flag (it means nothing in
 * gVisor, which has no automounts) and makes the raw system call itself.
 *
 * Built without libc (gcc -nostdlib -shared), so it loads into glibc and musl programs alike; the one
 * symbol it takes from the program's libc is __errno_location, which both export.
 */
#define AT_NO_AUTOMOUNT 0x800

int *__errno_location(void);

static long raw_statx(long dirfd, long path, long flags, long mask, long buf) {
  long ret;
#if defined(__x86_64__)
  register long r10 __asm__("r10") = mask;
  register long r8 __asm__("r8") = buf;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(332L), "D"(dirfd), "S"(path), "d"(flags), "r"(r10), "r"(r8) : "rcx", "r11", "memory");
#elif defined(__aarch64__)
  register long x8 __asm__("x8") = 291;
  register long x0 __asm__("x0") = dirfd;
  register long x1 __asm__("x1") = path;
  register long x2 __asm__("x2") = flags;
  register long x3 __asm__("x3") = mask;
  register long x4 __asm__("x4") = buf;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4) : "memory");
  ret = x0;
#else
#error "statx-shim: only x86_64 and aarch64"
#endif
  return ret;
}

int statx(int dirfd, const char *path, int flags, unsigned int mask, void *buf) {
  long ret = raw_statx(dirfd, (long)path, flags & ~AT_NO_AUTOMOUNT, mask, (long)buf);
  if (ret < 0 && ret > -4096) {
    *__errno_location() = (int)-ret;
    return -1;
  }
  return (int)ret;
}
