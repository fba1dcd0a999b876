/* The sandbox's view of a repository: a FUSE file system that passes every operation through to the real
 * directory and refuses the changes the repository rules forbid (policy.c), on every operation and by
 * path, so nothing the host does afterwards (renames, editor saves, git clean, new host config) can
 * dissolve a rule the way it dissolves a bind mount. One daemon serves one directory to one VM.
 *
 * Every access goes through openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) from the pinned root, so no
 * path a guest builds (symlinks, "..", mount points) reaches outside it or anywhere the rules did not
 * judge. The daemon mounts as root and then runs as the directory's owner with no capabilities: what it
 * can change is what the guest's root could change with today's id-mapped mount. The kernel checks
 * permissions (default_permissions) against the ids this daemon reports: the owner's files show as owned
 * by the VM's root.
 *
 *   repo-fs --root DIR --mountpoint MP --pin DEV:INO --guest-id ID [--gitdir-root] [--gitdir REL]... [--keep REL]...
 *           [--log FILE] [--ready-fd N]
 *   repo-fs --explain --root DIR [--gitdir-root] [--keep REL]... (create|write|remove|setattr) REL
 *   repo-fs --named --root DIR          (the in-tree paths host git config names, one per line)
 */
#define _GNU_SOURCE
#define FUSE_USE_VERSION 35
#include <fuse.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "host-config.h"
#include "policy.h"

#define MAX_KEEP 256
#define TODO_LIMIT (1 << 20)
#define LOG_LIMIT (1 << 20)

static struct {
	int root_fd;           /* O_PATH, pinned */
	char root_path[PATH_MAX];
	size_t root_path_length;
	uid_t owner_uid, guest_uid;
	gid_t owner_gid, guest_gid;
	int gitdir_root;
	struct repo_rules rules;
	struct host_config config;
	int log_fd;
	char *keep[MAX_KEEP];
	size_t keep_count;
	char *gitdirs[MAX_KEEP];
	size_t gitdir_count;
} g = {.root_fd = -1, .log_fd = -1};

/* ---- rules and the refusal log ---- */

static void refresh_rules(void)
{
	if (g.gitdir_root) return;
	if (host_config_changed(&g.config)) host_config_load(&g.config);
	g.rules.host_named = g.config.named;
	g.rules.host_named_count = g.config.named_count;
	g.rules.host_config_problem = g.config.problem;
}

static void log_refusal(const char *op, const char *rel, const char *reason)
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
static int allowed(const char *rel, enum repo_op op)
{
	refresh_rules();
	const char *reason = repo_policy_check(&g.rules, rel, op);
	if (!reason) return 0;
	log_refusal(repo_op_name(op), rel, reason);
	return -EACCES;
}

/* ---- paths, always resolved beneath the root without following any symlink ---- */

static int open_beneath(const char *rel, int flags, mode_t mode);

/* Whether the directory `dir` (relative to the root) holds a real `.git` entry of the host's. */
static int has_real_dotgit(const char *dir)
{
	int fd = open_beneath(dir, O_PATH | O_DIRECTORY, 0);
	if (fd < 0) return 0;
	struct stat st;
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
static const char *real_rel(const char *path, char out[PATH_MAX])
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

#define REAL_REL(var, path)                          \
	char var##_buffer[PATH_MAX];                  \
	const char *var = real_rel(path, var##_buffer); \
	if (!var) return -errno

static int open_beneath(const char *rel, int flags, mode_t mode)
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
static int open_parent(const char *rel, const char **name)
{
	const char *slash = strrchr(rel, '/');
	if (!rel[0]) return -EINVAL;
	if (!slash) {
		*name = rel;
		return open_beneath("", O_PATH | O_DIRECTORY, 0);
	}
	char parent[PATH_MAX];
	if ((size_t)(slash - rel) >= sizeof parent) return -ENAMETOOLONG;
	memcpy(parent, rel, (size_t)(slash - rel));
	parent[slash - rel] = '\0';
	*name = slash + 1;
	return open_beneath(parent, O_PATH | O_DIRECTORY, 0);
}

/* Where an open file is now (renames on the host included), relative to the root; NULL if outside it. */
static const char *current_rel(int fd, char buffer[PATH_MAX])
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

static int guest_worktree(void *context, const char *rel)
{
	(void)context;
	struct stat st;
	if (guest_worktree_count == 0 || identity_of(rel, &st) != 0) return 0;
	for (size_t i = 0; i < guest_worktree_count; i++)
		if (guest_worktrees[i].dev == st.st_dev && guest_worktrees[i].ino == st.st_ino) return 1;
	return 0;
}

static void remember_guest_worktree(const char *rel)
{
	struct stat st;
	if (guest_worktree_count == MAX_GUEST_WORKTREES || identity_of(rel, &st) != 0) return;
	guest_worktrees[guest_worktree_count].dev = st.st_dev;
	guest_worktrees[guest_worktree_count].ino = st.st_ino;
	guest_worktree_count++;
}

static void map_ids(struct stat *st)
{
	if (st->st_uid == g.owner_uid) st->st_uid = g.guest_uid;
	if (st->st_gid == g.owner_gid) st->st_gid = g.guest_gid;
}

/* A todo list may be written only while the result holds no `exec` line (policy.h). */
static int todo_write_allowed(int fd, const char *rel, const char *data, size_t size, off_t offset)
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
static int todo_source_allowed(const char *from, const char *to)
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

/* ---- FUSE operations ---- */

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	cfg->use_ino = 1;
	cfg->hard_remove = 1; /* no .fuse_hidden files in the user's repository */
	cfg->nullpath_ok = 0;
	cfg->auto_cache = 1;  /* host edits show at the next open */
	cfg->entry_timeout = 1;
	cfg->attr_timeout = 1;
	cfg->negative_timeout = 0; /* a file the host just made is there at once */
	return NULL;
}

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	REAL_REL(rel, path);
	int result;
	if (fi && fi->fh) result = fstat((int)fi->fh, st);
	else if (!rel[0]) result = fstat(g.root_fd, st);
	else {
		const char *name;
		int dir = open_parent(rel, &name);
		if (dir < 0) return dir;
		result = fstatat(dir, name, st, AT_SYMLINK_NOFOLLOW);
		close(dir);
	}
	if (result != 0) return -errno;
	map_ids(st);
	return 0;
}

static int op_readlink(const char *path, char *buffer, size_t size)
{
	const char *name;
	REAL_REL(rel, path);
	int dir = open_parent(rel, &name);
	if (dir < 0) return dir;
	ssize_t n = readlinkat(dir, name, buffer, size - 1);
	int error = errno;
	close(dir);
	if (n < 0) return -error;
	buffer[n] = '\0';
	return 0;
}

static int refuse_set_id(const char *rel, mode_t mode)
{
	if (!(mode & (S_ISUID | S_ISGID)) || S_ISDIR(mode)) return 0;
	log_refusal("setattr", rel, "a setuid or setgid file in the repository would run with its owner's rights on the host");
	return -EPERM;
}

static int op_mknod(const char *path, mode_t mode, dev_t rdev)
{
	(void)rdev;
	REAL_REL(rel, path);
	if (!S_ISREG(mode) && !S_ISSOCK(mode)) {
		/* A FIFO blocks whoever on the host opens it; devices are never the guest's to make. */
		log_refusal("create", rel, "a FIFO or device node in the repository could hang a host program");
		return -EPERM;
	}
	int result = allowed(rel, REPO_OP_CREATE);
	if (result) return result;
	if ((result = refuse_set_id(rel, mode))) return result;
	const char *name;
	int dir = open_parent(rel, &name);
	if (dir < 0) return dir;
	result = mknodat(dir, name, mode, 0) == 0 ? 0 : -errno;
	close(dir);
	return result;
}

static int op_mkdir(const char *path, mode_t mode)
{
	REAL_REL(rel, path);
	int result = allowed(rel, REPO_OP_CREATE);
	if (result) return result;
	const char *name;
	int dir = open_parent(rel, &name);
	if (dir < 0) return dir;
	result = mkdirat(dir, name, mode & 01777) == 0 ? 0 : -errno;
	close(dir);
	if (!result && repo_policy_is_worktree_entry(&g.rules, rel)) remember_guest_worktree(rel);
	return result;
}

static int remove_entry(const char *path, int flags)
{
	REAL_REL(rel, path);
	int result = allowed(rel, REPO_OP_REMOVE);
	if (result) return result;
	const char *name;
	int dir = open_parent(rel, &name);
	if (dir < 0) return dir;
	result = unlinkat(dir, name, flags) == 0 ? 0 : -errno;
	close(dir);
	return result;
}

static int op_unlink(const char *path) { return remove_entry(path, 0); }
static int op_rmdir(const char *path) { return remove_entry(path, AT_REMOVEDIR); }

static int op_symlink(const char *target, const char *path)
{
	REAL_REL(rel, path);
	int result = allowed(rel, REPO_OP_CREATE);
	if (result) return result;
	const char *name;
	int dir = open_parent(rel, &name);
	if (dir < 0) return dir;
	result = symlinkat(target, dir, name) == 0 ? 0 : -errno;
	close(dir);
	return result;
}

/* A directory moved into a git dir would bring content no rule has judged (e.g. a ready todo list). */
static int is_inside_gitdir(const char *rel)
{
	if (g.gitdir_root) return 1;
	for (size_t i = 0; i < g.gitdir_count; i++) {
		size_t n = strlen(g.gitdirs[i]);
		if (strncmp(rel, g.gitdirs[i], n) == 0 && rel[n] == '/') return 1;
	}
	for (const char *p = rel; (p = strcasestr(p, ".git")) != NULL; p += 4)
		if ((p == rel || p[-1] == '/') && (p[4] == '/')) return 1;
	return 0;
}

static int op_rename(const char *from_path, const char *to_path, unsigned int flags)
{
	REAL_REL(from, from_path);
	REAL_REL(to, to_path);
	if (flags & RENAME_WHITEOUT) return -EINVAL;
	int result;
	if ((result = allowed(from, REPO_OP_REMOVE)) || (result = allowed(to, REPO_OP_CREATE))) return result;
	if ((flags & RENAME_EXCHANGE) && ((result = allowed(from, REPO_OP_CREATE)) || (result = allowed(to, REPO_OP_REMOVE)))) return result;
	const char *from_name, *to_name;
	int from_dir = open_parent(from, &from_name);
	if (from_dir < 0) return from_dir;
	int to_dir = open_parent(to, &to_name);
	if (to_dir < 0) {
		close(from_dir);
		return to_dir;
	}
	struct stat st;
	if (fstatat(from_dir, from_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) && is_inside_gitdir(to)) {
		log_refusal("create", to, "a directory moved into a git directory would bring in files no rule has checked");
		result = -EACCES;
	} else if (repo_policy_is_todo(&g.rules, to)) {
		result = todo_source_allowed(from, to);
	}
	if (!result) result = syscall(SYS_renameat2, from_dir, from_name, to_dir, to_name, flags) == 0 ? 0 : -errno;
	close(from_dir);
	close(to_dir);
	return result;
}

static int op_link(const char *from_path, const char *to_path)
{
	REAL_REL(from, from_path);
	REAL_REL(to, to_path);
	/* A second name for a file is a second way to write it. */
	int result;
	if ((result = allowed(from, REPO_OP_WRITE)) || (result = allowed(to, REPO_OP_CREATE))) return result;
	if (repo_policy_is_todo(&g.rules, to) && (result = todo_source_allowed(from, to))) return result;
	const char *from_name, *to_name;
	int from_dir = open_parent(from, &from_name);
	if (from_dir < 0) return from_dir;
	int to_dir = open_parent(to, &to_name);
	if (to_dir < 0) {
		close(from_dir);
		return to_dir;
	}
	result = linkat(from_dir, from_name, to_dir, to_name, 0) == 0 ? 0 : -errno;
	close(from_dir);
	close(to_dir);
	return result;
}

static int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	REAL_REL(rel, path);
	int result = allowed(rel, REPO_OP_SETATTR);
	if (result) return result;
	int fd = fi && fi->fh ? (int)fi->fh : open_beneath(rel, O_PATH, 0);
	if (fd < 0) return fd;
	struct stat st;
	if (fstat(fd, &st) != 0) result = -errno;
	else if (S_ISLNK(st.st_mode)) result = -EOPNOTSUPP;
	else if (!(result = refuse_set_id(rel, (mode & 07777) | (st.st_mode & S_IFMT)))) {
		char link[64];
		snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
		result = chmod(link, mode & 07777) == 0 ? 0 : -errno;
	}
	if (!(fi && fi->fh)) close(fd);
	return result;
}

static int op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	REAL_REL(rel, path);
	int result = allowed(rel, REPO_OP_SETATTR);
	if (result) return result;
	/* The guest's root is the owner on disk; no other id is the guest's to give. */
	if ((uid != (uid_t)-1 && uid != g.guest_uid) || (gid != (gid_t)-1 && gid != g.guest_gid)) return -EPERM;
	uid_t to_uid = uid == (uid_t)-1 ? (uid_t)-1 : g.owner_uid;
	gid_t to_gid = gid == (gid_t)-1 ? (gid_t)-1 : g.owner_gid;
	if (fi && fi->fh) return fchown((int)fi->fh, to_uid, to_gid) == 0 ? 0 : -errno;
	const char *name;
	if (!rel[0]) return fchownat(g.root_fd, "", to_uid, to_gid, AT_EMPTY_PATH) == 0 ? 0 : -errno;
	int dir = open_parent(rel, &name);
	if (dir < 0) return dir;
	result = fchownat(dir, name, to_uid, to_gid, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : -errno;
	close(dir);
	return result;
}

/* A regular file opened for writing, unless it has other names: through one of them, perhaps outside
 * the repository (a package manager's store), the guest would change a file the host runs. */
static int open_for_write(const char *rel, int flags, mode_t mode, int creating)
{
	int fd = open_beneath(rel, flags | O_NONBLOCK, mode);
	if (fd < 0) return fd;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EACCES;
	}
	if (st.st_nlink > 1 && !(creating && (flags & O_EXCL))) {
		close(fd);
		log_refusal("write", rel, "the file has other hard links, which may lie outside the repository");
		return -EACCES;
	}
	if (!(flags & O_NONBLOCK)) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	REAL_REL(rel, path);
	int result = allowed(rel, REPO_OP_WRITE);
	if (result) return result;
	if (fi && fi->fh) return ftruncate((int)fi->fh, size) == 0 ? 0 : -errno;
	int fd = open_for_write(rel, O_WRONLY, 0, 0);
	if (fd < 0) return fd;
	result = ftruncate(fd, size) == 0 ? 0 : -errno;
	close(fd);
	return result;
}

static int op_utimens(const char *path, const struct timespec times[2], struct fuse_file_info *fi)
{
	REAL_REL(rel, path);
	int result = allowed(rel, REPO_OP_SETATTR);
	if (result) return result;
	if (fi && fi->fh) return futimens((int)fi->fh, times) == 0 ? 0 : -errno;
	if (!rel[0]) {
		int fd = open_beneath("", O_RDONLY | O_DIRECTORY, 0);
		if (fd < 0) return fd;
		result = futimens(fd, times) == 0 ? 0 : -errno;
		close(fd);
		return result;
	}
	const char *name;
	int dir = open_parent(rel, &name);
	if (dir < 0) return dir;
	result = utimensat(dir, name, times, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : -errno;
	close(dir);
	return result;
}

static int writes(int flags) { return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC); }

/* The open flags passed on: openat2 refuses bits it does not know, and the kernel hands FUSE some of its
 * own (exec's __FMODE_EXEC, O_LARGEFILE). O_DIRECT is dropped: alignment rules differ below. */
static int passed_flags(int flags)
{
	return flags & (O_ACCMODE | O_APPEND | O_TRUNC | O_NONBLOCK | O_DSYNC | O_SYNC | O_NOATIME | O_EXCL);
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
	REAL_REL(rel, path);
	int flags = passed_flags(fi->flags) & ~O_EXCL;
	int fd;
	if (writes(flags)) {
		int result = allowed(rel, REPO_OP_WRITE);
		if (result) return result;
		fd = open_for_write(rel, flags, 0, 0);
	} else {
		/* Non-blocking first: a FIFO made on the host must not hang the daemon; only files are served. */
		fd = open_beneath(rel, flags | O_NONBLOCK, 0);
		if (fd >= 0) {
			struct stat st;
			if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
				close(fd);
				return -EACCES;
			}
			if (!(flags & O_NONBLOCK)) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		}
	}
	if (fd < 0) return fd;
	fi->fh = (uint64_t)fd;
	return 0;
}

static int op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	REAL_REL(rel, path);
	int result = allowed(rel, REPO_OP_CREATE);
	if (result) return result;
	if ((result = refuse_set_id(rel, mode | S_IFREG))) return result;
	int fd = open_for_write(rel, passed_flags(fi->flags) | O_CREAT, mode & 01777, 1);
	if (fd < 0) return fd;
	fi->fh = (uint64_t)fd;
	return 0;
}

static int op_read(const char *path, char *buffer, size_t size, off_t offset, struct fuse_file_info *fi)
{
	(void)path;
	ssize_t n = pread((int)fi->fh, buffer, size, offset);
	return n < 0 ? -errno : (int)n;
}

static int op_write(const char *path, const char *data, size_t size, off_t offset, struct fuse_file_info *fi)
{
	(void)path;
	int fd = (int)fi->fh;
	/* Judged where the file is now: the host may have renamed it since it was opened (an editor's save).
	 * A file no name leads to any more (replaced or removed since) is nobody's to run: written as is. */
	struct stat st;
	if (fstat(fd, &st) == 0 && st.st_nlink == 0) {
		ssize_t n = pwrite(fd, data, size, offset);
		return n < 0 ? -errno : (int)n;
	}
	char buffer[PATH_MAX];
	const char *rel = current_rel(fd, buffer);
	if (!rel) {
		log_refusal("write", path, "the open file is no longer inside the repository");
		return -EACCES;
	}
	int result = allowed(rel, REPO_OP_WRITE);
	if (result) return result;
	if (repo_policy_is_todo(&g.rules, rel) && (result = todo_write_allowed(fd, rel, data, size, offset))) return result;
	ssize_t n = pwrite(fd, data, size, offset);
	return n < 0 ? -errno : (int)n;
}

static int op_statfs(const char *path, struct statvfs *st)
{
	(void)path;
	int fd = open_beneath("", O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0) return fd;
	int result = fstatvfs(fd, st) == 0 ? 0 : -errno;
	close(fd);
	return result;
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	close((int)fi->fh);
	return 0;
}

static int op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path;
	int fd = (int)fi->fh;
	return (datasync ? fdatasync(fd) : fsync(fd)) == 0 ? 0 : -errno;
}

static int op_opendir(const char *path, struct fuse_file_info *fi)
{
	REAL_REL(rel, path);
	int fd = open_beneath(rel, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0) return fd;
	DIR *dir = fdopendir(fd);
	if (!dir) {
		int error = errno;
		close(fd);
		return -error;
	}
	fi->fh = (uint64_t)(uintptr_t)dir;
	return 0;
}

static int op_readdir(const char *path, void *buffer, fuse_fill_dir_t fill, off_t offset, struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)path;
	(void)offset;
	(void)flags;
	DIR *dir = (DIR *)(uintptr_t)fi->fh;
	rewinddir(dir);
	struct stat dotgit;
	int host_has_dotgit = fstatat(dirfd(dir), ".git", &dotgit, AT_SYMLINK_NOFOLLOW) == 0;
	struct dirent *entry;
	while ((entry = readdir(dir)) != NULL) {
		const char *name = entry->d_name;
		/* The guest's own repository shows as its `.git`, unless the host has a `.git` here. */
		if (!g.gitdir_root && strcmp(name, REPO_QUARANTINE_NAME) == 0) {
			if (host_has_dotgit) continue;
			name = ".git";
		}
		struct stat st = {.st_ino = entry->d_ino, .st_mode = (mode_t)(entry->d_type << 12)};
		if (fill(buffer, name, &st, 0, 0)) break;
	}
	return 0;
}

static int op_releasedir(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	closedir((DIR *)(uintptr_t)fi->fh);
	return 0;
}

static const struct fuse_operations operations = {
	.init = op_init,
	.getattr = op_getattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.chmod = op_chmod,
	.chown = op_chown,
	.truncate = op_truncate,
	.utimens = op_utimens,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.write = op_write,
	.statfs = op_statfs,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.releasedir = op_releasedir,
};

/* ---- start-up ---- */

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

static int module_gitdir(void *context, const char *rel)
{
	(void)context;
	int fd = open_beneath(rel, O_PATH | O_DIRECTORY, 0);
	if (fd < 0) return 0;
	struct stat st;
	int found = fstatat(fd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
	close(fd);
	return found;
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
	const char *root = NULL, *mountpoint = NULL, *pin = NULL, *log_path = NULL;
	long guest_id = -1;
	int ready_fd = -1, explain = 0, named = 0;
	int i = 1;
	for (; i < argc; i++) {
		const char *arg = argv[i];
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(arg, "--root") == 0 && next) root = argv[++i];
		else if (strcmp(arg, "--mountpoint") == 0 && next) mountpoint = argv[++i];
		else if (strcmp(arg, "--pin") == 0 && next) pin = argv[++i];
		else if (strcmp(arg, "--guest-id") == 0 && next) guest_id = strtol(argv[++i], NULL, 10);
		else if (strcmp(arg, "--log") == 0 && next) log_path = argv[++i];
		else if (strcmp(arg, "--ready-fd") == 0 && next) ready_fd = (int)strtol(argv[++i], NULL, 10);
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
	if (!root) die("usage: repo-fs --root DIR --mountpoint MP --pin DEV:INO --guest-id ID [--gitdir-root] [--keep REL]... [--log FILE] [--ready-fd N]");

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
	struct fuse *fuse = fuse_new(&args, &operations, sizeof operations, NULL);
	if (!fuse) die("cannot create the file system");
	if (fuse_mount(fuse, mountpoint) != 0) die("cannot mount on %s", mountpoint);
	drop_privileges();
	struct fuse_session *session = fuse_get_session(fuse);
	if (fuse_set_signal_handlers(session) != 0) die("cannot set signal handlers");
	if (ready_fd >= 0) {
		if (write(ready_fd, "ready\n", 6) < 0) {}
		close(ready_fd);
	}
	int status = fuse_loop(fuse);
	fuse_remove_signal_handlers(session);
	fuse_unmount(fuse);
	fuse_destroy(fuse);
	return status < 0 ? 1 : 0;
}
