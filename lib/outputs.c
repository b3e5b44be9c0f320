/* outputs.c: a compile's files written all or none (pl_commit; docs/reliability.md).
 *
 * Every file, a depfile included, is first written to a temporary file beside its
 * name and synced, then, under a lock on the folder, renamed over the old one; a
 * failure, or SIGINT / SIGTERM in the middle (the undo list of support/files.c),
 * puts back what was there. Errors go to the caller's PlErrorFn: the CLI prints
 * them, the library returns them. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pipeline.h"

typedef struct {
	PlErrorFn fn;
	void *ctx;
} Report;

static void report(const Report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void report(const Report *r, const char *fmt, ...)
{
	Buf b = {0};
	va_list ap;
	va_start(ap, fmt);
	buf_vprintf(&b, fmt, ap);
	va_end(ap);
	r->fn(r->ctx, b.data ? b.data : "");
	buf_free(&b);
}

typedef struct {
	char *tmp, *final;   /* the new file, written under a temporary name; its name */
	char *backup;        /* a hard link to the file `final` named before; NULL if none */
	bool renamed;        /* tmp is now final */
	bool same;           /* final holds these bytes already: left as it is */
	bool user;           /* a file the user named (the depfile) */
	int in_place;        /* >= 0: a user's file that is not a regular file (a device,
			      * a pipe, a symbolic link), open to be written in place after
			      * the renames, never replaced; -1 */
	UndoStep *undo_tmp, *undo_backup, *undo_publish;   /* steps run on a signal */
} Output;

/* "'DIR/NAME.ptx'" in messages; "depfile 'FILE'" for the depfile. */
#define OUT_FMT "%s'%s'"
#define OUT_ARG(o) (o)->user ? "depfile " : "", (o)->final

static int write_tmp(const Report *rep, Output *o, const char *dir, const char *name,
		     const PlFile *of)
{
	const char *ext = of->ext, *text = of->text;
	size_t len = of->len;
	if (!o->final) {
		o->user = of->path != NULL;
		o->in_place = -1;
		if (of->path) {
			o->final = strdup(of->path);
		} else {
			o->final = malloc(strlen(dir) + strlen(name) + strlen(ext) + 3);
			sprintf(o->final, "%s/%s%s", dir, name, ext);
		}
	}
	/* a file the user named that is not a regular file (-M /dev/null, a pipe, a
	 * symbolic link) is written in place, never replaced */
	struct stat sb;
	if (o->user && lstat(o->final, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		if (S_ISDIR(sb.st_mode)) {
			report(rep, "cannot write " OUT_FMT ": it is a folder", OUT_ARG(o));
			return -1;
		}
		o->in_place = file_open_in_place(o->final);
		if (o->in_place < 0) {
			report(rep, "cannot write " OUT_FMT ": %s", OUT_ARG(o),
				  errno == EPIPE ? "it is a pipe that no process reads"
						 : strerror(errno));
			return -1;
		}
		return 0;
	}
	/* an unchanged weights file (a recompile) is neither written nor synced again;
	 * pl_commit checks once more under the lock */
	if (of->weights && !o->same && cg_weights_same(of->weights, o->final)) {
		o->same = true;
		return 0;
	}
	o->same = false;
	char *prefix = file_dir_prefix(o->final);
	int fd = file_temp(prefix, &o->tmp, &o->undo_tmp);
	free(prefix);
	/* errors name the user's file, not the temporary one */
	if (fd < 0) {
		report(rep, "cannot write " OUT_FMT ": %s", OUT_ARG(o), strerror(errno));
		return -1;
	}
	FILE *f = fdopen(fd, "w");
	if (!f) {
		report(rep, "cannot write " OUT_FMT ": %s", OUT_ARG(o), strerror(errno));
		close(fd);
		return -1;
	}
	errno = 0;
	bool short_write = of->weights ? cg_weights_write_file(of->weights, f) != 0
				       : fwrite(text, 1, len, f) != len;
	/* fsync before the rename: after a crash the folder holds the old set or the
	 * new one, not a new name over an empty file. */
	int bad = short_write || fflush(f) != 0 || fsync(fd) != 0;
	int err = errno;
	if (fclose(f) != 0 && !bad) {
		bad = 1;
		err = errno;
	}
	if (bad) {
		report(rep, "cannot write " OUT_FMT ": %s", OUT_ARG(o), err ? strerror(err) : "write error");
		return -1;
	}
	return 0;
}

/* mkdir -p: create dir and any missing parents, remembering every folder it made
 * (innermost last) so that a failed compile, or a signal, can take them away again. */
typedef struct {
	char **made;
	UndoStep **undo;
	int n;
} MadeDirs;

static int make_dirs(const char *dir, MadeDirs *md)
{
	char *p = strdup(dir);
	int rc = 0;
	size_t len = strlen(p);
	for (size_t i = 1; rc == 0 && i <= len; i++) {
		if (p[i] != '/' && p[i] != 0)
			continue;
		char c = p[i];
		p[i] = 0;
		undo_hold();
		if (mkdir(p, 0777) == 0) {
			md->made = realloc(md->made, (size_t)(md->n + 1) * sizeof *md->made);
			md->undo = realloc(md->undo, (size_t)(md->n + 1) * sizeof *md->undo);
			md->made[md->n] = strdup(p);
			md->undo[md->n++] = undo_push(UNDO_RMDIR, p, NULL);
		} else if (errno != EEXIST) {
			rc = -1;
		}
		undo_release();
		p[i] = c;
	}
	free(p);
	return rc;
}

static void remove_dirs(MadeDirs *md, bool remove)
{
	while (md->n > 0) {
		char *d = md->made[--md->n];
		if (remove)
			rmdir(d);
		undo_drop(md->undo[md->n]);
		free(d);
	}
	free(md->made);
	free(md->undo);
	md->made = NULL;
	md->undo = NULL;
}


/* Write files[0..n) as DIR/NAME<ext> (or the path a file names: the depfile), all
 * or none (docs/reliability.md):
 *  1. every file is written to a temporary file beside its name and synced;
 *  2. under an exclusive flock on DIR, so that concurrent compiles into one folder
 *     publish one after the other, every name is checked (a folder, a pipe or a
 *     device in the way is refused), each existing file is kept as a hard link to a
 *     temporary name, then the new files are renamed over the old, files[0] (the
 *     plan, which names the others and records their hashes) last; a depfile that
 *     is not a regular file (/dev/null, a pipe) is written in place after them;
 *  3. if any step fails, the renamed files are put back from the links (or removed
 *     when there was none), and the folders made for them are taken away: the folder
 *     is left as it was. On success the links are removed.
 * Every temporary file, link and folder is registered with the undo list, so a
 * signal in the middle does the same as a failure (support/files.c). */
int pl_commit(const char *dir, const char *name, const PlFile *files, int n, PlErrorFn err,
	      void *ctx)
{
	const Report r = {err, ctx}, *rep = &r;
	int status = 0;
	MadeDirs made = {0};
	if (make_dirs(dir, &made) != 0) {
		report(rep, "cannot create '%s': %s", dir, strerror(errno));
		status = -1;
	}
	Output *out = calloc((size_t)n, sizeof *out);
	int nout = 0;
	for (int i = 0; status == 0 && i < n; i++)
		if (write_tmp(rep, &out[nout++], dir, name, &files[i]) < 0)
			status = -1;
	int dfd = status == 0 ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	/* A file system without locks (some network ones) still gets the all-or-nothing
	 * commit; concurrent compiles there are caught by the plan's hash. */
	if (status == 0 && (dfd < 0 || (flock(dfd, LOCK_EX) != 0 && errno != ENOLCK &&
					      errno != EOPNOTSUPP && errno != EINVAL))) {
		report(rep, "cannot lock '%s': %s", dir, strerror(errno));
		status = -1;
	}
	long name_max = status == 0 ? fpathconf(dfd, _PC_NAME_MAX) : -1;
	for (int i = 0; status == 0 && i < nout; i++)
		if (out[i].same && !cg_weights_same(files[i].weights, out[i].final) &&
		    write_tmp(rep, &out[i], dir, name, &files[i]) < 0)  /* changed meanwhile */
			status = -1;
	for (int i = 0; status == 0 && i < nout; i++) {
		struct stat sb;
		Output *o = &out[i];
		if (o->same || o->in_place >= 0)
			continue;
		const char *base = o->user ? o->final : o->final + strlen(dir) + 1;
		if (!o->user && name_max > 0 && strlen(base) > (size_t)name_max) {
			report(rep, "cannot write '%s': the name is longer than %ld bytes (the graph's "
				  "name is %zu bytes)", o->final, name_max, strlen(name));
			status = -1;
		} else if (lstat(o->final, &sb) == 0) {
			/* a symbolic link is replaced (never what it names); a folder, a pipe,
			 * a device or a socket is not fusec's to replace */
			if (!S_ISREG(sb.st_mode) && !S_ISLNK(sb.st_mode)) {
				report(rep, "cannot write " OUT_FMT ": it is %s, not a regular file%s",
					  OUT_ARG(o), file_kind(sb.st_mode),
					  S_ISDIR(sb.st_mode) ? "" : " (remove it to compile here)");
				status = -1;
				break;
			}
			/* The old file, kept under a fresh name until the new set is in place. */
			char *prefix = file_dir_prefix(o->final), *b = NULL;
			int fd = file_temp(prefix, &b, &o->undo_backup);
			free(prefix);
			if (fd >= 0)
				close(fd);
			if (fd < 0 || unlink(b) != 0 || link(o->final, b) != 0) {
				report(rep, "cannot keep a copy of '%s' while replacing it: %s",
					  o->final, strerror(errno));
				if (b)
					unlink(b);
				free(b);
				undo_drop(o->undo_backup);
				o->undo_backup = NULL;
				status = -1;
			} else {
				o->backup = b;
			}
		} else if (errno != ENOENT) {
			report(rep, "cannot write " OUT_FMT ": %s", OUT_ARG(o), strerror(errno));
			status = -1;
		}
	}
	/* FUSEC_TEST_FAIL_RENAME=K makes the K-th rename fail (EIO), for the tests of
	 * the rollback below; FUSEC_TEST_RENAME_DELAY_MS=N waits N ms before each rename
	 * after the first, widening the window in which an unlocked publish would mix
	 * with another (tests/cli/t_reliability.sh) or a signal arrives
	 * (t_harden_files.sh). */
	const char *fault = getenv("FUSEC_TEST_FAIL_RENAME");
	const char *delay = getenv("FUSEC_TEST_RENAME_DELAY_MS");
	int fail_at = fault ? atoi(fault) : 0, delay_ms = delay ? atoi(delay) : 0;
	for (int k = 1; status == 0 && k <= nout; k++) {
		Output *o = &out[k % nout];
		if (o->same || o->in_place >= 0)
			continue;
		if (k > 1 && delay_ms > 0 && delay_ms <= 1000)
			nanosleep(&(struct timespec){delay_ms / 1000, (delay_ms % 1000) * 1000000L},
				  NULL);
		if (k == fail_at)
			errno = EIO;
		/* the rename and the step that undoes it, with no signal between */
		undo_hold();
		if (k == fail_at || rename(o->tmp, o->final) != 0) {
			report(rep, "cannot write " OUT_FMT ": %s", OUT_ARG(o), strerror(errno));
			status = -1;
		} else {
			o->renamed = true;
			o->undo_publish = o->backup ? undo_push(UNDO_RENAME, o->backup, o->final)
						    : undo_push(UNDO_UNLINK, o->final, NULL);
			undo_drop(o->undo_tmp);
			o->undo_tmp = NULL;
		}
		undo_release();
	}
	/* then the depfile written in place: it cannot be taken back, so it comes after
	 * every rename, and a failure still undoes them */
	for (int i = 0; status == 0 && i < nout; i++) {
		Output *o = &out[i];
		if (o->in_place >= 0 &&
		    file_write_in_place(o->in_place, files[i].text, files[i].len) != 0) {
			report(rep, "cannot write " OUT_FMT ": %s", OUT_ARG(o), strerror(errno));
			status = -1;
		}
	}
	if (status == 0 && fsync(dfd) != 0 && errno != EINVAL) {
		report(rep, "cannot sync '%s': %s", dir, strerror(errno));
		status = -1;
	}
	for (int i = 0; i < nout; i++) {
		Output *o = &out[i];
		if (status != 0) {
			if (o->renamed && o->backup)
				rename(o->backup, o->final);
			else if (o->renamed)
				unlink(o->final);
			else if (o->tmp)
				unlink(o->tmp);
		}
		undo_drop(o->undo_publish);
		undo_drop(o->undo_tmp);
		if (o->backup && (status == 0 || !o->renamed))
			unlink(o->backup);
		undo_drop(o->undo_backup);
		if (o->in_place >= 0)
			close(o->in_place);
		free(o->tmp);
		free(o->final);
		free(o->backup);
	}
	free(out);
	if (dfd >= 0)
		close(dfd);   /* releases the lock */
	remove_dirs(&made, status != 0);
	return status;
}

