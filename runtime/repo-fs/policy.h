/* What the guest may change in a repository it shares with the host: rules by path, evaluated on every
 * operation (see docs/repository-guard.md). Pure functions of the path and the rule set, plus one callback
 * that asks the real tree whether a directory under `.git/modules` is a submodule's git dir. */
#ifndef REPO_FS_POLICY_H
#define REPO_FS_POLICY_H

#include <stddef.h>

/* Where a repository the guest makes (a `.git` the host does not have there) is kept: a name host git
 * never reads, so its config and hooks never run on the host. The guest sees it as `.git`. */
#define REPO_QUARANTINE_NAME ".git-session-sandbox"

enum repo_op {
	REPO_OP_CREATE,  /* a new entry at the path: file, directory, symlink, socket, hard link, rename onto */
	REPO_OP_WRITE,   /* open for writing, truncate, write */
	REPO_OP_REMOVE,  /* unlink, rmdir, rename away */
	REPO_OP_SETATTR, /* chmod, chown, utimes */
};

struct repo_rules {
	/* The mount root is itself a git dir (a linked worktree's main repository), not a work tree. */
	int root_is_gitdir;
	/* Git dirs inside the tree under another name than `.git` (a top-level gitfile pointing inside). */
	char **gitdirs;
	size_t gitdir_count;
	/* Directories from the top down to the session directory: the guest may not remove or rename them. */
	char **keep;
	size_t keep_count;
	/* Paths inside the work tree that host configuration names (hooks path, included files, programs). */
	char **host_named;
	size_t host_named_count;
	/* Set while host configuration could not be read: every change is refused until it can. */
	const char *host_config_problem;
	/* Whether `rel` (a git dir's `worktrees/<name>`) is an entry the guest made itself (`git worktree add`
	 * in the sandbox): no host git reads its commondir or gitdir, so they are the guest's to write. */
	int (*is_guest_worktree)(void *context, const char *rel);
	/* Whether `rel` (a directory under a git dir's `modules/`) is an existing submodule git dir. */
	int (*is_module_gitdir)(void *context, const char *rel);
	void *context;
};

/* NULL when the guest may do `op` at `rel` ("" is the root, no leading slash); otherwise the reason. */
const char *repo_policy_check(const struct repo_rules *rules, const char *rel, enum repo_op op);

/* Whether `rel` is a linked worktree's entry, `<git dir>/worktrees/<name>`. */
int repo_policy_is_worktree_entry(const struct repo_rules *rules, const char *rel);

/* Whether `rel` is a rebase or sequencer todo list: writable only while it holds no `exec` line. */
int repo_policy_is_todo(const struct repo_rules *rules, const char *rel);

/* Whether a todo list holds a line git would run as a command (`exec`/`x`). */
int repo_todo_has_exec(const char *text, size_t length);

const char *repo_op_name(enum repo_op op);

#endif
