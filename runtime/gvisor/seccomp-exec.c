/*
 * The first program of every process runsc starts in a gVisor VM (its init and each command): installs
 * the VM's seccomp filter, then executes the command in its place. runsc 0.0~20221219 applies an OCI
 * seccomp profile to the container's init only, never to `runsc exec` processes; a filter installed here
 * is inherited by everything the command starts and cannot be removed, so every guest process runs under
 * the same filter as on the local tier (runtime/local/seccomp-profile.ts): no setuid bits, no nested user
 * namespaces, none of the denied calls — checked by gVisor's Sentry before it serves a call.
 *
 * Usage: seccomp-exec FILTER COMMAND [ARG...]. FILTER holds the classic BPF program (struct sock_filter
 * records). COMMAND without a slash is searched in PATH, as execvp does; exit 127 when it is not found,
 * 126 when it cannot be executed. Built without libc (gcc -static -nostdlib), so it runs in any image.
 */
#include "raw-syscall.h"

#define SYS_read_nr 0
#define SYS_write_nr 1
#define SYS_open_nr 2
#define SYS_close_nr 3
#define SYS_execve_nr 59
#define SYS_exit_nr 60
#define SYS_prctl_nr 157
#if defined(__aarch64__)
#undef SYS_read_nr
#undef SYS_write_nr
#undef SYS_close_nr
#undef SYS_execve_nr
#undef SYS_exit_nr
#undef SYS_prctl_nr
#define SYS_read_nr 63
#define SYS_write_nr 64
#define SYS_openat_nr 56
#define SYS_close_nr 57
#define SYS_execve_nr 221
#define SYS_exit_nr 93
#define SYS_prctl_nr 167
#endif

#define PR_SET_NO_NEW_PRIVS 38
#define PR_SET_SECCOMP 22
#define SECCOMP_MODE_FILTER 2
#define ENOENT 2
#define EACCES 13
#define MAX_FILTER_BYTES (4096 * 8)
#define MAX_PATH 4096

struct sock_fprog {
  unsigned short len;
  const void *filter;
};

static unsigned long length(const char *s) {
  unsigned long n = 0;
  while (s[n]) n++;
  return n;
}

static void say(const char *a, const char *b) {
  raw_syscall6(SYS_write_nr, 2, (long)"seccomp-exec: ", 14, 0, 0);
  raw_syscall6(SYS_write_nr, 2, (long)a, (long)length(a), 0, 0);
  raw_syscall6(SYS_write_nr, 2, (long)b, (long)length(b), 0, 0);
  raw_syscall6(SYS_write_nr, 2, (long)"\n", 1, 0, 0);
}

static __attribute__((noreturn)) void leave(int code) {
  for (;;) raw_syscall6(SYS_exit_nr, code, 0, 0, 0, 0);
}

static long open_read(const char *path) {
#if defined(__aarch64__)
  return raw_syscall6(SYS_openat_nr, -100, (long)path, 0, 0, 0);
#else
  return raw_syscall6(SYS_open_nr, (long)path, 0, 0, 0, 0);
#endif
}

static char filter[MAX_FILTER_BYTES];
static char candidate[MAX_PATH];

/** Tries PATH's directories in order, like execvp: returns only when every one failed (the errno to report). */
static long exec_in_path(const char *name, char **argv, char **envp) {
  const char *path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (char **e = envp; *e; e++) {
    const char *v = *e;
    if (v[0] == 'P' && v[1] == 'A' && v[2] == 'T' && v[3] == 'H' && v[4] == '=') path = v + 5;
  }
  long result = -ENOENT;
  unsigned long name_len = length(name);
  while (*path) {
    unsigned long dir_len = 0;
    while (path[dir_len] && path[dir_len] != ':') dir_len++;
    if (dir_len + 1 + name_len + 1 <= MAX_PATH) {
      unsigned long n = 0;
      for (unsigned long i = 0; i < dir_len; i++) candidate[n++] = path[i];
      if (dir_len == 0) candidate[n++] = '.';
      candidate[n++] = '/';
      for (unsigned long i = 0; i <= name_len; i++) candidate[n++] = name[i];
      long r = raw_syscall6(SYS_execve_nr, (long)candidate, (long)argv, (long)envp, 0, 0);
      if (r == -EACCES) result = r;
    }
    path += dir_len;
    if (*path == ':') path++;
  }
  return result;
}

__attribute__((used)) void start(long *sp) {
  long argc = sp[0];
  char **argv = (char **)(sp + 1);
  char **envp = argv + argc + 1;
  if (argc < 3) {
    say("usage: seccomp-exec FILTER COMMAND [ARG...]", "");
    leave(125);
  }
  long fd = open_read(argv[1]);
  if (fd < 0) {
    say("cannot open the filter ", argv[1]);
    leave(125);
  }
  long size = 0;
  for (;;) {
    long n = raw_syscall6(SYS_read_nr, fd, (long)(filter + size), MAX_FILTER_BYTES - size, 0, 0);
    if (n <= 0) break;
    size += n;
  }
  raw_syscall6(SYS_close_nr, fd, 0, 0, 0, 0);
  struct sock_fprog program = {(unsigned short)(size / 8), filter};
  if (size == 0 || size % 8 != 0 || raw_syscall6(SYS_prctl_nr, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      raw_syscall6(SYS_prctl_nr, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, (long)&program, 0, 0) != 0) {
    say("the seccomp filter could not be installed: ", argv[1]);
    leave(125);
  }
  char **command = argv + 2;
  long error;
  int has_slash = 0;
  for (const char *c = command[0]; *c; c++) has_slash |= *c == '/';
  if (has_slash) error = raw_syscall6(SYS_execve_nr, (long)command[0], (long)command, (long)envp, 0, 0);
  else error = exec_in_path(command[0], command, envp);
  say(command[0], error == -ENOENT ? ": not found" : ": cannot execute");
  leave(error == -ENOENT ? 127 : 126);
}

#if defined(__x86_64__)
__asm__(".globl _start\n_start:\n  xor %rbp, %rbp\n  mov %rsp, %rdi\n  and $-16, %rsp\n  call start\n  hlt\n");
#elif defined(__aarch64__)
__asm__(".globl _start\n_start:\n  mov x29, #0\n  mov x0, sp\n  bl start\n");
#endif
