/* graphviz.c: `--emit svg` through Graphviz's `dot`, when it is installed.
 *
 * Graphviz is never a build dependency: at run time the DOT text goes to `dot
 * -Tsvg` found on PATH, and its standard output is the SVG. Without `dot`, the
 * caller says so and suggests --emit dot. */
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd.h"

extern char **environ;

bool cmd_have_dot(void)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		return false;
	char *list = strdup(path), *save = NULL;
	bool found = false;
	for (char *d = strtok_r(list, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
		char full[4096];
		snprintf(full, sizeof full, "%s/dot", *d ? d : ".");
		found = access(full, X_OK) == 0;
	}
	free(list);
	return found;
}

/* dot's input written to fd (the temporary file tmp, closed here), its SVG to svg. */
static int run_dot(int fd, char *tmp, const char *dot, size_t len, Buf *svg)
{
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, dot + off, len - off);
		if (w <= 0) {
			cmd_error("--emit svg: cannot write '%s': %s", tmp, strerror(errno));
			close(fd);
			return -1;
		}
		off += (size_t)w;
	}
	close(fd);
	int p[2];
	if (pipe(p) != 0) {
		cmd_error("--emit svg: pipe: %s", strerror(errno));
		return -1;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_addclose(&fa, p[0]);
	posix_spawn_file_actions_addclose(&fa, p[1]);
	char *args[] = {"dot", "-Tsvg", tmp, NULL};
	pid_t pid;
	int rc = posix_spawnp(&pid, "dot", &fa, NULL, args, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (rc != 0) {
		cmd_error("--emit svg: cannot run Graphviz's dot: %s", strerror(rc));
		close(p[0]);
		return -1;
	}
	char chunk[65536];
	ssize_t r;
	while ((r = read(p[0], chunk, sizeof chunk)) > 0 || (r < 0 && errno == EINTR))
		if (r > 0)
			buf_write(svg, chunk, (size_t)r);
	close(p[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || svg->len == 0) {
		cmd_error("--emit svg: Graphviz's dot failed (status %d)",
			  WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return -1;
	}
	return 0;
}

int cmd_dot_to_svg(const char *dot, size_t len, Buf *svg)
{
	/* registered: a signal removes it (support.h) */
	char *tmp = NULL;
	UndoStep *undo = NULL;
	int fd = file_temp("/tmp/fusec-dot-", &tmp, &undo);
	if (fd < 0) {
		cmd_error("--emit svg: cannot create a temporary file: %s", strerror(errno));
		return -1;
	}
	fchmod(fd, 0600);   /* in /tmp: for this user only */
	int rc = run_dot(fd, tmp, dot, len, svg);
	unlink(tmp);
	undo_drop(undo);
	free(tmp);
	return rc;
}
