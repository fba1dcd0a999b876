/* Byte buffers, full writes and the one refusal path. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "helper.h"

static void grow(buf_t *b, size_t need) {
  if (b->len + need + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + need + 1) cap *= 2;
  char *data = realloc(b->data, cap);
  if (!data) refuse("out of memory");
  b->data = data;
  b->cap = cap;
}

void buf_put(buf_t *b, const void *p, size_t n) {
  grow(b, n);
  if (n) memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = 0; /* always a C string too */
}

void buf_puts(buf_t *b, const char *s) { buf_put(b, s, strlen(s)); }

void buf_printf(buf_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  grow(b, (size_t)n);
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void buf_drop(buf_t *b, size_t n) {
  if (n >= b->len) n = b->len;
  memmove(b->data, b->data + n, b->len - n);
  b->len -= n;
  if (b->data) b->data[b->len] = 0;
}

int write_all(int fd, const void *p, size_t n) {
  const char *at = p;
  while (n > 0) {
    ssize_t w = write(fd, at, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    at += w;
    n -= (size_t)w;
  }
  return 0;
}

void refuse(const char *fmt, ...) {
  /* A fixed buffer: refuse is also the out-of-memory path. */
  static char line[16384];
  int at = snprintf(line, sizeof line, "session-sandbox: not run: ");
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line + at, sizeof line - (size_t)at - 1, fmt, ap);
  va_end(ap);
  at += n < 0 ? 0 : n >= (int)(sizeof line - (size_t)at - 1) ? (int)(sizeof line - (size_t)at - 2) : n;
  line[at++] = '\n';
  write_all(2, line, (size_t)at);
  _exit(REFUSED);
}
