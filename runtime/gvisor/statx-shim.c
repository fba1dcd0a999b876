/*
 * Preloaded (LD_PRELOAD) into every process of a gVisor VM. runsc 0.0~20221219 (Debian 12) answers
 * statx(2) and fstatat(2) with EINVAL when the flags hold AT_NO_AUTOMOUNT, which coreutils 9 passes on
 * every call: `ls` and `stat` fail on every path. This statx drops that flag (it means nothing in
 * gVisor, which has no automounts) and makes the raw system call itself.
 *
 * Built without libc (gcc -nostdlib -shared), so it loads into glibc and musl programs alike; the one
 * symbol it takes from the program's libc is __errno_location, which both export.
 */
#include "raw-syscall.h"

#define AT_NO_AUTOMOUNT 0x800

int *__errno_location(void);

#if defined(__x86_64__)
#define SYS_STATX 332
#elif defined(__aarch64__)
#define SYS_STATX 291
#endif

int statx(int dirfd, const char *path, int flags, unsigned int mask, void *buf) {
  long ret = raw_syscall6(SYS_STATX, dirfd, (long)path, flags & ~AT_NO_AUTOMOUNT, mask, (long)buf);
  if (ret < 0 && ret > -4096) {
    *__errno_location() = (int)-ret;
    return -1;
  }
  return (int)ret;
}
