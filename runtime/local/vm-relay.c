/*
 * The VM's relay: the two byte pipes every embedded VM needs, in one static program of ours bound read-only
 * into every VM (vm-relay-binary.ts), so that an image needs no socat of its own: an image pulled from a
 * registry (node:20, python:3.12) or built from a Dockerfile reaches the network and serves forwarded ports
 * as a built-in image does.
 *
 *   vm-relay listen <port> <unix socket>   the egress forwarder, beside the VM's init: accepts on
 *                                          127.0.0.1:<port> and joins each connection to the host proxy's
 *                                          socket (mounted into the VM), one forked process per connection
 *   vm-relay connect <ip literal> <port>   a forwarded port's relay, run as a command: joins its stdin and
 *                                          stdout to a TCP connection on the guest's own loopback
 *
 * It runs with the VM's credentials, seccomp filter and limits, like any guest process, and trusts nothing
 * it reads: bytes are copied, never parsed. Exit codes of `connect`: 0 after both directions ended, 1 when
 * the connection could not be made (the reason on stderr), 2 for a usage error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define CHUNK 65536

static int write_all(int fd, const char *data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    data += n;
    size -= (size_t)n;
  }
  return 0;
}

/* No more bytes go to `fd`: a socket's peer reads end of file, and its other direction stays open. */
static void end_writes(int fd) {
  if (shutdown(fd, SHUT_WR) < 0) close(fd);
}

/*
 * Copies a_in → b_out and b_in → a_out until both directions reached end of file (or an error ends them).
 * Blocking writes hold the other side back: a slow reader paces the writer, nothing is buffered past CHUNK.
 */
static void pump(int a_in, int a_out, int b_in, int b_out) {
  static char buf[CHUNK];
  int a_open = 1, b_open = 1;
  while (a_open || b_open) {
    struct pollfd fds[2] = {{.fd = a_open ? a_in : -1, .events = POLLIN}, {.fd = b_open ? b_in : -1, .events = POLLIN}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (int i = 0; i < 2; i++) {
      if (!fds[i].revents) continue;
      int in = i == 0 ? a_in : b_in, out = i == 0 ? b_out : a_out;
      ssize_t n = read(in, buf, sizeof buf);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n > 0 && write_all(out, buf, (size_t)n) == 0) continue;
      /* End of file, a read error or a peer that stopped reading: this direction is over. */
      end_writes(out);
      if (i == 0) a_open = 0;
      else b_open = 0;
    }
  }
}

static int parse_port(const char *text) {
  char *end;
  long port = strtol(text, &end, 10);
  return *text && !*end && port > 0 && port < 65536 ? (int)port : -1;
}

static int serve_listen(int port, const char *socket_path) {
  struct sockaddr_un target = {.sun_family = AF_UNIX};
  if (strlen(socket_path) >= sizeof target.sun_path) {
    fprintf(stderr, "vm-relay: socket path too long: %s\n", socket_path);
    return 2;
  }
  strcpy(target.sun_path, socket_path);
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int yes = 1;
  struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (listener < 0 || setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes) < 0 ||
      bind(listener, (struct sockaddr *)&address, sizeof address) < 0 || listen(listener, 128) < 0) {
    fprintf(stderr, "vm-relay: cannot listen on 127.0.0.1:%d: %s\n", port, strerror(errno));
    return 1;
  }
  /* Each connection's process is reaped by the kernel: the forwarder never waits on one. */
  signal(SIGCHLD, SIG_IGN);
  for (;;) {
    int client = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        /* Out of descriptors or memory for a moment: the next accept may succeed. */
        if (errno != EINTR && errno != ECONNABORTED) usleep(10000);
        continue;
      }
      fprintf(stderr, "vm-relay: accept failed: %s\n", strerror(errno));
      return 1;
    }
    pid_t child = fork();
    if (child == 0) {
      close(listener);
      int upstream = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (upstream < 0 || connect(upstream, (struct sockaddr *)&target, sizeof target) < 0) _exit(1);
      pump(client, client, upstream, upstream);
      _exit(0);
    }
    /* A failed fork drops this one connection; the client sees it closed. */
    close(client);
  }
}

static int serve_connect(const char *host, int port) {
  struct sockaddr_storage storage = {0};
  socklen_t size;
  struct sockaddr_in *v4 = (struct sockaddr_in *)&storage;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&storage;
  if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons((uint16_t)port);
    size = sizeof *v4;
  } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons((uint16_t)port);
    size = sizeof *v6;
  } else {
    fprintf(stderr, "vm-relay: not an IP address: %s\n", host);
    return 2;
  }
  int sock = socket(storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sock < 0 || connect(sock, (struct sockaddr *)&storage, size) < 0) {
    fprintf(stderr, "vm-relay: cannot connect to %s port %d: %s\n", host, port, strerror(errno));
    return 1;
  }
  /* A client gone away must end this process, not kill it mid-write with SIGPIPE before it closes cleanly. */
  signal(SIGPIPE, SIG_IGN);
  pump(STDIN_FILENO, STDOUT_FILENO, sock, sock);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "listen") == 0 && parse_port(argv[2]) > 0) {
    signal(SIGPIPE, SIG_IGN);
    return serve_listen(parse_port(argv[2]), argv[3]);
  }
  if (argc == 4 && strcmp(argv[1], "connect") == 0 && parse_port(argv[3]) > 0) return serve_connect(argv[2], parse_port(argv[3]));
  fprintf(stderr, "usage: vm-relay listen <port> <unix socket> | vm-relay connect <ip> <port>\n");
  return 2;
}
