/* Where the manager is and how to reach it: the environment, read by the same rules as plugin/config.ts
 * (the shim gets no plugin options: the shell.env hook puts them in the environment). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "helper.h"

#define DEFAULT_URL "http://127.0.0.1:7878"
#define DEFAULT_TIMEOUT_MS 10000

static const char *nonempty(const char *name) {
  const char *value = getenv(name);
  return value && *value ? value : NULL;
}

static char *dup_n(const char *s, size_t n) {
  buf_t b = {0};
  buf_put(&b, s, n);
  return b.data;
}

/* Node's error code names for what readFileSync reports here (the message quotes them). */
static char *dup_s(const char *s) { return dup_n(s, strlen(s)); }

static const char *errno_code(int e) {
  switch (e) {
    case ENOENT: return "ENOENT";
    case EACCES: return "EACCES";
    case EISDIR: return "EISDIR";
    case ENOTDIR: return "ENOTDIR";
    case ELOOP: return "ELOOP";
    case EPERM: return "EPERM";
    case EIO: return "EIO";
    default: return strerror(e);
  }
}

static int is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v'; }

/* The token file's content, trimmed; NULL with errno set when it cannot be read. */
static char *read_token(const char *file) {
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  buf_t b = {0};
  char chunk[4096];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      close(fd);
      errno = e;
      return NULL;
    }
    if (n == 0) break;
    buf_put(&b, chunk, (size_t)n);
  }
  close(fd);
  buf_put(&b, "", 0);
  size_t start = 0, end = b.len;
  while (start < end && is_space(b.data[start])) start++;
  while (end > start && is_space(b.data[end - 1])) end--;
  return dup_n(b.data + start, end - start);
}

/* <data dir>/api-token, the data dir resolved as the manager does. */
static char *default_token_file(void) {
  buf_t b = {0};
  const char *data = nonempty("SANDBOX_DATA_DIR");
  if (data) buf_printf(&b, "%s/api-token", data);
  else if (nonempty("XDG_STATE_HOME")) buf_printf(&b, "%s/session-sandbox/api-token", getenv("XDG_STATE_HOME"));
  else {
    const char *home = nonempty("HOME");
    buf_printf(&b, "%s/.local/state/session-sandbox/api-token", home ? home : "");
  }
  return b.data;
}

/* http://host[:port][/path]; anything else is named in url_problem (the helper speaks plain HTTP only). */
static void parse_url(config_t *c) {
  const char *url = c->url;
  if (strncmp(url, "http://", 7) != 0) {
    buf_t why = {0};
    buf_printf(&why, "the shim's helper speaks plain HTTP to the manager and SANDBOX_URL is %s; set SANDBOX_SHIM=bun to use the Bun shim for this URL", url);
    c->url_problem = why.data;
    return;
  }
  const char *authority = url + 7;
  size_t alen = strcspn(authority, "/?#");
  c->host_header = dup_n(authority, alen);
  c->path_prefix = dup_s(authority + alen);
  if (strchr(c->host_header, '@') || alen == 0) {
    c->url_problem = dup_s("SANDBOX_URL has no host (or has credentials in it), so the manager cannot be reached");
    return;
  }
  const char *hp = c->host_header;
  const char *port = NULL;
  if (hp[0] == '[') {
    const char *close = strchr(hp, ']');
    if (!close) {
      c->url_problem = dup_s("SANDBOX_URL has a malformed IPv6 host");
      return;
    }
    c->host = dup_n(hp + 1, (size_t)(close - hp - 1));
    if (close[1] == ':') port = close + 2;
  } else {
    const char *colon = strrchr(hp, ':');
    c->host = dup_n(hp, colon ? (size_t)(colon - hp) : strlen(hp));
    if (colon) port = colon + 1;
  }
  c->port = dup_s(port && *port ? port : "80");
}

/* SANDBOX_URL, else http://SANDBOX_HOST:SANDBOX_PORT (127.0.0.1:7878; a wildcard host means loopback), as
 * sdk/connection.ts resolves it; an empty value counts as unset. NULL in *problem when the port is fine. */
static char *configured_url(char **problem) {
  *problem = NULL;
  if (nonempty("SANDBOX_URL")) return dup_s(getenv("SANDBOX_URL"));
  const char *host = nonempty("SANDBOX_HOST") ? getenv("SANDBOX_HOST") : "127.0.0.1";
  if (strcmp(host, "0.0.0.0") == 0) host = "127.0.0.1";
  if (strcmp(host, "::") == 0) host = "::1";
  const char *port = nonempty("SANDBOX_PORT") ? getenv("SANDBOX_PORT") : "7878";
  size_t digits = strspn(port, "0123456789");
  long value = digits == strlen(port) && digits >= 1 && digits <= 5 ? strtol(port, NULL, 10) : 0;
  buf_t b = {0};
  int bracket = strchr(host, ':') != NULL && host[0] != '[';
  buf_printf(&b, "http://%s%s%s:%s", bracket ? "[" : "", host, bracket ? "]" : "", port);
  if (value < 1 || value > 65535) {
    buf_t why = {0};
    buf_printf(&why, "SANDBOX_PORT=\"%s\" is not a port the manager can be reached on: set SANDBOX_URL, or SANDBOX_PORT to the port in the manager's \"manager listening\" log line", port);
    *problem = why.data;
  }
  return b.data;
}

void load_config(config_t *c) {
  memset(c, 0, sizeof *c);
  char *port_problem;
  char *url = configured_url(&port_problem);
  size_t n = strlen(url);
  while (n > 0 && url[n - 1] == '/') n--;
  c->url = dup_n(url, n);
  parse_url(c);
  if (port_problem) c->url_problem = port_problem;

  /* A positive whole number of decimal digits, else the default (as sdk/connection.ts). */
  c->timeout_ms = DEFAULT_TIMEOUT_MS;
  const char *timeout = getenv("SANDBOX_MANAGER_TIMEOUT_MS");
  if (timeout && *timeout) {
    char *end;
    errno = 0;
    long value = strtol(timeout, &end, 10);
    if (errno == 0 && *end == 0 && value > 0) c->timeout_ms = value;
  }
  const char *allow = getenv("SANDBOX_ALLOW_HOST_WHEN_UNREACHABLE");
  c->allow_host_when_unreachable = allow && strcmp(allow, "1") == 0;

  const char *direct = nonempty("SANDBOX_API_TOKEN");
  if (direct) {
    c->token = dup_s(direct);
    return;
  }
  const char *file = nonempty("SANDBOX_API_TOKEN_FILE");
  char *path = file ? dup_s(file) : default_token_file();
  char *token = read_token(path);
  buf_t problem = {0};
  if (token && *token) c->token = token;
  else if (token) buf_printf(&problem, "the token file %s is empty", path);
  else buf_printf(&problem, "no manager token: set SANDBOX_API_TOKEN or SANDBOX_API_TOKEN_FILE (could not read %s: %s)", path, errno_code(errno));
  c->problem = problem.data;
}
