/* One manager API call (GET, JSON answer) and the SDK's reading of a failed answer (toSdkError). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "helper.h"

void answer_failure(int status, const buf_t *body, failure_t *f) {
  jval_t code, message;
  const char *text = body->data ? body->data : "";
  f->unreachable = 0;
  f->message.len = 0;
  buf_t decoded = {0};
  if (json_get(text, body->len, "code", &code) == 1 && code.type == J_STRING && json_get(text, body->len, "message", &message) == 1 &&
      json_string(message, &decoded) == 0) {
    buf_put(&f->message, decoded.data, decoded.len);
  } else {
    /* The SDK's text for an answer it cannot read: the status and the start of the body. */
    buf_printf(&f->message, "manager answered %d: %.*s", status, (int)(body->len > 300 ? 300 : body->len), text);
  }
  free(decoded.data);
}

int api_get(const config_t *c, const char *path, buf_t *body, failure_t *f) {
  http_t h;
  long long deadline = now_ms() + c->timeout_ms;
  int ok = http_request(c, "GET", path, NULL, deadline, &h, f) == 0 && http_body_all(&h, body, f) == 0;
  if (h.fd >= 0) close(h.fd);
  if (!ok) return -1;
  if (h.status < 200 || h.status > 299) {
    answer_failure(h.status, body, f);
    return -1;
  }
  return 0;
}
