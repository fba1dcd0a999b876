/* What the view's parts share: the one served directory's state, path resolution beneath it (paths.c),
 * and the rule checks with their refusal log (checks.c). */
#ifndef REPO_FS_VIEW_H
#define REPO_FS_VIEW_H

#include <limits.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "host-config.h"
#include "policy.h"

#define MAX_KEEP 256

struct view {
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
};


extern struct view g;

/* paths.c: every path resolved beneath the root, never through a symlink. */
int open_beneath(const char *rel, int flags, mode_t mode);
int open_parent(const char *rel, const char **name);
const char *real_rel(const char *path, char out[PATH_MAX]);
const char *current_rel(int fd, char buffer[PATH_MAX]);
void map_ids(struct stat *st);
int module_gitdir(void *context, const char *rel);
int guest_worktree(void *context, const char *rel);
void remember_guest_worktree(const char *rel);

#define REAL_REL(var, path)                          \
	char var##_buffer[PATH_MAX];                  \
	const char *var = real_rel(path, var##_buffer); \
	if (!var) return -errno

/* checks.c: the rules applied, and each refusal logged. */
void rules_lock(void);
void rules_unlock(void);
void refresh_rules(void);
void log_refusal(const char *op, const char *rel, const char *reason);
int allowed(const char *rel, enum repo_op op);
/* Whether the rules refuse `op` at `rel`, without logging it (the caller answers another way). */
int would_refuse(const char *rel, enum repo_op op);
int todo_write_allowed(int fd, const char *rel, const char *data, size_t size, off_t offset);
int todo_source_allowed(const char *from, const char *to);

#endif
