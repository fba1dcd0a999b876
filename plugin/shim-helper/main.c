/* The shim's decisions, as in shim-main.ts: a sandboxed session's command goes to the manager and we
 * exit with its exit code; without a valid target we print why and exit 126. Only a session the manager
 * says is not sandboxed (or the documented opt-outs) reaches the user's own shell. Never the host by
 * accident: an answer we cannot read is a refusal, not a "no". */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include "helper.h"

/* The boolean member `key` of a manager answer; refuses when the answer has none. */
static int answer_flag(const buf_t *body, const char *key, const char *what) {
  jval_t v;
  if (json_get(body->data ? body->data : "", body->len, key, &v) == 1 && (v.type == J_TRUE || v.type == J_FALSE)) return v.type == J_TRUE;
  refuse("the manager's answer about %s has no boolean \"%s\", so it cannot be trusted: %.300s", what, key, body->data ? body->data : "");
}

/* One JSON line of the resolved connection (the token included: the caller already holds it), then exit 0. */
static void print_config(const config_t *c) {
  buf_t b = {0};
  buf_puts(&b, "{\"url\":");
  json_quote(&b, c->url);
  buf_printf(&b, ",\"urlProblem\":%s,\"token\":", c->url_problem ? "true" : "false");
  if (c->token) json_quote(&b, c->token);
  else buf_puts(&b, "null");
  buf_printf(&b, ",\"tokenProblem\":%s,\"managerTimeoutMs\":%ld}\n", c->problem ? "true" : "false", (long)c->timeout_ms);
  write_all(1, b.data, b.len);
  exit(0);
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN); /* a closed stdout must not end us before the manager hears the drop */
  config_t c;
  load_config(&c);
  /* What it resolved, for the test that holds this resolver to sdk/connection.ts's table of cases. */
  if (argc == 2 && strcmp(argv[1], "--print-config") == 0) print_config(&c);
  char **args = argv + 1;
  const char *command = NULL;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "-c") == 0) {
      command = argv[i + 1]; /* NULL when -c is last */
      break;
    }
  const char *session_id = getenv("SANDBOX_SESSION_ID");
  const char *decision = getenv("SANDBOX_DECISION");
  if (decision && strcmp(decision, "blocked") == 0) {
    const char *reason = getenv("SANDBOX_BLOCKED_REASON");
    refuse("%s", reason && *reason ? reason : "the sandbox arbiter blocked this command");
  }
  if (!c.token) refuse("the sandbox manager is not configured: %s", c.problem);
  if (c.url_problem) refuse("%s", c.url_problem);

  failure_t f = {0};
  buf_t body = {0};
  if (!session_id || !*session_id) {
    /* PTY terminals, slash-command templates, the V2 runtime: OpenCode gives no session. Only a manager
     * that has sandboxing off server-wide (or the explicit opt-out) lets these reach the host. */
    const char *untagged = getenv("SANDBOX_UNTAGGED_SHELL");
    if (untagged && strcmp(untagged, "host") == 0) pass_through(args);
    if (api_get(&c, "/api/settings/sandbox", &body, &f) < 0) {
      if (f.unreachable && c.allow_host_when_unreachable) pass_through(args);
      refuse("cannot reach the sandbox manager: %s", f.message.data);
    }
    if (!answer_flag(&body, "enabled", "the sandbox settings")) pass_through(args);
    refuse("this shell has no OpenCode session identity (a PTY terminal, a slash-command template or the V2 runtime), so it cannot be sent to a session's sandbox. Set SANDBOX_UNTAGGED_SHELL=host to allow such shells on the host.");
  }
  buf_t path = {0};
  buf_puts(&path, "/api/session-sandbox/");
  uri_component(&path, session_id);
  if (api_get(&c, path.data, &body, &f) < 0) {
    if (f.unreachable && c.allow_host_when_unreachable) pass_through(args);
    refuse("cannot learn whether session %s is sandboxed, so it is treated as sandboxed: %s", session_id, f.message.data);
  }
  if (!answer_flag(&body, "sandboxed", "the session")) pass_through(args);
  if (!command) refuse("session %s is sandboxed and an interactive shell cannot be sandboxed by the shim; run commands with -c", session_id);
  run_in_vm(&c, session_id, command);
}
