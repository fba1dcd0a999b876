/* Host git configuration that points into the work tree (core.hooksPath, included config files, programs
 * named by path): read with the host's own git, turned into paths the guest may not change, and watched
 * with inotify so a change made on the host is seen before the guest's next operation. */
#ifndef REPO_FS_HOST_CONFIG_H
#define REPO_FS_HOST_CONFIG_H

#include <stddef.h>

struct host_config {
	int root_fd;      /* the work tree, for following symlinks inside it without leaving it */
	const char *top;  /* its absolute path */
	const char *home; /* the repository owner's home (global git config) */
	char **named;     /* in-tree paths host config names, relative to top */
	size_t named_count;
	char *problem; /* why host config could not be read (every change is then refused), or NULL */
	int inotify_fd;
};

/* Reads host config (again) and re-arms the watches. Never fails: a failure becomes `problem`. */
void host_config_load(struct host_config *config);

/* Drains pending inotify events without blocking; 1 when one of them may change host config. */
int host_config_changed(struct host_config *config);

void host_config_init(struct host_config *config, int root_fd, const char *top, const char *home);

#endif
