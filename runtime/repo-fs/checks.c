/* view.h, checks: the repository rules applied to an operation, the todo-list content rule, and the
 * refusal log (one JSON line per refusal, the guest's path escaped, at most LOG_LIMIT bytes). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>

#include "view.h"

/* The rules change when host config does (refresh_rules): one thread at a time reads or reloads them. */
static pthread_mutex_t rules_mutex = PTHREAD_MUTEX_INITIALIZER;

void rules_lock(void) { pthread_mutex_lock(&rules_mutex); }
void rules_unlock(void) { pthread_mutex_unlock(&rules_mutex); }

#define TODO_LIMIT (1 << 20)
#define LOG_LIMIT (1 << 20)

void refresh_rules(void)
{
	if (g.gitdir_root) return;
	if (host_config_changed(&g.config)) host_config_load(&g.config);
	g.rules.host_named = g.config.named;
	g.rules.host_named_count = g.config.named_count;
	g.rules.host_config_problem = g.config.problem;
}

void log_refusal(const char *op, const char *rel, const char *reason)
{
	if (g.log_fd < 0) return;
	struct stat st;
	if (fstat(g.log_fd, &st) == 0 && st.st_size > LOG_LIMIT && ftruncate(g.log_fd, 0) == 0) lseek(g.log_fd, 0, SEEK_SET);
	/* The path is the guest's: escaped so each refusal stays one JSON line. */
	char line[PATH_MAX * 6 + 1024];
	size_t used = (size_t)snprintf(line, sizeof line, "{\"at\":%ld,\"op\":\"%s\",\"path\":\"", (long)time(NULL), op);
	for (const unsigned char *c = (const unsigned char *)rel; *c && used + 8 < sizeof line - 512; c++) {
		if (*c == '"' || *c == '\\') used += (size_t)snprintf(line + used, sizeof line - used, "\\%c", *c);
		else if (*c < 0x20 || *c == 0x7f) used += (size_t)snprintf(line + used, sizeof line - used, "\\u%04x", *c);
		else line[used++] = (char)*c;
	}
	used += (size_t)snprintf(line + used, sizeof line - used, "\",\"reason\":\"%s\"}\n", reason);
	if (used > sizeof line) used = sizeof line;
	if (write(g.log_fd, line, used) < 0) {}
}

/* 0 when allowed; -EACCES (logged) when the rules refuse. */
int would_refuse(const char *rel, enum repo_op op)
{
	rules_lock();
	refresh_rules();
	int refused = repo_policy_check(&g.rules, rel, op) != NULL;
	rules_unlock();
	return refused;
}

int allowed(const char *rel, enum repo_op op)
{
	rules_lock();
	refresh_rules();
	const char *reason = repo_policy_check(&g.rules, rel, op);
	rules_unlock();
	if (!reason) return 0;
	log_refusal(repo_op_name(op), rel, reason);
	return -EACCES;
}

/* A todo list may be written only while the result holds no `exec` line (policy.h). */
int todo_write_allowed(int fd, const char *rel, const char *data, size_t size, off_t offset)
{
	struct stat st;
	if (fstat(fd, &st) != 0) return -errno;
	size_t end = (size_t)offset + size;
	size_t length = (size_t)st.st_size > end ? (size_t)st.st_size : end;
	if (length > TODO_LIMIT) {
		log_refusal("write", rel, "a rebase todo list over 1 MiB");
		return -EFBIG;
	}
	char *content = calloc(1, length + 1);
	if (!content) return -ENOMEM;
	/* The guest's descriptor may be write-only: the file is read through a second, read-only one. */
	char link[64];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	int reader = open(link, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ssize_t got = reader < 0 ? -1 : pread(reader, content, (size_t)st.st_size, 0);
	if (reader >= 0) close(reader);
	if (got != (ssize_t)st.st_size) {
		free(content);
		log_refusal("write", rel, "the rebase todo list could not be read back to check it");
		return -EACCES;
	}
	/* O_APPEND: the kernel's offset is where the data lands (the end). */
	memcpy(content + offset, data, size);
	int has_exec = repo_todo_has_exec(content, length);
	free(content);
	if (!has_exec) return 0;
	log_refusal("write", rel, "an exec line in a rebase todo list would run on the host at `git rebase --continue`");
	return -EACCES;
}

/* The content of `rel` (a file about to become a todo list by rename or link) holds no exec line. */
int todo_source_allowed(const char *from, const char *to)
{
	int fd = open_beneath(from, O_RDONLY | O_NONBLOCK, 0);
	if (fd < 0) return fd;
	struct stat st;
	int result = 0;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > TODO_LIMIT) result = -EACCES;
	else {
		char *content = calloc(1, (size_t)st.st_size + 1);
		ssize_t got = content ? pread(fd, content, (size_t)st.st_size, 0) : -1;
		if (got < 0 || repo_todo_has_exec(content, (size_t)got)) result = -EACCES;
		free(content);
	}
	close(fd);
	if (result) log_refusal("create", to, "an exec line in a rebase todo list would run on the host at `git rebase --continue`");
	return result;
}
