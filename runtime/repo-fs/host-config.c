/* host-config.h: which work-tree paths host git configuration names, and a watch on every file that
 * configuration comes from. Host git itself parses the configuration (`git config --list --show-origin
 * -z`, which runs nothing it names), so includes, includeIf and every syntax git knows count exactly as
 * git counts them; this file only decides which values are paths. */
#define _GNU_SOURCE
#include "host-config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GIT_TIMEOUT_MS 5000
#define MAX_OUTPUT (4 << 20)
#define MAX_WATCHES 256
#define MAX_SYMLINK_HOPS 40

struct watch {
	int wd;
	char dir[PATH_MAX];
	char name[NAME_MAX + 1];
};
static struct watch watches[MAX_WATCHES];
static size_t watch_count;

static void set_problem(struct host_config *config, const char *format, const char *detail)
{
	free(config->problem);
	size_t size = strlen(format) + strlen(detail) + 1;
	config->problem = malloc(size);
	if (config->problem) snprintf(config->problem, size, format, detail);
}

static void add_named(struct host_config *config, const char *rel)
{
	for (size_t i = 0; i < config->named_count; i++)
		if (strcmp(config->named[i], rel) == 0) return;
	char **grown = realloc(config->named, (config->named_count + 1) * sizeof *grown);
	if (!grown) return;
	config->named = grown;
	config->named[config->named_count] = strdup(rel);
	if (config->named[config->named_count]) config->named_count++;
}

/* `path` made absolute against `base` and normalised lexically ("." and ".." and repeated slashes). */
static int normalise(const char *base, const char *path, char out[PATH_MAX])
{
	char joined[PATH_MAX * 2];
	if (path[0] == '/') snprintf(joined, sizeof joined, "%s", path);
	else snprintf(joined, sizeof joined, "%s/%s", base, path);
	char *parts[PATH_MAX / 2];
	size_t count = 0;
	char *save = NULL;
	for (char *part = strtok_r(joined, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
		if (strcmp(part, ".") == 0) continue;
		if (strcmp(part, "..") == 0) {
			if (count > 0) count--;
			continue;
		}
		if (count == sizeof parts / sizeof *parts) return -1;
		parts[count++] = part;
	}
	size_t used = 0;
	out[0] = '\0';
	for (size_t i = 0; i < count; i++) {
		int n = snprintf(out + used, PATH_MAX - used, "/%s", parts[i]);
		if (n < 0 || (size_t)n >= PATH_MAX - used) return -1;
		used += (size_t)n;
	}
	if (count == 0) snprintf(out, PATH_MAX, "/");
	return 0;
}

/* The part of an absolute path below top ("" for top itself), or NULL outside it. */
static const char *below_top(const struct host_config *config, const char *absolute)
{
	size_t n = strlen(config->top);
	if (strcmp(config->top, "/") == 0) return absolute + 1;
	if (strncmp(absolute, config->top, n) != 0) return NULL;
	if (absolute[n] == '\0') return absolute + n;
	if (absolute[n] != '/') return NULL;
	return absolute + n + 1;
}

/* Protects `rel` and, where it passes through symlinks inside the tree, each link and where it leads:
 * host git follows them, so the sandbox must not be able to change any of them. */
static void protect_in_tree(struct host_config *config, const char *rel, int hops)
{
	if (rel[0] == '\0' || hops > MAX_SYMLINK_HOPS) return;
	add_named(config, rel);
	char walked[PATH_MAX] = "";
	const char *rest = rel;
	while (*rest) {
		const char *slash = strchr(rest, '/');
		size_t length = slash ? (size_t)(slash - rest) : strlen(rest);
		char candidate[PATH_MAX];
		snprintf(candidate, sizeof candidate, "%s%s%.*s", walked, walked[0] ? "/" : "", (int)length, rest);
		char target[PATH_MAX];
		ssize_t n = readlinkat(config->root_fd, candidate, target, sizeof target - 1);
		if (n >= 0) {
			target[n] = '\0';
			add_named(config, candidate);
			char base[PATH_MAX], absolute[PATH_MAX], next[PATH_MAX * 2];
			snprintf(base, sizeof base, "%s%s%s", config->top, walked[0] ? "/" : "", walked);
			if (normalise(base, target, absolute) != 0) return;
			const char *inside = below_top(config, absolute);
			if (!inside) return; /* leads out of the tree: nothing of the sandbox's there */
			snprintf(next, sizeof next, "%s%s%s", inside, slash && *inside ? "/" : "", slash ? slash + 1 : "");
			protect_in_tree(config, next, hops + 1);
			return;
		}
		snprintf(walked, sizeof walked, "%s", candidate);
		if (!slash) break;
		rest = slash + 1;
	}
}

/* A path value (relative to `base`, or `~/...`), protected when it lies strictly inside the tree. */
static void protect_path_value(struct host_config *config, const char *base, const char *value, int must_exist)
{
	char expanded[PATH_MAX], absolute[PATH_MAX];
	if (strncmp(value, "~/", 2) == 0) snprintf(expanded, sizeof expanded, "%s/%s", config->home, value + 2);
	else snprintf(expanded, sizeof expanded, "%s", value);
	if (expanded[0] == '\0' || normalise(base, expanded, absolute) != 0) return;
	const char *inside = below_top(config, absolute);
	if (!inside || inside[0] == '\0') return; /* outside, or the whole tree (e.g. safe.directory) */
	struct stat st;
	if (must_exist && fstatat(config->root_fd, inside, &st, AT_SYMLINK_NOFOLLOW) != 0) return;
	protect_in_tree(config, inside, 0);
}

static int key_matches(const char *key, const char *section, const char *name)
{
	/* section.name, or section.<subsection>.name */
	size_t s = strlen(section);
	if (strncasecmp(key, section, s) != 0 || key[s] != '.') return 0;
	const char *dot = strrchr(key, '.');
	return strcasecmp(dot + 1, name) == 0;
}

/* Keys whose whole value is a path host git reads or runs from. */
static int is_path_key(const char *key)
{
	return strcasecmp(key, "core.hookspath") == 0 || strcasecmp(key, "include.path") == 0 ||
	       key_matches(key, "includeif", "path") || strcasecmp(key, "core.fsmonitor") == 0 ||
	       strcasecmp(key, "core.attributesfile") == 0;
}

/* Keys whose value is a command host git (or a tool it starts) runs. */
static int is_program_key(const char *key)
{
	static const char *const exact[] = {"core.sshcommand", "core.pager", "core.editor", "core.askpass", "core.gitproxy",
					    "sequence.editor", "diff.external", "credential.helper", "gpg.program",
					    "interactive.difffilter", "uploadpack.packobjectshook", "web.browser", NULL};
	for (const char *const *name = exact; *name; name++)
		if (strcasecmp(key, *name) == 0) return 1;
	static const char *const per_section[][2] = {
		{"diff", "textconv"}, {"diff", "command"}, {"filter", "clean"}, {"filter", "smudge"}, {"filter", "process"},
		{"merge", "driver"}, {"credential", "helper"}, {"gpg", "program"}, {"mergetool", "cmd"}, {"mergetool", "path"},
		{"difftool", "cmd"}, {"difftool", "path"}, {"browser", "cmd"}, {"browser", "path"}, {"man", "cmd"}, {"man", "path"},
	};
	for (size_t i = 0; i < sizeof per_section / sizeof *per_section; i++)
		if (key_matches(key, per_section[i][0], per_section[i][1])) return 1;
	return strncasecmp(key, "alias.", 6) == 0 || strncasecmp(key, "pager.", 6) == 0;
}

/* Each word of a value that looks like a path (has a slash or starts with a dot), e.g. in `sh tools/x.sh`. */
static void protect_words(struct host_config *config, const char *value, int must_exist)
{
	char copy[PATH_MAX * 2];
	snprintf(copy, sizeof copy, "%s", value);
	char *save = NULL;
	for (char *word = strtok_r(copy, " \t\n\"';|&()<>=!,`$", &save); word; word = strtok_r(NULL, " \t\n\"';|&()<>=!,`$", &save)) {
		if (strchr(word, '/') || word[0] == '.') protect_path_value(config, config->top, word, must_exist);
	}
}

static int is_boolean(const char *value)
{
	static const char *const words[] = {"true", "false", "yes", "no", "on", "off", "1", "0", "", NULL};
	for (const char *const *word = words; *word; word++)
		if (strcasecmp(value, *word) == 0) return 1;
	return 0;
}

static void watch_file(const char *absolute);

/* One `key\nvalue` record from `origin` (`file:<path>`, relative to top or absolute). */
static void consider(struct host_config *config, const char *origin, const char *key, const char *value)
{
	char origin_dir[PATH_MAX] = "";
	if (strncmp(origin, "file:", 5) == 0) {
		char absolute[PATH_MAX];
		if (normalise(config->top, origin + 5, absolute) == 0) {
			watch_file(absolute);
			const char *inside = below_top(config, absolute);
			/* An included file in the tree (the repository's own config is guarded as part of .git). */
			if (inside && inside[0] && strncmp(inside, ".git/", 5) != 0) protect_in_tree(config, inside, 0);
			snprintf(origin_dir, sizeof origin_dir, "%s", absolute);
			char *slash = strrchr(origin_dir, '/');
			if (slash) *(slash == origin_dir ? slash + 1 : slash) = '\0';
		}
	}
	if (!value) return;
	if (strcasecmp(key, "include.path") == 0 || key_matches(key, "includeif", "path")) {
		/* Relative to the file that includes it; watched even while missing, for when it appears. */
		char absolute[PATH_MAX], expanded[PATH_MAX];
		if (strncmp(value, "~/", 2) == 0) snprintf(expanded, sizeof expanded, "%s/%s", config->home, value + 2);
		else snprintf(expanded, sizeof expanded, "%s", value);
		if (normalise(origin_dir[0] ? origin_dir : config->top, expanded, absolute) == 0) {
			watch_file(absolute);
			const char *inside = below_top(config, absolute);
			if (inside && inside[0]) protect_in_tree(config, inside, 0);
		}
		return;
	}
	if (is_path_key(key)) {
		if (strcasecmp(key, "core.fsmonitor") == 0 && is_boolean(value)) return;
		protect_path_value(config, config->top, value, 0);
		/* husky's hooks (core.hooksPath = .husky/_) run the scripts one level up. */
		size_t n = strlen(value);
		if (strcasecmp(key, "core.hookspath") == 0 && n >= 2 && strcmp(value + n - 2, "/_") == 0) {
			char parent[PATH_MAX];
			snprintf(parent, sizeof parent, "%.*s", (int)(n - 2), value);
			protect_path_value(config, config->top, parent, 0);
		}
		return;
	}
	if (is_program_key(key)) protect_words(config, value, 0);
	else protect_words(config, value, 1);
}

static const char *find_git(void)
{
	static const char *const candidates[] = {"/usr/bin/git", "/usr/local/bin/git", "/bin/git", NULL};
	for (const char *const *path = candidates; *path; path++)
		if (access(*path, X_OK) == 0) return *path;
	return NULL;
}

/* Runs host git's config listing; the output (NUL-separated) in *out, its length returned, or -1 and *error. */
static ssize_t run_git_config(const struct host_config *config, char **out, char *error, size_t error_size)
{
	const char *git = find_git();
	if (!git) {
		snprintf(error, error_size, "git is not installed on the host");
		return -1;
	}
	int out_pipe[2], err_pipe[2];
	if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
		snprintf(error, error_size, "pipe: %s", strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(error, error_size, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);
		dup2(null, 0);
		dup2(out_pipe[1], 1);
		dup2(err_pipe[1], 2);
		char home[PATH_MAX + 8];
		snprintf(home, sizeof home, "HOME=%s", config->home);
		char *env[] = {home, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", NULL};
		char *argv[] = {"git", "--no-pager", "-C", (char *)config->top, "config", "--list", "--show-origin", "-z", "--includes", NULL};
		execve(git, argv, env);
		_exit(127);
	}
	close(out_pipe[1]);
	close(err_pipe[1]);
	char *buffer = malloc(MAX_OUTPUT + 1);
	size_t used = 0, error_used = 0;
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	struct pollfd fds[2] = {{.fd = out_pipe[0], .events = POLLIN}, {.fd = err_pipe[0], .events = POLLIN}};
	int open_count = 2, timed_out = 0;
	while (open_count > 0 && buffer) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long elapsed = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
		if (elapsed >= GIT_TIMEOUT_MS) {
			timed_out = 1;
			break;
		}
		if (poll(fds, 2, (int)(GIT_TIMEOUT_MS - elapsed)) < 0 && errno != EINTR) break;
		for (int i = 0; i < 2; i++) {
			if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
			char chunk[65536];
			ssize_t n = read(fds[i].fd, chunk, sizeof chunk);
			if (n <= 0) {
				close(fds[i].fd);
				fds[i].fd = -1;
				open_count--;
				continue;
			}
			if (i == 0) {
				size_t take = used + (size_t)n > MAX_OUTPUT ? MAX_OUTPUT - used : (size_t)n;
				memcpy(buffer + used, chunk, take);
				used += take;
			} else if (error_used + 1 < error_size) {
				size_t take = error_used + (size_t)n + 1 > error_size ? error_size - error_used - 1 : (size_t)n;
				memcpy(error + error_used, chunk, take);
				error_used += take;
				error[error_used] = '\0';
			}
		}
	}
	for (int i = 0; i < 2; i++)
		if (fds[i].fd >= 0) close(fds[i].fd);
	if (timed_out) kill(pid, SIGKILL);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
	if (!buffer || timed_out || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		if (timed_out) snprintf(error, error_size, "git config did not answer within %d ms", GIT_TIMEOUT_MS);
		else if (error_used == 0) snprintf(error, error_size, "git config failed (status %d)", status);
		free(buffer);
		return -1;
	}
	buffer[used] = '\0';
	*out = buffer;
	return (ssize_t)used;
}

static struct host_config *watching;

static void watch_file(const char *absolute)
{
	if (!watching || watch_count >= MAX_WATCHES) return;
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", absolute);
	char *slash = strrchr(dir, '/');
	if (!slash || slash[1] == '\0') return;
	const char *name = absolute + (slash - dir) + 1;
	if (slash == dir) slash[1] = '\0';
	else *slash = '\0';
	for (size_t i = 0; i < watch_count; i++)
		if (strcmp(watches[i].dir, dir) == 0 && strcmp(watches[i].name, name) == 0) return;
	int wd = inotify_add_watch(watching->inotify_fd, dir,
				   IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_MODIFY | IN_ATTRIB |
					   IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR);
	if (wd < 0) {
		/* The directory is missing: watch where it would appear, one level up. */
		if (errno == ENOENT && strcmp(dir, "/") != 0) watch_file(dir);
		return;
	}
	watches[watch_count].wd = wd;
	snprintf(watches[watch_count].dir, sizeof watches[watch_count].dir, "%s", dir);
	snprintf(watches[watch_count].name, sizeof watches[watch_count].name, "%s", name);
	watch_count++;
}

void host_config_init(struct host_config *config, int root_fd, const char *top, const char *home)
{
	memset(config, 0, sizeof *config);
	config->root_fd = root_fd;
	config->top = top;
	config->home = home;
	config->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
}

void host_config_load(struct host_config *config)
{
	for (size_t i = 0; i < config->named_count; i++) free(config->named[i]);
	free(config->named);
	config->named = NULL;
	config->named_count = 0;
	free(config->problem);
	config->problem = NULL;

	if (config->inotify_fd >= 0) {
		for (size_t i = 0; i < watch_count; i++) inotify_rm_watch(config->inotify_fd, watches[i].wd);
		watch_count = 0;
		watching = config;
		char path[PATH_MAX];
		/* Where git looks even when a file is absent now: system, global (both places), the repository's. */
		watch_file("/etc/gitconfig");
		snprintf(path, sizeof path, "%s/.gitconfig", config->home);
		watch_file(path);
		snprintf(path, sizeof path, "%s/.config/git/config", config->home);
		watch_file(path);
		snprintf(path, sizeof path, "%s/.git/config", config->top);
		watch_file(path);
		snprintf(path, sizeof path, "%s/.git/config.worktree", config->top);
		watch_file(path);
	} else {
		set_problem(config, "cannot watch host git configuration: %s", "inotify is unavailable");
		return;
	}

	char *output = NULL;
	char error[1024] = "";
	ssize_t length = run_git_config(config, &output, error, sizeof error);
	if (length < 0) {
		for (char *end = error + strlen(error); end > error && (end[-1] == '\n' || end[-1] == ' '); end--) end[-1] = '\0';
		set_problem(config, "host git configuration cannot be read, so every change in the repository is refused until it can: %s", error);
		return;
	}
	for (char *p = output; p < output + length;) {
		char *origin = p;
		p += strlen(p) + 1;
		if (p >= output + length) break;
		char *entry = p;
		p += strlen(p) + 1;
		char *newline = strchr(entry, '\n');
		const char *value = NULL;
		if (newline) {
			*newline = '\0';
			value = newline + 1;
		}
		consider(config, origin, entry, value);
	}
	free(output);
}

int host_config_changed(struct host_config *config)
{
	if (config->inotify_fd < 0) return 0;
	int changed = 0;
	char buffer[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	for (;;) {
		ssize_t n = read(config->inotify_fd, buffer, sizeof buffer);
		if (n <= 0) break;
		for (char *p = buffer; p < buffer + n;) {
			struct inotify_event *event = (struct inotify_event *)p;
			p += sizeof *event + event->len;
			if (event->mask & IN_Q_OVERFLOW) {
				changed = 1;
				continue;
			}
			/* A watched directory gone or moved (IN_IGNORED follows), or an event on a watched name. Watches
			 * removed by the last load also report IN_IGNORED: their descriptors are no longer listed. */
			int self = (event->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) != 0;
			for (size_t i = 0; i < watch_count; i++)
				if (watches[i].wd == event->wd && (self || (event->len > 0 && strcmp(watches[i].name, event->name) == 0))) changed = 1;
		}
	}
	return changed;
}
