/* A sandboxed session's command: POST /api/sessions/:id/exec with the command as one JSON string (never
 * rewritten: text that is not UTF-8 is refused, as JSON cannot carry it), then the NDJSON stream's
 * stdout/stderr bytes written as they come and the remote exit status as ours. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "helper.h"

/* OpenCode ends a shell with SIGTERM (SIGINT, SIGHUP): dropping the stream makes the manager kill the
 * command in the VM, so exiting is the cancel. 143 as the Bun shim answered. */
static void on_signal(int sig) {
  (void)sig;
  _exit(143);
}

static int flag(const char *line, size_t n, const char *key) {
  jval_t v;
  return json_get(line, n, key, &v) == 1 && v.type == J_TRUE;
}

/* Handles one NDJSON line; returns only if the command has not ended. */
static void handle_line(const config_t *c, const char *line, size_t n) {
  jval_t type, field;
  buf_t text = {0};
  if (json_get(line, n, "type", &type) != 1 || json_string(type, &text) != 0)
    refuse("the sandbox could not run it: the exec stream from %s broke: a line is not a JSON event", c->url);
  if (strcmp(text.data, "stdout") == 0 || strcmp(text.data, "stderr") == 0) {
    int fd = text.data[3] == 'o' ? 1 : 2;
    buf_t data = {0}, bytes = {0};
    if (json_get(line, n, "data", &field) != 1 || json_string(field, &data) != 0 || base64_decode(data.data, data.len, &bytes) != 0)
      refuse("the sandbox could not run it: the exec stream from %s broke: an output event without base64 data", c->url);
    write_all(fd, bytes.data, bytes.len);
    free(data.data);
    free(bytes.data);
  } else if (strcmp(text.data, "exit") == 0) {
    int cancelled = flag(line, n, "cancelled"), timed_out = flag(line, n, "timedOut");
    buf_t number = {0};
    if (json_get(line, n, "exitCode", &field) != 1 || field.type != J_NUMBER) refuse("the sandbox could not run it: the exec stream from %s broke: an exit event without an exit code", c->url);
    buf_put(&number, field.start, field.len);
    if (timed_out) {
      const char *note = "session-sandbox: the command exceeded the sandbox exec timeout and was killed\n";
      write_all(2, note, strlen(note));
    }
    _exit(cancelled ? 130 : timed_out ? 124 : (int)strtol(number.data, NULL, 10));
  } else if (strcmp(text.data, "error") == 0) {
    failure_t f = {0};
    buf_t body = {0};
    buf_put(&body, line, n);
    answer_failure(503, &body, &f);
    refuse("the sandbox could not run it: %s", f.message.data);
  }
  free(text.data); /* started, heartbeat and anything newer: nothing to do */
}

void run_in_vm(const config_t *c, const char *session_id, const char *command) {
  const char *cwd_env = getenv("SANDBOX_SHIM_CWD");
  char *cwd = cwd_env && *cwd_env ? strdup(cwd_env) : getcwd(NULL, 0);
  if (!cwd) refuse("cannot learn the shell's working directory");
  buf_t body = {0};
  buf_puts(&body, "{\"command\":");
  if (json_quote(&body, command) < 0) refuse("the command is not valid UTF-8 text, and the manager's API carries text: the shim does not rewrite a command");
  buf_puts(&body, ",\"cwd\":");
  if (json_quote(&body, cwd) < 0) refuse("the working directory %s is not valid UTF-8", cwd);
  const char *call_id = getenv("SANDBOX_CALL_ID");
  if (call_id && *call_id) {
    buf_puts(&body, ",\"callID\":");
    if (json_quote(&body, call_id) < 0) refuse("SANDBOX_CALL_ID is not valid UTF-8");
  }
  buf_puts(&body, "}");

  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);

  buf_t path = {0};
  buf_puts(&path, "/api/sessions/");
  uri_component(&path, session_id);
  buf_puts(&path, "/exec");
  http_t h;
  failure_t f = {0};
  /* No deadline, as the SDK's exec: a command may run (and stay quiet) for as long as the manager allows. */
  if (http_request(c, "POST", path.data, body.data, -1, &h, &f) < 0) refuse("the sandbox could not run it: %s", f.message.data);
  buf_t stream = {0};
  if (h.status < 200 || h.status > 299) {
    if (http_body_all(&h, &stream, &f) < 0) refuse("the sandbox could not run it: %s", f.message.data);
    answer_failure(h.status, &stream, &f);
    refuse("the sandbox could not run it: %s", f.message.data);
  }
  for (;;) {
    ssize_t n = http_body(&h, &stream, &f);
    if (n < 0) refuse("the sandbox could not run it: the exec stream from %s broke: %s", c->url, f.message.data);
    char *eol;
    while ((eol = stream.len ? memchr(stream.data, '\n', stream.len) : NULL)) {
      handle_line(c, stream.data, (size_t)(eol - stream.data));
      buf_drop(&stream, (size_t)(eol - stream.data) + 1);
    }
    if (n == 0) refuse("the sandbox could not run it: the exec stream from %s ended before the command's exit status", c->url);
  }
}
