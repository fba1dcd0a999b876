/* A session the manager says is not sandboxed (or a documented opt-out): the user's own shell with the
 * same arguments, without the manager token, signals forwarded, its exit status ours (as the Bun shim). */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "helper.h"

static pid_t child;

static void forward(int sig) {
  if (child > 0) kill(child, sig);
}

/* Whether `resolved` is our own plugin/shim: the path the shim script passed (SANDBOX_SHIM_SELF), or the
 * one next to this binary's default place (<plugin>/.build/shim-helper). A user shell that is the shim
 * would hand the command straight back to us, forever. */
static int is_shim(const char *resolved) {
  char exe[PATH_MAX], shim[PATH_MAX + 16], real[PATH_MAX];
  const char *self = getenv("SANDBOX_SHIM_SELF");
  if (self && realpath(self, real) && strcmp(real, resolved) == 0) return 1;
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return 0;
  exe[n] = 0;
  snprintf(shim, sizeof shim, "%s/../shim", dirname(exe));
  return realpath(shim, real) && strcmp(real, resolved) == 0;
}

/* SANDBOX_USER_SHELL, else $SHELL, else /bin/bash — never our shim (host-run.ts's userShell). */
static const char *user_shell(void) {
  const char *candidate = getenv("SANDBOX_USER_SHELL");
  if (!candidate || !*candidate) candidate = getenv("SHELL");
  if (!candidate || !*candidate) candidate = "/bin/bash";
  char resolved[PATH_MAX];
  if (!realpath(candidate, resolved)) return "/bin/bash";
  const char *base = strrchr(candidate, '/');
  if (is_shim(resolved) || strcmp(base ? base + 1 : candidate, "shim") == 0) return "/bin/bash";
  return candidate;
}

void pass_through(char **args) {
  const char *shell = user_shell();
  static const char *secret[] = {"SANDBOX_API_TOKEN", "SANDBOX_SHIM_CWD", "SANDBOX_SHIM_SELF", "SANDBOX_DECISION", "SANDBOX_BLOCKED_REASON"};
  for (size_t i = 0; i < sizeof secret / sizeof *secret; i++) unsetenv(secret[i]);
  int argc = 0;
  while (args[argc]) argc++;
  char **argv = calloc((size_t)argc + 2, sizeof *argv);
  if (!argv) refuse("out of memory");
  argv[0] = (char *)shell;
  for (int i = 0; i < argc; i++) argv[i + 1] = args[i];

  struct sigaction sa = {.sa_handler = forward};
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  child = fork();
  if (child < 0) refuse("cannot start %s: %s", shell, strerror(errno));
  if (child == 0) {
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int sig = 1; sig < NSIG; sig++) sigaction(sig, &dfl, NULL); /* a fresh shell's dispositions */
    execvp(shell, argv);
    refuse("cannot start the host shell %s: %s", shell, strerror(errno));
  }
  int status;
  while (waitpid(child, &status, 0) < 0)
    if (errno != EINTR) refuse("lost the host shell: %s", strerror(errno));
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  int sig = WTERMSIG(status);
  _exit(128 + (sig == SIGKILL ? 9 : sig == SIGINT ? 2 : 15));
}
