/* The sandbox's view of a repository: a FUSE file system that passes every operation through to the real
 * directory and refuses the changes the repository rules forbid (policy.c), on every operation and by
 * path, so nothing the host does afterwards (renames, editor saves, git clean, new host config) can
 * dissolve a rule the way it dissolves a bind mount. One daemon serves one directory to one VM.
 *
 * Every access goes through openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) from the pinned root, so no
 * path a guest builds (symlinks, "..", mount points) reaches outside it or anywhere the rules did not
 * judge. The daemon mounts as root, then runs as the directory's owner with CAP_DAC_OVERRIDE alone (see
 * drop_privileges). The kernel checks the guest's permissions (default_permissions) against the ids this
 * daemon reports: the owner's files show as owned by the VM's root.
 *
 *   repo-fs --root DIR --mountpoint MP --pin DEV:INO --guest-id ID [--gitdir-root] [--gitdir REL]... [--keep REL]...
 *           [--log FILE] [--pid-file FILE]   (with a pid file: detaches, the daemon's pid written there)
 *   repo-fs --explain --root DIR [--gitdir-root] [--keep REL]... (create|write|remove|setattr) REL
 *   repo-fs --named --root DIR          (the in-tree paths host git config names, one per line)
 */
#define _GNU_SOURCE
#define FUSE_USE_VERSION 35
#include <fuse.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "view.h"

extern const struct fuse_operations repo_fs_operations;

struct view g = {.root_fd = -1, .log_fd = -1};

static void die(const char *format, ...)
{
	va_list args;
	va_start(args, format);
	fprintf(stderr, "repo-fs: ");
	vfprintf(stderr, format, args);
	fprintf(stderr, "\n");
	va_end(args);
	exit(2);
}

/* The owner's home, where their global git config lives. */
static const char *home_of(uid_t uid)
{
	struct passwd *pw = getpwuid(uid);
	return pw && pw->pw_dir ? strdup(pw->pw_dir) : "/nonexistent";
}

/*
 * Becomes the directory's owner once the mount is made, keeping one capability: CAP_DAC_OVERRIDE. The
 * kernel has already checked the guest's own permission (default_permissions) before a request reaches
 * the daemon; the daemon needs the override where a runtime splits one guest call in two (gVisor's gofer
 * creates a 0444 file, then opens it again to write: git's objects). Every access stays beneath the root
 * (openat2), so the override reaches nothing outside the repository.
 */
static void drop_privileges(void)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("no_new_privs: %s", strerror(errno));
	for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
		if (cap != CAP_DAC_OVERRIDE) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
	if (getuid() == 0 || geteuid() == 0) {
		if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) die("keepcaps: %s", strerror(errno));
		if (setgroups(0, NULL) != 0) die("setgroups: %s", strerror(errno));
		if (setresgid(g.owner_gid, g.owner_gid, g.owner_gid) != 0) die("setresgid: %s", strerror(errno));
		if (setresuid(g.owner_uid, g.owner_uid, g.owner_uid) != 0) die("setresuid: %s", strerror(errno));
	}
	struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[2] = {{0}};
	data[0].effective = data[0].permitted = 1u << CAP_DAC_OVERRIDE;
	if (syscall(SYS_capset, &header, data) != 0) die("capset: %s", strerror(errno));
}

/*
 * Leaves the process that started it (the manager, or one of its threads, which may be gone long before
 * this daemon is) for a session of its own, so the one that waits for it is init, never a manager that
 * would leave it a zombie. The new pid goes to `pid_file`, written while still root.
 */
static void detach(const char *pid_file)
{
	pid_t child = fork();
	if (child < 0) die("fork: %s", strerror(errno));
	if (child > 0) {
		int fd = open(pid_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0) {
			kill(child, SIGKILL);
			die("cannot write %s: %s", pid_file, strerror(errno));
		}
		char text[32];
		int n = snprintf(text, sizeof text, "%d\n", (int)child);
		if (write(fd, text, (size_t)n) != n) {
			kill(child, SIGKILL);
			die("cannot write %s", pid_file);
		}
		close(fd);
		_exit(0);
	}
	setsid();
}

static enum repo_op parse_op(const char *word)
{
	if (strcmp(word, "create") == 0) return REPO_OP_CREATE;
	if (strcmp(word, "write") == 0) return REPO_OP_WRITE;
	if (strcmp(word, "remove") == 0) return REPO_OP_REMOVE;
	if (strcmp(word, "setattr") == 0) return REPO_OP_SETATTR;
	die("unknown operation %s (create, write, remove or setattr)", word);
	return REPO_OP_WRITE;
}

int main(int argc, char **argv)
{
	const char *root = NULL, *mountpoint = NULL, *pin = NULL, *log_path = NULL, *pid_file = NULL;
	long guest_id = -1;
	int explain = 0, named = 0;
	int i = 1;
	for (; i < argc; i++) {
		const char *arg = argv[i];
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(arg, "--root") == 0 && next) root = argv[++i];
		else if (strcmp(arg, "--mountpoint") == 0 && next) mountpoint = argv[++i];
		else if (strcmp(arg, "--pin") == 0 && next) pin = argv[++i];
		else if (strcmp(arg, "--guest-id") == 0 && next) guest_id = strtol(argv[++i], NULL, 10);
		else if (strcmp(arg, "--log") == 0 && next) log_path = argv[++i];
		else if (strcmp(arg, "--pid-file") == 0 && next) pid_file = argv[++i];
		else if (strcmp(arg, "--keep") == 0 && next) {
			if (g.keep_count == MAX_KEEP) die("more than %d --keep paths", MAX_KEEP);
			g.keep[g.keep_count++] = argv[++i];
		} else if (strcmp(arg, "--gitdir") == 0 && next) {
			if (g.gitdir_count == MAX_KEEP) die("more than %d --gitdir paths", MAX_KEEP);
			g.gitdirs[g.gitdir_count++] = argv[++i];
		} else if (strcmp(arg, "--gitdir-root") == 0) g.gitdir_root = 1;
		else if (strcmp(arg, "--explain") == 0) explain = 1;
		else if (strcmp(arg, "--named") == 0) named = 1;
		else break;
	}
	if (!root) die("usage: repo-fs --root DIR --mountpoint MP --pin DEV:INO --guest-id ID [--gitdir-root] [--gitdir REL]... [--keep REL]... [--log FILE]");

	g.root_fd = open(root, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (g.root_fd < 0) die("cannot open %s: %s", root, strerror(errno));
	struct stat st;
	if (fstat(g.root_fd, &st) != 0) die("cannot stat %s: %s", root, strerror(errno));
	if (pin) {
		unsigned long long dev, ino;
		if (sscanf(pin, "%llu:%llu", &dev, &ino) != 2) die("--pin wants DEV:INO");
		if ((unsigned long long)st.st_dev != dev || (unsigned long long)st.st_ino != ino) die("%s is no longer the pinned directory", root);
	}
	char link[64];
	snprintf(link, sizeof link, "/proc/self/fd/%d", g.root_fd);
	ssize_t n = readlink(link, g.root_path, sizeof g.root_path - 1);
	if (n < 0) die("cannot resolve %s: %s", root, strerror(errno));
	g.root_path[n] = '\0';
	g.root_path_length = (size_t)n;
	g.owner_uid = st.st_uid;
	g.owner_gid = st.st_gid;

	g.rules.root_is_gitdir = g.gitdir_root;
	g.rules.keep = g.keep;
	g.rules.keep_count = g.keep_count;
	g.rules.gitdirs = g.gitdirs;
	g.rules.gitdir_count = g.gitdir_count;
	g.rules.is_module_gitdir = module_gitdir;
	g.rules.is_guest_worktree = guest_worktree;
	if (!g.gitdir_root) {
		host_config_init(&g.config, g.root_fd, g.root_path, home_of(g.owner_uid));
		host_config_load(&g.config);
		refresh_rules();
	}

	if (named) {
		if (g.config.problem) printf("problem: %s\n", g.config.problem);
		for (size_t k = 0; k < g.config.named_count; k++) printf("%s\n", g.config.named[k]);
		return 0;
	}
	if (explain) {
		if (i + 2 != argc) die("usage: repo-fs --explain --root DIR [--gitdir-root] [--keep REL]... OP REL");
		const char *reason = repo_policy_check(&g.rules, argv[i + 1], parse_op(argv[i]));
		if (reason) printf("deny: %s\n", reason);
		else printf("allow%s\n", repo_policy_is_todo(&g.rules, argv[i + 1]) ? " (a todo list: no exec lines)" : "");
		return reason ? 1 : 0;
	}

	if (!mountpoint || guest_id < 0) die("--mountpoint and --guest-id are required to serve");
	g.guest_uid = (uid_t)guest_id;
	g.guest_gid = (gid_t)guest_id;
	if (log_path) {
		g.log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (g.log_fd < 0) die("cannot open %s: %s", log_path, strerror(errno));
	}

	char *fuse_argv[] = {argv[0], "-o", "allow_other,default_permissions,fsname=session-sandbox-repo,subtype=repo-fs", NULL};
	struct fuse_args args = FUSE_ARGS_INIT(3, fuse_argv);
	struct fuse *fuse = fuse_new(&args, &repo_fs_operations, sizeof repo_fs_operations, NULL);
	if (!fuse) die("cannot create the file system");
	if (fuse_mount(fuse, mountpoint) != 0) die("cannot mount on %s", mountpoint);
	if (pid_file) detach(pid_file);
	drop_privileges();
	struct fuse_session *session = fuse_get_session(fuse);
	if (fuse_set_signal_handlers(session) != 0) die("cannot set signal handlers");
	/* One thread: measured faster than fuse_loop_mt on this 2-core machine for every workload of
	 * bench/repo-view.ts (docs/performance.md). The rules still take their lock (checks.c), so several
	 * threads stay a one-line change. */
	int status = fuse_loop(fuse);
	fuse_remove_signal_handlers(session);
	fuse_unmount(fuse);
	fuse_destroy(fuse);
	return status < 0 ? 1 : 0;
}
