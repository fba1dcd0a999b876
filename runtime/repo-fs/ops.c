/* The FUSE operations: each resolves the guest's path beneath the root (paths.c), asks the rules
 * (checks.c), then does the one system call on the real directory. */
#define _GNU_SOURCE
#define FUSE_USE_VERSION 35
#include <fuse.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "view.h"

/* One `*at` system call on the entry `rel` names, from its parent directory: 0, or -errno. */
typedef int (*at_call)(int dir, const char *name, const void *argument);

static int at_parent(const char *rel, at_call call, const void *argument)
{
	const char *name;
	int dir = open_parent(rel, &name);
	if (dir < 0) return dir;
	int result = call(dir, name, argument) == 0 ? 0 : -errno;
	close(dir);
	return result;
}

static int make_node(int dir, const char *name, const void *mode) { return mknodat(dir, name, *(const mode_t *)mode, 0); }
static int make_directory(int dir, const char *name, const void *mode) { return mkdirat(dir, name, *(const mode_t *)mode & 01777); }
static int unlink_entry(int dir, const char *name, const void *flags) { return unlinkat(dir, name, *(const int *)flags); }
static int make_symlink(int dir, const char *name, const void *target) { return symlinkat(target, dir, name); }

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
	return at_parent(rel, make_node, &mode);
}

static int op_mkdir(const char *path, mode_t mode)
{
	REAL_REL(rel, path);
	int result = allowed(rel, REPO_OP_CREATE);
	if (result) return result;
	result = at_parent(rel, make_directory, &mode);
	if (!result && repo_policy_is_worktree_entry(&g.rules, rel)) remember_guest_worktree(rel);
	return result;
}

/* Whether the directory `rel` holds anything (an unreadable one counts as holding something). */
static int has_entries(const char *rel)
{
	int fd = open_beneath(rel, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0) return 1;
	DIR *dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return 1;
	}
	int found = 0;
	struct dirent *entry;
	while (!found && (entry = readdir(dir)) != NULL) found = strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0;
	closedir(dir);
	return found;
}

static int remove_entry(const char *path, int flags)
{
	REAL_REL(rel, path);
	/* git removes a file, then tries each parent directory up to the top, expecting ENOTEMPTY: a
	 * directory that is not empty answers that, as it would anyway, rather than a logged refusal. */
	if ((flags & AT_REMOVEDIR) && would_refuse(rel, REPO_OP_REMOVE) && has_entries(rel)) return -ENOTEMPTY;
	int result = allowed(rel, REPO_OP_REMOVE);
	if (result) return result;
	return at_parent(rel, unlink_entry, &flags);
}

static int op_unlink(const char *path) { return remove_entry(path, 0); }
static int op_rmdir(const char *path) { return remove_entry(path, AT_REMOVEDIR); }

static int op_symlink(const char *target, const char *path)
{
	REAL_REL(rel, path);
	int result = allowed(rel, REPO_OP_CREATE);
	if (result) return result;
	return at_parent(rel, make_symlink, target);
}

/* The parents of two entries (rename, link): 0 with both open, or -errno with neither. */
static int open_parents(const char *from, int *from_dir, const char **from_name, const char *to, int *to_dir, const char **to_name)
{
	if ((*from_dir = open_parent(from, from_name)) < 0) return *from_dir;
	if ((*to_dir = open_parent(to, to_name)) < 0) {
		close(*from_dir);
		return *to_dir;
	}
	return 0;
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
	int from_dir, to_dir;
	if ((result = open_parents(from, &from_dir, &from_name, to, &to_dir, &to_name))) return result;
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
	int from_dir, to_dir;
	if ((result = open_parents(from, &from_dir, &from_name, to, &to_dir, &to_name))) return result;
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

const struct fuse_operations repo_fs_operations = {
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
