/* A minimal HTTP/1.1 client for the manager's API: one request per connection (Connection: close),
 * a deadline over connect, send and the whole answer (the SDK's per-call timeout), chunked or
 * Content-Length or close-delimited bodies. Plain HTTP only: the manager listens on loopback. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "helper.h"

#define MAX_HEADER_BYTES (64 * 1024)

long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void unreachable(const config_t *c, failure_t *f, const char *why) {
  f->unreachable = 1;
  f->message.len = 0;
  buf_printf(&f->message, "cannot reach the manager at %s: %s", c->url, why);
}

/* Waits for fd to be ready for `events` until the deadline: 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, long long deadline) {
  for (;;) {
    int timeout = -1;
    if (deadline >= 0) {
      long long left = deadline - now_ms();
      if (left <= 0) return 0;
      timeout = left > 1000000 ? 1000000 : (int)left;
    }
    struct pollfd p = {.fd = fd, .events = events};
    int r = poll(&p, 1, timeout);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r > 0) return 1;
  }
}

/* Connects to the manager (each address in turn) before the deadline; -1 with f set. */
static int connect_manager(const config_t *c, long long deadline, failure_t *f) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
  struct addrinfo *found = NULL;
  int rc = getaddrinfo(c->host, c->port, &hints, &found);
  if (rc != 0) {
    unreachable(c, f, gai_strerror(rc));
    return -1;
  }
  int last = ECONNREFUSED, timed_out = 0;
  for (struct addrinfo *a = found; a; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      last = errno;
      continue;
    }
    int r = connect(fd, a->ai_addr, a->ai_addrlen);
    if (r < 0 && errno == EINPROGRESS) {
      int ready = wait_fd(fd, POLLOUT, deadline);
      socklen_t len = sizeof last;
      if (ready == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &last, &len) == 0 && last == 0) r = 0;
      if (ready == 0) timed_out = 1;
    } else if (r < 0) last = errno;
    if (r == 0) {
      freeaddrinfo(found);
      return fd;
    }
    close(fd);
    if (timed_out) break;
  }
  freeaddrinfo(found);
  if (timed_out) unreachable(c, f, "The operation timed out.");
  else {
    char why[256];
    snprintf(why, sizeof why, "Unable to connect (%s%s)", last == ECONNREFUSED ? "ECONNREFUSED: " : "", strerror(last));
    unreachable(c, f, why);
  }
  return -1;
}

static int send_all(int fd, const char *p, size_t n, long long deadline) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (wait_fd(fd, POLLOUT, deadline) != 1) return -1;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Reads what the socket has into h->in: >0 read, 0 closed, -1 timed out or failed (f set). */
static ssize_t fill(http_t *h, const config_t *c, failure_t *f) {
  for (;;) {
    int ready = wait_fd(h->fd, POLLIN, h->deadline);
    if (ready == 0) {
      unreachable(c, f, "The operation timed out.");
      return -1;
    }
    char chunk[65536];
    ssize_t n = ready < 0 ? -1 : read(h->fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) {
      unreachable(c, f, strerror(errno));
      return -1;
    }
    buf_put(&h->in, chunk, (size_t)n);
    return n;
  }
}

static const char *header_value(const char *headers, const char *name) {
  size_t n = strlen(name);
  for (const char *line = strstr(headers, "\r\n"); line; line = strstr(line + 2, "\r\n")) {
    const char *at = line + 2;
    if (strncasecmp(at, name, n) == 0 && at[n] == ':') {
      at += n + 1;
      while (*at == ' ' || *at == '\t') at++;
      return at;
    }
  }
  return NULL;
}

static const config_t *current; /* the config of the open exchange, for failure messages */

int http_request(const config_t *c, const char *method, const char *path, const char *body, long long deadline, http_t *h, failure_t *f) {
  memset(h, 0, sizeof *h);
  h->fd = -1;
  h->deadline = deadline;
  current = c;
  for (const char *t = c->token; *t; t++) {
    if ((unsigned char)*t < 0x20 || *t == 0x7f) refuse("the manager token has control characters, so it cannot be sent in a header");
  }
  h->fd = connect_manager(c, deadline, f);
  if (h->fd < 0) return -1;
  buf_t req = {0};
  buf_printf(&req, "%s %s%s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: application/json\r\nConnection: close\r\n", method, c->path_prefix, path, c->host_header, c->token);
  if (body) buf_printf(&req, "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s", strlen(body), body);
  else buf_puts(&req, "\r\n");
  int sent = send_all(h->fd, req.data, req.len, deadline);
  free(req.data);
  if (sent < 0) {
    unreachable(c, f, errno == 0 || errno == EAGAIN ? "The operation timed out." : strerror(errno));
    return -1;
  }
  char *end;
  while (!(end = h->in.len ? memmem(h->in.data, h->in.len, "\r\n\r\n", 4) : NULL)) {
    if (h->in.len > MAX_HEADER_BYTES) {
      unreachable(c, f, "the answer's headers are too long");
      return -1;
    }
    ssize_t n = fill(h, c, f);
    if (n < 0) return -1;
    if (n == 0) {
      unreachable(c, f, "the connection closed before an answer");
      return -1;
    }
  }
  size_t head = (size_t)(end - h->in.data) + 4;
  end[2] = 0; /* the header block as a C string, ending in its last line's \r\n */
  int major, minor;
  if (sscanf(h->in.data, "HTTP/%d.%d %d", &major, &minor, &h->status) != 3) {
    unreachable(c, f, "the answer is not HTTP");
    return -1;
  }
  const char *te = header_value(h->in.data, "transfer-encoding");
  const char *cl = header_value(h->in.data, "content-length");
  h->remaining = -1;
  if (te && strncasecmp(te, "chunked", 7) == 0) {
    h->chunked = 1;
    h->remaining = 0;
  } else if (cl) h->remaining = strtoll(cl, NULL, 10);
  buf_drop(&h->in, head);
  if (!h->chunked && h->remaining == 0) h->done = 1;
  return 0;
}

/* Parses the next chunk-size line out of h->in: 1 parsed, 0 needs more input, -1 malformed. */
static int chunk_size(http_t *h) {
  char *eol = h->in.len ? memmem(h->in.data, h->in.len, "\r\n", 2) : NULL;
  if (!eol) return h->in.len > 1024 ? -1 : 0;
  char *end;
  long long size = strtoll(h->in.data, &end, 16);
  if (end == h->in.data || size < 0) return -1;
  buf_drop(&h->in, (size_t)(eol - h->in.data) + 2);
  if (size == 0) h->done = 1; /* trailers ignored: the connection closes */
  h->remaining = size;
  return 1;
}

ssize_t http_body(http_t *h, buf_t *out, failure_t *f) {
  for (;;) {
    if (h->done) return 0;
    if (h->chunked && h->need_crlf) {
      if (h->in.len >= 2) {
        if (memcmp(h->in.data, "\r\n", 2) != 0) goto malformed;
        buf_drop(&h->in, 2);
        h->need_crlf = 0;
        continue;
      }
    } else if (h->chunked && h->remaining == 0) {
      int r = chunk_size(h);
      if (r < 0) goto malformed;
      if (r > 0) continue;
    } else if (h->in.len > 0) {
      size_t take = h->remaining < 0 || (long long)h->in.len < h->remaining ? h->in.len : (size_t)h->remaining;
      buf_put(out, h->in.data, take);
      buf_drop(&h->in, take);
      if (h->remaining >= 0) {
        h->remaining -= (long long)take;
        if (h->remaining == 0) {
          if (h->chunked) h->need_crlf = 1;
          else h->done = 1;
        }
      }
      return (ssize_t)take;
    }
    ssize_t n = fill(h, current, f);
    if (n < 0) return -1;
    if (n == 0) {
      if (!h->chunked && h->remaining < 0) {
        h->done = 1;
        return 0;
      }
      unreachable(current, f, "the connection closed in the middle of the answer");
      return -1;
    }
  }
malformed:
  unreachable(current, f, "the answer's chunked body is malformed");
  return -1;
}

int http_body_all(http_t *h, buf_t *out, failure_t *f) {
  for (;;) {
    ssize_t n = http_body(h, out, f);
    if (n < 0) return -1;
    if (n == 0) return 0;
  }
}
