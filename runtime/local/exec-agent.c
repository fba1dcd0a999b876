/*
 * The exec agent: a small resident program in each VM of the local tier that runs the manager's commands
 * with a fork/exec in the guest instead of a `crun exec` per command. See exec-agent-client.ts
 * for the host side and docs/exec-agent.md for the protocol and what each side trusts.
 *
 *   vm-exec-agent [--hide-cgroup2 <dir>] --bind <socket path> -- crun run ...   (on the host, as root)
 *   vm-exec-agent --fd 3 -- /run/vm-init -s -- ...                              (in the VM, as its PID 1 before tini)
 *
 * On a hybrid cgroup host it first covers the cgroup2 mount with an empty tmpfs in a private mount namespace
 * of its own (crun 1.8.1 refuses hybrid hosts otherwise; crun.ts), the work of an `unshare` + `sh` + `mount`
 * wrapper, three programs less per boot. On the host it binds the socket in the VM's own directory of the driver's state (which no VM sees) and
 * runs crun with the listener as fd 3, which crun (--preserve-fds) gives the VM's first process: the
 * agent. In the VM it forks the server onto that listener in the background, closes it, and becomes
 * <program>: tini, the VM's init, which reaps the server if it dies. So the VM lives exactly as before, and
 * no process but the server holds the listener. The guest has no path to the socket: it cannot replace it, and nothing it writes lands on the
 * host's disk. Killing the agent only sends the host back to `crun exec`. It runs with the VM's init's credentials, seccomp filter, no_new_privs,
 * empty capabilities and limits, and every command it starts inherits exactly those.
 *
 * One connection is one command, served by its own forked handler:
 *   agent → host  'P' frame: the handler's pid in the guest (it waits; no command exists yet)
 *   host → agent  one byte 'G' once the host moved the handler into the command's own cgroup, so that
 *                 everything it forks is there from its first instruction; the host closing the
 *                 connection instead means: nothing will run. The host may place a handler ahead of
 *                 time, for the next command, and send that command's request later.
 *   host → agent  u32 length, then: u32 argc, u32 envc, cwd\0, argv[i]\0..., env[i]\0...
 *   agent → host  'O'/'E' frames: stdout/stderr chunks, in the order read
 *                 'N' frame: program not found (exit 127); 'F' frame: it could not start (the reason)
 *                 'X' frame: u32 exit code (128 + signal when killed), after the output drained
 * A frame is: one type byte, u32 little-endian payload length, payload. The handler never kills
 * anything: the host ends a command by killing its cgroup, as with `crun exec`.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Same as exec.ts: after the command exits, how long output its background children hold open is read. */
#define DRAIN_AFTER_EXIT_MS 100
#define BLOCKED_WRITE_MS 5
/* Larger than any argv + environment execve takes on Linux (ARG_MAX-like), so nothing valid is refused. */
#define MAX_REQUEST (16u << 20)
#define CHUNK 65536
#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static int write_all(int fd, const void *data, size_t size) {
  const char *p = data;
  while (size > 0) {
    ssize_t n = send(fd, p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    p += n;
    size -= (size_t)n;
  }
  return 0;
}

static int read_all(int fd, void *data, size_t size) {
  char *p = data;
  while (size > 0) {
    ssize_t n = read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    p += n;
    size -= (size_t)n;
  }
  return 0;
}

static int send_frame(int conn, char type, const void *payload, uint32_t size) {
  unsigned char header[5] = {(unsigned char)type, size & 0xff, (size >> 8) & 0xff, (size >> 16) & 0xff, size >> 24};
  if (write_all(conn, header, sizeof header) < 0) return -1;
  return size > 0 ? write_all(conn, payload, size) : 0;
}

static int send_u32(int conn, char type, uint32_t value) {
  unsigned char bytes[4] = {value & 0xff, (value >> 8) & 0xff, (value >> 16) & 0xff, value >> 24};
  return send_frame(conn, type, bytes, sizeof bytes);
}

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

typedef struct {
  char *cwd;
  char **argv;
  char **envp;
} request_t;

/* Splits the request's NUL-terminated strings; refuses anything that does not add up exactly. */
static int parse_request(char *buf, uint32_t size, request_t *req) {
  if (size < 8) return -1;
  uint32_t argc = le32((unsigned char *)buf), envc = le32((unsigned char *)buf + 4);
  if (argc == 0 || argc > size || envc > size) return -1;
  char **strings = calloc((size_t)argc + envc + 3, sizeof(char *));
  if (!strings) return -1;
  char *p = buf + 8, *end = buf + size;
  uint32_t total = 1 + argc + envc;
  for (uint32_t i = 0; i < total; i++) {
    char *nul = memchr(p, 0, (size_t)(end - p));
    if (!nul) return -1;
    strings[i + (i > argc ? 1 : 0)] = p;
    p = nul + 1;
  }
  if (p != end) return -1;
  req->cwd = strings[0];
  req->argv = strings + 1;
  req->argv[argc] = NULL;
  req->envp = strings + argc + 2;
  req->envp[envc] = NULL;
  return 0;
}

static const char *env_value(char **envp, const char *name) {
  size_t len = strlen(name);
  for (char **e = envp; *e; e++) if (strncmp(*e, name, len) == 0 && (*e)[len] == '=') return *e + len + 1;
  return NULL;
}

/* In the forked command: report why it could not start on the status pipe (read by the handler). */
static void report_and_exit(int status_fd, char kind, const char *what, int error) {
  char message[512];
  int n = snprintf(message, sizeof message, "%c%s: %s", kind, what, strerror(error));
  if (n > (int)sizeof message - 1) n = (int)sizeof message - 1;
  if (write(status_fd, message, (size_t)n) < 0) { /* the handler sees the exit code anyway */ }
  _exit(kind == 'N' ? 127 : 126);
}

/* execvpe's search, with PATH from the command's own environment (as `crun exec` does). */
static void exec_program(request_t *req, int status_fd) {
  const char *program = req->argv[0];
  if (strchr(program, '/')) {
    execve(program, req->argv, req->envp);
    report_and_exit(status_fd, errno == ENOENT ? 'N' : 'F', program, errno);
  }
  const char *path = env_value(req->envp, "PATH");
  if (!path) path = DEFAULT_PATH;
  int denied = 0;
  char candidate[4096];
  for (const char *dir = path;; dir = strchr(dir, ':') + 1) {
    const char *colon = strchr(dir, ':');
    size_t dir_len = colon ? (size_t)(colon - dir) : strlen(dir);
    int n = snprintf(candidate, sizeof candidate, "%.*s%s%s", (int)dir_len, dir, dir_len ? "/" : "", program);
    if (n > 0 && n < (int)sizeof candidate) {
      execve(candidate, req->argv, req->envp);
      if (errno == EACCES) denied = 1;
    }
    if (!colon) break;
  }
  if (denied) report_and_exit(status_fd, 'F', program, EACCES);
  report_and_exit(status_fd, 'N', program, ENOENT);
}

/* The command's own process: a session of its own, default signals, stdin from /dev/null. */
static void run_command(request_t *req, int out_fd, int err_fd, int status_fd) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  for (int sig = 1; sig < NSIG; sig++) signal(sig, SIG_DFL);
  setsid();
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) _exit(126);
  if (chdir(req->cwd) < 0) {
    char what[4200];
    snprintf(what, sizeof what, "chdir to cwd (\"%s\") set in config.json failed", req->cwd);
    report_and_exit(status_fd, 'F', what, errno);
  }
  exec_program(req, status_fd);
}

/* Copies one readable pipe to the connection as a frame; returns 0 at EOF (the pipe is closed). */
static int forward(int *fd, char type, int conn, char *buf) {
  ssize_t n = read(*fd, buf, CHUNK);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return 1;
  if (n <= 0) {
    close(*fd);
    *fd = -1;
    return 0;
  }
  if (send_frame(conn, type, buf, (uint32_t)n) < 0) _exit(0); /* the host went away: it kills the command */
  return 1;
}

static void handle(int conn) {
  /* Placed first: the host moves this process into the command's cgroup, then says go. */
  char go_byte;
  if (send_u32(conn, 'P', (uint32_t)getpid()) < 0 || read_all(conn, &go_byte, 1) < 0 || go_byte != 'G') return;

  unsigned char header[4];
  if (read_all(conn, header, 4) < 0) return;
  uint32_t size = le32(header);
  if (size > MAX_REQUEST) return;
  char *buf = malloc(size + 1);
  request_t req;
  if (!buf || read_all(conn, buf, size) < 0 || parse_request(buf, size, &req) < 0) return;

  int out[2], err[2], status[2];
  pid_t child = -1;
  if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 || pipe2(status, O_CLOEXEC) < 0 || (child = fork()) < 0) {
    /* At the VM's pids or memory limit, say so: the host reports it as the reason nothing ran. */
    char message[200];
    int n = snprintf(message, sizeof message, "the command could not be started in the VM: %s", strerror(errno));
    send_frame(conn, 'F', message, (uint32_t)n);
    return;
  }
  if (child == 0) run_command(&req, out[1], err[1], status[1]);
  close(out[1]);
  close(err[1]);
  close(status[1]);

  /* The status pipe closes on a successful execve; anything written to it says why the start failed. */
  char why[600];
  ssize_t why_len = 0, n;
  while ((n = read(status[0], why + why_len, sizeof why - 1 - (size_t)why_len)) > 0 || (n < 0 && errno == EINTR)) if (n > 0) why_len += n;
  close(status[0]);
  if (why_len > 0) {
    waitpid(child, NULL, 0);
    send_frame(conn, why[0], why + 1, (uint32_t)(why_len - 1));
    return;
  }

  int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
  char *chunk = malloc(CHUNK);
  if (!chunk) return;
  int out_fd = out[0], err_fd = err[0], exited = pidfd < 0, code = 0;
  long deadline = 0;
  if (exited) { /* no pidfd (old kernel): wait for the exit, then drain */
    int wstatus;
    while (waitpid(child, &wstatus, 0) < 0 && errno == EINTR) {}
    code = WIFSIGNALED(wstatus) ? 128 + WTERMSIG(wstatus) : WEXITSTATUS(wstatus);
    deadline = now_ms() + DRAIN_AFTER_EXIT_MS;
  }
  for (;;) {
    if (exited && ((out_fd < 0 && err_fd < 0) || now_ms() >= deadline)) break;
    struct pollfd fds[4] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}, {exited ? -1 : pidfd, POLLIN, 0}, {conn, POLLIN, 0}};
    int timeout = exited ? (int)(deadline - now_ms()) : -1;
    if (poll(fds, 4, timeout < 0 && exited ? 0 : timeout) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    /* A host that reads slowly blocks the frame writes (backpressure). The drain after the exit counts only
     * time the host was ready for more, so a paused command's tail is sent once the host wants it. A write
     * to a ready host takes microseconds: only one that blocked for BLOCKED_WRITE_MS or more was a pause. */
    long before = now_ms();
    if (fds[0].revents) forward(&out_fd, 'O', conn, chunk);
    if (fds[1].revents) forward(&err_fd, 'E', conn, chunk);
    long blocked = now_ms() - before;
    if (exited && blocked >= BLOCKED_WRITE_MS) deadline += blocked;
    if (fds[3].revents) {
      char ignored;
      if (recv(conn, &ignored, 1, MSG_DONTWAIT) == 0 || (fds[3].revents & (POLLHUP | POLLERR))) return; /* the host gave up */
    }
    if (fds[2].revents) {
      int wstatus;
      if (waitpid(child, &wstatus, WNOHANG) == child) {
        code = WIFSIGNALED(wstatus) ? 128 + WTERMSIG(wstatus) : WEXITSTATUS(wstatus);
        exited = 1;
        deadline = now_ms() + DRAIN_AFTER_EXIT_MS;
      }
    }
  }
  send_u32(conn, 'X', (uint32_t)code);
}

static void serve(int listener) {
  signal(SIGCHLD, SIG_IGN); /* handlers are reaped by the kernel */
  for (;;) {
    int conn = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
    if (conn < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOMEM) { usleep(10000); continue; }
      _exit(1);
    }
    pid_t handler = fork();
    if (handler == 0) {
      signal(SIGCHLD, SIG_DFL); /* the handler waits for its command */
      close(listener);
      handle(conn);
      _exit(0);
    }
    close(conn);
  }
}

/* Binds and listens on `path` (replacing what is there): the host side, as root, before the VM starts. */
static int listen_on(const char *path) {
  struct sockaddr_un address = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof address.sun_path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  strcpy(address.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  unlink(path);
  if (bind(fd, (struct sockaddr *)&address, sizeof address) < 0 || chmod(path, 0600) < 0 || listen(fd, 64) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* A listening Unix stream socket, as the VM's init got it from crun. */
static int is_listener(int fd) {
  int type = 0, listening = 0;
  socklen_t size = sizeof type;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) < 0 || type != SOCK_STREAM) return 0;
  size = sizeof listening;
  return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) == 0 && listening;
}

static int usage(void) {
  fprintf(stderr, "usage: vm-exec-agent [--hide-cgroup2 <dir>] --bind <socket path> -- <program> [args...]\n"
                  "           (host: listen, then run the program with it as fd 3; first cover <dir> with an empty tmpfs in a private mount namespace)\n"
                  "       vm-exec-agent --fd <n> -- <program> [args...]   (VM: serve on fd n in the background, become the program)\n");
  return 2;
}

/*
 * Host side: the socket lives in a directory of the host's that no VM sees; crun hands it to the VM.
 * Errors before the program runs go to stderr (the driver reads it when the boot fails); the program
 * itself (crun) gets /dev/null as stderr, because the VM's first process inherits crun's stdio and a pipe
 * would stay open for the VM's whole life. crun reports through its --log file.
 */
static int run_on_host(const char *hide, const char *socket_path, char **program) {
  if (hide && (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
               mount("session-sandbox-hide", hide, "tmpfs", 0, NULL) < 0)) {
    fprintf(stderr, "vm-exec-agent: cannot cover %s with an empty tmpfs in a private mount namespace: %s\n", hide, strerror(errno));
    return 125;
  }
  int listener = listen_on(socket_path);
  if (listener < 0) {
    /* The VM still boots: its agent finds no listener on fd 3, and commands go through crun exec. */
    fprintf(stderr, "vm-exec-agent: cannot listen on %s: %s\n", socket_path, strerror(errno));
    listener = open("/dev/null", O_RDONLY);
    if (listener < 0) return 1;
  }
  if (listener != 3 && (dup2(listener, 3) < 0 || close(listener) < 0)) return 1;
  /* Kept (close-on-exec) only to report a failed exec. */
  int report = fcntl(2, F_DUPFD_CLOEXEC, 4);
  int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (report < 0 || null < 0 || dup2(null, 2) < 0) return 1;
  execvp(program[0], program);
  dprintf(report, "vm-exec-agent: cannot run %s: %s\n", program[0], strerror(errno));
  return 127;
}

int main(int argc, char **argv) {
  int mode = 1; /* where --bind or --fd is */
  const char *hide = NULL;
  if (argc > 2 && strcmp(argv[1], "--hide-cgroup2") == 0) {
    hide = argv[2];
    mode = 3;
  }
  if (argc - mode < 4 || strcmp(argv[mode + 2], "--") != 0) return usage();
  char **program = argv + mode + 3;
  if (strcmp(argv[mode], "--bind") == 0) return run_on_host(hide, argv[mode + 1], program);
  if (hide || strcmp(argv[mode], "--fd") != 0) return usage();

  /* VM side. Only stdio and the listener are meant to reach the VM's processes. */
  int listener = atoi(argv[mode + 1]);
  if (listener < 3) return usage();
  syscall(SYS_close_range, 3, (unsigned)listener - 1, 0);
  syscall(SYS_close_range, (unsigned)listener + 1, ~0U, 0);
  if (!is_listener(listener)) {
    /* Booted without it (the host could not build or bind it): commands go through crun exec. */
    close(listener);
  } else {
    fcntl(listener, F_SETFD, FD_CLOEXEC);
    pid_t first = fork();
    if (first == 0) {
      if (fork() == 0) {
        setsid();
        serve(listener);
      }
      _exit(0);
    }
    if (first > 0) waitpid(first, NULL, 0);
    close(listener);
  }
  execvp(program[0], program);
  perror("vm-exec-agent: exec");
  return 127;
}
