/* The shim's compiled helper (plugin/shim runs it): the same decisions as shim-main.ts without a Bun
 * start per shell. One header for its few files; each file has one job (see its first comment). */
#ifndef SHIM_HELPER_H
#define SHIM_HELPER_H
#include <stddef.h>
#include <sys/types.h>

/* The shim's exit code for "not run": OpenCode shows it with our reason on stderr. */
#define REFUSED 126

/* A growable byte buffer; every allocation failure ends the process (refused). */
typedef struct {
  char *data;
  size_t len, cap;
} buf_t;
void buf_put(buf_t *b, const void *p, size_t n);
void buf_puts(buf_t *b, const char *s);
void buf_printf(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_drop(buf_t *b, size_t n);
/* Writes all of p to fd (retrying short writes); -1 if the fd is gone. */
int write_all(int fd, const void *p, size_t n);

/* "session-sandbox: not run: <reason>" on stderr, exit 126. Nothing ran. */
_Noreturn void refuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Where the manager is and how to reach it (plugin/config.ts, same rules). */
typedef struct {
  const char *url;          /* SANDBOX_URL without trailing slashes */
  char *host, *port;        /* what to connect to */
  char *host_header;        /* host[:port] as written in the URL */
  char *path_prefix;        /* the URL's path ("" for none) */
  char *url_problem;        /* non-NULL: this helper cannot use the URL (why) */
  char *token;              /* NULL: `problem` says why */
  char *problem;
  long timeout_ms;          /* per API call; a slower manager counts as unreachable */
  int allow_host_when_unreachable;
} config_t;
void load_config(config_t *c);

/* Why a manager call failed; `unreachable` is the SDK's ManagerUnreachableError (no usable answer). */
typedef struct {
  int unreachable;
  buf_t message;
} failure_t;

/* One HTTP/1.1 exchange (Connection: close). deadline: absolute ms (now_ms), or -1 for none. */
typedef struct {
  int fd;
  int status;
  int chunked, need_crlf, done;
  long long remaining; /* chunk or Content-Length bytes left; -1: until the connection closes */
  long long deadline;
  buf_t in;
} http_t;
long long now_ms(void);
int http_request(const config_t *c, const char *method, const char *path, const char *body, long long deadline, http_t *h, failure_t *f);
/* Appends more of the body to out: >0 bytes added, 0 at its end, -1 on failure (f says why). */
ssize_t http_body(http_t *h, buf_t *out, failure_t *f);
int http_body_all(http_t *h, buf_t *out, failure_t *f);

/* A JSON value's span inside its document. */
typedef enum { J_STRING, J_NUMBER, J_TRUE, J_FALSE, J_NULL, J_OBJECT, J_ARRAY } jtype_t;
typedef struct {
  jtype_t type;
  const char *start;
  size_t len;
} jval_t;
/* The member `key` of the JSON object in s[0..n): 1 found, 0 absent, -1 s is not one valid JSON object. */
int json_get(const char *s, size_t n, const char *key, jval_t *out);
/* Decodes a J_STRING into UTF-8 (appended to out); -1 if malformed. */
int json_string(jval_t v, buf_t *out);
/* Appends s as a JSON string literal; -1 (nothing usable) if s is not valid UTF-8. */
int json_quote(buf_t *out, const char *s);
int base64_decode(const char *s, size_t n, buf_t *out);
/* encodeURIComponent. */
void uri_component(buf_t *out, const char *s);

/* The manager's answer to an API call, or why there is none (the SDK's toSdkError message). */
int api_get(const config_t *c, const char *path, buf_t *body, failure_t *f);
void answer_failure(int status, const buf_t *body, failure_t *f);

_Noreturn void pass_through(char **args);
_Noreturn void run_in_vm(const config_t *c, const char *session_id, const char *command);
#endif
