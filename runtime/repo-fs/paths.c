/* view.h, paths: every path the guest names resolved beneath the pinned root, never through a symlink;
 * the guest's own repositories under the quarantine name; which worktree entries the guest made. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "view.h"

/* Whether the directory `dir` (relative to the root) holds a real `.git` entry of the host's. */
static int has_real_dotgit(const char *dir)
{
	struct stat st;
	/* The top's own `.git` (most paths git touches): one call on the pinned root, a single component. */
	if (!dir[0]) return fstatat(g.root_fd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0;
	int fd = open_beneath(dir, O_PATH | O_DIRECTORY, 0);
	if (fd < 0) return 0;
	int found = fstatat(fd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0;
	close(fd);
	return found;
}

/*
 * The real path behind a guest's path. A `.git` the host does not have in that directory is the
 * guest's own repository (a `git clone` or `git init` in the sandbox): it lives under the quarantine
 * name, where host git never looks, so host git never reads its config or runs its hooks (the user
 * renames it to `.git` to adopt it). The quarantine name itself is invisible to the guest. NULL (errno
 * set) for a path the guest cannot address.
 */
const char *real_rel(const char *path, char out[PATH_MAX])
{
	while (*path == '/') path++;
	size_t used = 0;
	out[0] = '\0';
	const char *p = path;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t length = slash ? (size_t)(slash - p) : strlen(p);
		const char *name = p;
		size_t name_length = length;
		if (length == strlen(REPO_QUARANTINE_NAME) && strncmp(p, REPO_QUARANTINE_NAME, length) == 0) {
			errno = ENOENT;
			return NULL;
		}
		if (length == 4 && strncmp(p, ".git", 4) == 0 && !g.gitdir_root && !has_real_dotgit(out)) {
			name = REPO_QUARANTINE_NAME;
			name_length = strlen(REPO_QUARANTINE_NAME);
		}
		if (used + name_length + 2 >= PATH_MAX) {
			errno = ENAMETOOLONG;
			return NULL;
		}
		if (used) out[used++] = '/';
		memcpy(out + used, name, name_length);
		used += name_length;
		out[used] = '\0';
		if (!slash) break;
		p = slash + 1;
	}
	return out;
}

int open_beneath(const char *rel, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (unsigned long long)(flags | O_CLOEXEC | O_NOFOLLOW),
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	/* O_NOFOLLOW with O_PATH would open a final symlink itself, which is what the callers want. */
	int fd = (int)syscall(SYS_openat2, g.root_fd, rel[0] ? rel : ".", &how, sizeof how);
	return fd < 0 ? -errno : fd;
}

/* The parent directory of `rel` (O_PATH) and its last component; the root has no parent. */
int open_parent(const char *rel, const char **name)
{
	const char *slash = strrchr(rel, '/');
	if (!rel[0]) return -EINVAL;
	if (!slash) {
		/* An entry of the top: its parent is the pinned root itself (a copy, which the caller closes). */
		*name = rel;
		int fd = fcntl(g.root_fd, F_DUPFD_CLOEXEC, 0);
		return fd < 0 ? -errno : fd;
	}
	char parent[PATH_MAX];
	if ((size_t)(slash - rel) >= sizeof parent) return -ENAMETOOLONG;
	memcpy(parent, rel, (size_t)(slash - rel));
	parent[slash - rel] = '\0';
	*name = slash + 1;
	return open_beneath(parent, O_PATH | O_DIRECTORY, 0);
}

/* Where an open file is now (renames on the host included), relative to the root; NULL if outside it. */
const char *current_rel(int fd, char buffer[PATH_MAX])
{
	char link[64];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, buffer, PATH_MAX - 1);
	if (n < 0) return NULL;
	buffer[n] = '\0';
	if (strcmp(g.root_path, "/") == 0) return buffer + 1;
	if (strncmp(buffer, g.root_path, g.root_path_length) != 0) return NULL;
	if (buffer[g.root_path_length] == '\0') return buffer + g.root_path_length;
	if (buffer[g.root_path_length] != '/') return NULL;
	return buffer + g.root_path_length + 1;
}

/* Worktree entries the guest made, by inode (a name the host reuses later is the host's again). */
#define MAX_GUEST_WORKTREES 256
static struct {
	dev_t dev;
	ino_t ino;
} guest_worktrees[MAX_GUEST_WORKTREES];
static size_t guest_worktree_count;

static int identity_of(const char *rel, struct stat *st)
{
	int fd = open_beneath(rel, O_PATH | O_DIRECTORY, 0);
	if (fd < 0) return -1;
	int result = fstat(fd, st);
	close(fd);
	return result;
}

int guest_worktree(void *context, const char *rel)
{
	(void)context;
	struct stat st;
	if (guest_worktree_count == 0 || identity_of(rel, &st) != 0) return 0;
	for (size_t i = 0; i < guest_worktree_count; i++)
		if (guest_worktrees[i].dev == st.st_dev && guest_worktrees[i].ino == st.st_ino) return 1;
	return 0;
}

void remember_guest_worktree(const char *rel)
{
	struct stat st;
	if (identity_of(rel, &st) != 0) return;
	rules_lock(); /* guest_worktree() reads the list while the rules are checked */
	if (guest_worktree_count < MAX_GUEST_WORKTREES) {
		guest_worktrees[guest_worktree_count].dev = st.st_dev;
		guest_worktrees[guest_worktree_count].ino = st.st_ino;
		guest_worktree_count++;
	}
	rules_unlock();
}

void map_ids(struct stat *st)
{
	if (st->st_uid == g.owner_uid) st->st_uid = g.guest_uid;
	if (st->st_gid == g.owner_gid) st->st_gid = g.guest_gid;
}

int module_gitdir(void *context, const char *rel)
{
	(void)context;
	int fd = open_beneath(rel, O_PATH | O_DIRECTORY, 0);
	if (fd < 0) return 0;
	struct stat st;
	int found = fstatat(fd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
	close(fd);
	return found;
}
