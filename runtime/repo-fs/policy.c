/* The repository rules (policy.h). Inside a git dir everything is refused except the working state git
 * itself writes (objects, refs, logs, index, HEAD, rebase state, ...): an allow list, so a name a future
 * git reads as configuration is refused until it is known. In the work tree everything is allowed except
 * entries that make host programs run what they hold: `.git` itself (a directory or a gitfile, at any
 * depth), OpenCode's project config (at any depth), `.lfsconfig`, and whatever host git configuration
 * names inside the tree. Names are compared without case: the rules must hold on a case-folding
 * directory too. */
#include "policy.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define MAX_PARTS 256

struct parts {
	const char *name[MAX_PARTS];
	size_t length[MAX_PARTS];
	size_t count;
	int too_deep;
};

static void split(const char *rel, struct parts *out)
{
	out->count = 0;
	out->too_deep = 0;
	const char *p = rel;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t length = slash ? (size_t)(slash - p) : strlen(p);
		if (length > 0) {
			if (out->count == MAX_PARTS) {
				out->too_deep = 1;
				return;
			}
			out->name[out->count] = p;
			out->length[out->count] = length;
			out->count++;
		}
		if (!slash) break;
		p = slash + 1;
	}
}

static int is(const struct parts *parts, size_t i, const char *name)
{
	return parts->length[i] == strlen(name) && strncasecmp(parts->name[i], name, parts->length[i]) == 0;
}

static int is_any(const struct parts *parts, size_t i, const char *const *names)
{
	for (; *names; names++)
		if (is(parts, i, *names)) return 1;
	return 0;
}

static int starts_with(const struct parts *parts, size_t i, const char *prefix)
{
	size_t n = strlen(prefix);
	return parts->length[i] > n && strncasecmp(parts->name[i], prefix, n) == 0;
}

/* The part's name without a trailing ".lock" (git's lock files), as a length. */
static size_t unlocked_length(const struct parts *parts, size_t i)
{
	size_t n = parts->length[i];
	if (n > 5 && strncasecmp(parts->name[i] + n - 5, ".lock", 5) == 0) return n - 5;
	return n;
}

static int is_unlocked(const struct parts *parts, size_t i, const char *name)
{
	size_t n = unlocked_length(parts, i);
	return n == strlen(name) && strncasecmp(parts->name[i], name, n) == 0;
}

/* Files in a git dir's top that hold working state: git reads them as data, never as programs to run. */
static const char *const STATE_FILES[] = {
	"HEAD", "index", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "MERGE_RR",
	"MERGE_AUTOSTASH", "AUTO_MERGE", "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD", "BISECT_LOG",
	"BISECT_START", "BISECT_EXPECTED_REV", "BISECT_ANCESTORS_OK", "BISECT_NAMES", "BISECT_TERMS",
	"BISECT_HEAD", "BISECT_FIRST_PARENT", "COMMIT_EDITMSG", "SQUASH_MSG", "TAG_EDITMSG",
	"EDIT_DESCRIPTION", "NOTES_MERGE_PARTIAL", "NOTES_MERGE_REF", "packed-refs", "shallow", "gc.pid",
	"gc.log", NULL,
};
/* Prefixes of temporary state files git makes in a git dir's top (split index, `commit <paths>`, stash). */
static const char *const STATE_FILE_PREFIXES[] = {"sharedindex.", "next-index-", "index.stash.", NULL};
/* Directories of working state: anything below them is git's data. */
static const char *const STATE_DIRS[] = {"objects", "refs", "logs", "rr-cache", "lfs", "lost-found", "NOTES_MERGE_WORKTREE", NULL};
/* Rebase, am, cherry-pick and revert state: writable, except the files that choose a program to run. */
static const char *const SEQUENCER_DIRS[] = {"rebase-merge", "rebase-apply", "sequencer", NULL};

static const char *const OPENCODE_NAMES[] = {"opencode.json", "opencode.jsonc", ".opencode", NULL};

static const char *DENY_GITDIR = "inside a git directory only git's working state is writable from the sandbox (objects, refs, logs, index, HEAD, rebase state); configuration, hooks and info are the host's";
static const char *DENY_DOTGIT = "a .git entry (a repository, or a pointer to one) makes host git read its config and run its hooks: the sandbox cannot create, change or remove one";
static const char *DENY_OPENCODE = "OpenCode project config (opencode.json, opencode.jsonc, .opencode/) is code the host's OpenCode runs: the sandbox cannot write it at any depth";
static const char *DENY_LFSCONFIG = ".lfsconfig tells host git-lfs where to send credentials: the sandbox cannot write it";
static const char *DENY_ALTERNATES = "objects/info/alternates points host git at another object store: the sandbox cannot write it";
static const char *DENY_SEQUENCER_PROGRAM = "this rebase state file chooses a program or its arguments for the host's `git rebase --continue`: the sandbox cannot write it";
static const char *DENY_KEEP = "this directory holds the session's directory: the sandbox cannot remove or rename it";
static const char *DENY_HOST_NAMED = "host git configuration names this path (a hooks path, an included config file or a program): the sandbox cannot change it";
static const char *DENY_TOO_DEEP = "the path is deeper than 256 components";

/* The rules for `parts[from..]`, a path inside the git dir `parts[..from)` (the mount root when from = 0). */
static const char *gitdir_rules(const struct repo_rules *rules, const struct parts *parts, size_t from, enum repo_op op, int in_worktree_entry);

static const char *module_rules(const struct repo_rules *rules, const struct parts *parts, size_t from, enum repo_op op)
{
	/* parts[from] is "modules"; a submodule's git dir is modules/<name...>, its name possibly with slashes. */
	char prefix[4096];
	size_t used = 0;
	for (size_t i = 0; i < from + 1; i++) {
		int n = snprintf(prefix + used, sizeof prefix - used, "%s%.*s", used ? "/" : "", (int)parts->length[i], parts->name[i]);
		if (n < 0 || (size_t)n >= sizeof prefix - used) return DENY_GITDIR;
		used += (size_t)n;
	}
	for (size_t end = from + 1; end < parts->count; end++) {
		int n = snprintf(prefix + used, sizeof prefix - used, "/%.*s", (int)parts->length[end], parts->name[end]);
		if (n < 0 || (size_t)n >= sizeof prefix - used) return DENY_GITDIR;
		used += (size_t)n;
		/* The shortest existing submodule git dir wins: the sandbox can never add one of its own. */
		if (end + 1 < parts->count && rules->is_module_gitdir && rules->is_module_gitdir(rules->context, prefix))
			return gitdir_rules(rules, parts, end + 1, op, 0);
	}
	return DENY_GITDIR;
}

static const char *gitdir_rules(const struct repo_rules *rules, const struct parts *parts, size_t from, enum repo_op op, int in_worktree_entry)
{
	if (from >= parts->count) return DENY_GITDIR; /* the git dir itself */
	size_t last = parts->count - 1;
	if (from == last) {
		if (is_any(parts, from, STATE_DIRS) || is_any(parts, from, SEQUENCER_DIRS) || (!in_worktree_entry && is(parts, from, "worktrees"))) {
			/* Git makes and removes these directories (a runtime may set their owner or times as it does). */
			return NULL;
		}
		for (const char *const *name = STATE_FILES; *name; name++)
			if (is_unlocked(parts, from, *name)) return NULL;
		for (const char *const *prefix = STATE_FILE_PREFIXES; *prefix; prefix++)
			if (starts_with(parts, from, *prefix)) return NULL;
		return DENY_GITDIR;
	}
	if (is(parts, from, "objects")) {
		if (from + 2 == last && is(parts, from + 1, "info") &&
		    (is_unlocked(parts, last, "alternates") || is_unlocked(parts, last, "http-alternates")))
			return DENY_ALTERNATES;
		return NULL;
	}
	if (is_any(parts, from, STATE_DIRS)) return NULL;
	if (is_any(parts, from, SEQUENCER_DIRS)) {
		/* `strategy` names a `git-merge-<strategy>` program, `gpg_sign_opt` an argument for gpg, `opts` both. */
		if (from + 1 == last && (is_unlocked(parts, last, "strategy") || is_unlocked(parts, last, "strategy_opts") ||
					 is_unlocked(parts, last, "gpg_sign_opt") || is_unlocked(parts, last, "opts")))
			return DENY_SEQUENCER_PROGRAM;
		return NULL;
	}
	if (!in_worktree_entry && is(parts, from, "worktrees")) {
		/* worktrees/<name>/...: a linked worktree's own git dir. A host worktree's entry and its `commondir`,
		 * `gitdir` and `config.worktree` are the host's (they redirect or configure host git); its state is
		 * not. An entry the guest made (`git worktree add` in the sandbox, whose `.git` pointer is kept under
		 * the quarantine name) is read by no host git: all of it but `config.worktree` is the guest's. */
		char entry[4096];
		size_t used = 0;
		for (size_t i = 0; i <= from + 1 && used < sizeof entry; i++)
			used += (size_t)snprintf(entry + used, sizeof entry - used, "%s%.*s", i ? "/" : "", (int)parts->length[i], parts->name[i]);
		int guest = used < sizeof entry && rules->is_guest_worktree && rules->is_guest_worktree(rules->context, entry);
		if (from + 1 == last) return op == REPO_OP_CREATE || guest ? NULL : DENY_GITDIR;
		if (guest) return is_unlocked(parts, last, "config.worktree") ? DENY_GITDIR : NULL;
		return gitdir_rules(rules, parts, from + 2, op, 1);
	}
	if (!in_worktree_entry && is(parts, from, "modules")) return module_rules(rules, parts, from, op);
	return DENY_GITDIR;
}

static int path_is_or_under(const char *rel, const char *base)
{
	size_t n = strlen(base);
	if (n == 0) return 1;
	return strncmp(rel, base, n) == 0 && (rel[n] == '\0' || rel[n] == '/');
}

const char *repo_policy_check(const struct repo_rules *rules, const char *rel, enum repo_op op)
{
	struct parts parts;
	split(rel, &parts);
	if (parts.too_deep) return DENY_TOO_DEEP;
	if (rules->host_config_problem) return rules->host_config_problem;

	for (size_t i = 0; i < rules->keep_count; i++)
		if ((op == REPO_OP_REMOVE || op == REPO_OP_CREATE) && path_is_or_under(rules->keep[i], rel) && parts.count > 0) return DENY_KEEP;
	for (size_t i = 0; i < rules->host_named_count; i++) {
		if (path_is_or_under(rel, rules->host_named[i])) return DENY_HOST_NAMED;
		/* Moving a parent away would let the sandbox put a new file where the host looks. */
		if ((op == REPO_OP_REMOVE || op == REPO_OP_CREATE) && path_is_or_under(rules->host_named[i], rel) && parts.count > 0) return DENY_HOST_NAMED;
	}

	if (rules->root_is_gitdir) return gitdir_rules(rules, &parts, 0, op, 0);
	for (size_t i = 0; i < rules->gitdir_count; i++) {
		if (!path_is_or_under(rel, rules->gitdirs[i])) continue;
		struct parts gitdir;
		split(rules->gitdirs[i], &gitdir);
		if (gitdir.count == parts.count) return DENY_DOTGIT;
		return gitdir_rules(rules, &parts, gitdir.count, op, 0);
	}

	for (size_t i = 0; i < parts.count; i++) {
		/* The guest's own repository (repo-fs.c keeps it there): host git never reads it. */
		if (parts.length[i] == strlen(REPO_QUARANTINE_NAME) && strncmp(parts.name[i], REPO_QUARANTINE_NAME, parts.length[i]) == 0) return NULL;
		if (is(&parts, i, ".git")) {
			if (i == parts.count - 1) return DENY_DOTGIT;
			return gitdir_rules(rules, &parts, i + 1, op, 0);
		}
		if (is_any(&parts, i, OPENCODE_NAMES)) return DENY_OPENCODE;
		if (is(&parts, i, ".lfsconfig")) return DENY_LFSCONFIG;
	}
	if (parts.count == 0 && op != REPO_OP_WRITE) return op == REPO_OP_SETATTR ? NULL : DENY_KEEP;
	return NULL;
}

int repo_policy_is_worktree_entry(const struct repo_rules *rules, const char *rel)
{
	struct parts parts;
	split(rel, &parts);
	if (parts.too_deep || parts.count < 2 || !is(&parts, parts.count - 2, "worktrees")) return 0;
	if (rules->root_is_gitdir && parts.count == 2) return 1;
	return parts.count >= 3 && is(&parts, parts.count - 3, ".git");
}

int repo_policy_is_todo(const struct repo_rules *rules, const char *rel)
{
	struct parts parts;
	split(rel, &parts);
	if (parts.too_deep || parts.count < 2) return 0;
	size_t last = parts.count - 1;
	if (!is_any(&parts, last - 1, SEQUENCER_DIRS)) return 0;
	if (!is_unlocked(&parts, last, "git-rebase-todo") && !is_unlocked(&parts, last, "todo") &&
	    !is_unlocked(&parts, last, "git-rebase-todo.backup"))
		return 0;
	/* Only inside a git dir: a work-tree file named `sequencer/todo` is the project's own. */
	if (rules->root_is_gitdir) return 1;
	for (size_t i = 0; i + 1 < last; i++)
		if (is(&parts, i, ".git")) return 1;
	return 0;
}

int repo_todo_has_exec(const char *text, size_t length)
{
	size_t i = 0;
	while (i < length) {
		/* NUL counts as a blank too: a hole in the file must not hide a command after it. */
		while (i < length && (text[i] == ' ' || text[i] == '\t' || text[i] == '\0')) i++;
		size_t start = i;
		while (i < length && text[i] != ' ' && text[i] != '\t' && text[i] != '\n' && text[i] != '\r' && text[i] != '\0') i++;
		size_t word = i - start;
		if ((word == 4 && strncasecmp(text + start, "exec", 4) == 0) || (word == 1 && (text[start] == 'x' || text[start] == 'X')))
			return 1;
		while (i < length && text[i] != '\n') i++;
		i++;
	}
	return 0;
}

const char *repo_op_name(enum repo_op op)
{
	switch (op) {
	case REPO_OP_CREATE: return "create";
	case REPO_OP_WRITE: return "write";
	case REPO_OP_REMOVE: return "remove";
	case REPO_OP_SETATTR: return "setattr";
	}
	return "?";
}
