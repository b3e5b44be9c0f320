/* files.c: writing files safely: unique temporary names, what a name in the way
 * is, and undoing what the process made when a signal ends it.
 *
 * Temporary files and folders are created under fresh random names with O_EXCL (a
 * name that exists, a symbolic link included, is never opened), beside the file
 * they become, so that a rename publishes them (file_replace_begin and
 * file_replace_end: the caches' entries and .npy outputs).
 *
 * The undo list. A command that writes files registers each thing it makes and
 * has not yet handed over (a temporary file, a folder it created, a file renamed
 * over an old one kept under another name) as a step: unlink, rmdir, clear a flat
 * folder, rename back, exchange back. On SIGINT, SIGTERM or SIGHUP the handler runs
 * the registered steps, newest first, then the signal's default action ends the
 * process as it would have. The handler only calls async-signal-safe functions
 * (unlink, rmdir, rename, open, getdents64, close, sigaction, raise), and the list is
 * a stack of steps that are never freed: a step is marked dropped, so a handler
 * running in any thread reads only complete steps. Making a thing and registering
 * it happen with the signals blocked (undo_hold), so no signal falls between the
 * two. Only a command installs the handlers (undo_install); without them nothing is
 * registered, so library code (host/npy.c in libfusecrt) can use the same calls. */
#define _GNU_SOURCE   /* syscall, renameat2 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "support.h"

struct UndoStep {
	atomic_int kind;         /* UndoKind, or 0 once dropped */
	char *a, *b;             /* the paths the step names */
	UndoStep *next;          /* the step registered before */
};

static UndoStep *_Atomic undo_top;
static bool undo_on;
static const int undo_signals[] = {SIGINT, SIGTERM, SIGHUP};

static void undo_run(const UndoStep *s)
{
	switch (atomic_load(&s->kind)) {
	case UNDO_UNLINK: unlink(s->a); break;
	case UNDO_RMDIR: rmdir(s->a); break;
	case UNDO_CLEAR_DIR: dir_remove_flat(s->a); break;
	case UNDO_RENAME: rename(s->a, s->b); break;
	case UNDO_EXCHANGE: renameat2(AT_FDCWD, s->a, AT_FDCWD, s->b, RENAME_EXCHANGE); break;
	default: break;
	}
}

static void undo_signal(int sig)
{
	int saved = errno;
	for (UndoStep *s = atomic_load(&undo_top); s; s = s->next)
		undo_run(s);
	/* the default action, once this handler returns (the signal is blocked in it) */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	sigaction(sig, &sa, NULL);
	raise(sig);
	errno = saved;
}

void undo_install(void)
{
	if (undo_on)
		return;
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = undo_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < COUNTOF(undo_signals); i++)
		sigaddset(&sa.sa_mask, undo_signals[i]);
	for (size_t i = 0; i < COUNTOF(undo_signals); i++) {
		/* a signal the process was started with ignored (nohup, a background job of
		 * a script) stays ignored */
		if (sigaction(undo_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		sigaction(undo_signals[i], &sa, NULL);
	}
	undo_on = true;
}

static sigset_t undo_saved_mask;
static int undo_depth;

void undo_hold(void)
{
	if (!undo_on || undo_depth++)
		return;
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < COUNTOF(undo_signals); i++)
		sigaddset(&set, undo_signals[i]);
	pthread_sigmask(SIG_BLOCK, &set, &undo_saved_mask);
}

void undo_release(void)
{
	if (!undo_on || --undo_depth)
		return;
	pthread_sigmask(SIG_SETMASK, &undo_saved_mask, NULL);
}

UndoStep *undo_push(UndoKind kind, const char *a, const char *b)
{
	if (!undo_on)
		return NULL;
	UndoStep *s = xmalloc(sizeof *s);
	s->a = xmalloc(strlen(a) + 1);
	strcpy(s->a, a);
	s->b = NULL;
	if (b) {
		s->b = xmalloc(strlen(b) + 1);
		strcpy(s->b, b);
	}
	atomic_init(&s->kind, (int)kind);
	s->next = atomic_load(&undo_top);
	atomic_store(&undo_top, s);
	return s;
}

void undo_drop(UndoStep *s)
{
	if (s)
		atomic_store(&s->kind, 0);
}

/* ---- temporary names ------------------------------------------------------------ */

int file_temp(const char *prefix, char **path, UndoStep **undo)
{
	char *t = xmalloc(strlen(prefix) + 7);
	sprintf(t, "%sXXXXXX", prefix);
	undo_hold();
	int fd = mkostemp(t, O_CLOEXEC);
	int e = errno;
	UndoStep *s = fd >= 0 ? undo_push(UNDO_UNLINK, t, NULL) : NULL;
	undo_release();
	if (fd < 0) {
		free(t);
		errno = e;
		return -1;
	}
	/* mkstemp makes it 0600: give it the mode a plain open would */
	mode_t mask = umask(0);
	umask(mask);
	fchmod(fd, 0666 & ~mask);
	*path = t;
	if (undo)
		*undo = s;
	else
		undo_drop(s);
	return fd;
}

char *dir_temp(const char *prefix, UndoStep **undo)
{
	char *t = xmalloc(strlen(prefix) + 7);
	sprintf(t, "%sXXXXXX", prefix);
	undo_hold();
	bool ok = mkdtemp(t) != NULL;
	int e = errno;
	UndoStep *s = ok ? undo_push(UNDO_CLEAR_DIR, t, NULL) : NULL;
	undo_release();
	if (!ok) {
		free(t);
		errno = e;
		return NULL;
	}
	mode_t mask = umask(0);
	umask(mask);   /* mkdtemp makes it 0700: give it the mode mkdir would */
	chmod(t, 0777 & ~mask);
	if (undo)
		*undo = s;
	else
		undo_drop(s);
	return t;
}

char *file_dir_prefix(const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) + 1 : 0;
	char *p = xmalloc(n + sizeof ".fusec-");
	memcpy(p, path, n);
	strcpy(p + n, ".fusec-");
	return p;
}

int file_replace_begin(FileReplace *r, const char *prefix)
{
	r->tmp = NULL;
	r->undo = NULL;
	return file_temp(prefix, &r->tmp, &r->undo);
}

int file_replace_end(FileReplace *r, const char *path, bool ok, unsigned mode)
{
	if (ok && mode)
		ok = chmod(r->tmp, (mode_t)mode) == 0;
	if (ok)
		ok = rename(r->tmp, path) == 0;
	if (!ok) {
		int e = errno;
		unlink(r->tmp);
		errno = e;
	}
	undo_drop(r->undo);
	free(r->tmp);
	*r = (FileReplace){0};
	return ok ? 0 : -1;
}

/* ---- what is in the way ---------------------------------------------------------- */

const char *file_kind(unsigned mode)
{
	if (S_ISREG(mode))
		return "a regular file";
	if (S_ISDIR(mode))
		return "a folder";
	if (S_ISLNK(mode))
		return "a symbolic link";
	if (S_ISFIFO(mode))
		return "a pipe (FIFO)";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device";
	if (S_ISSOCK(mode))
		return "a socket";
	return "a special file";
}

int file_open_in_place(const char *path)
{
	/* non-blocking: a pipe that no process reads is an error (ENXIO), not a hang;
	 * not truncated yet: file_write_in_place does that when it writes */
	int fd = open(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0666);
	struct stat st;
	if (fd < 0) {
		if (errno == ENXIO && stat(path, &st) == 0 && S_ISFIFO(st.st_mode))
			errno = EPIPE;
		return -1;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int file_write_in_place(int fd, const void *p, size_t n)
{
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) < 0))
		return -1;
	return file_write_all(fd, p, n);
}

int file_write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n > 0) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			return -1;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* getdents64's record (not in glibc's headers) */
struct fusec_dirent64 {
	unsigned long long ino;
	long long off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

void dir_remove_flat(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		/* a link or a file put in its place: the name goes, never what it names */
		if (errno == ENOTDIR || errno == ELOOP)
			unlink(dir);
		return;
	}
	/* raw getdents64 and a stack buffer: this runs in the signal handler too.
	 * Removing entries while reading may skip some: read again until none is left. */
	_Alignas(8) char buf[4096];
	for (int pass = 0; pass < 64; pass++) {
		bool removed = false;
		if (lseek(fd, 0, SEEK_SET) < 0)
			break;
		long n;
		while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
			for (long off = 0; off < n;) {
				struct fusec_dirent64 *e = (struct fusec_dirent64 *)(buf + off);
				off += e->reclen;
				const char *name = e->name;
				if (!strcmp(name, ".") || !strcmp(name, ".."))
					continue;
				if (unlinkat(fd, name, 0) == 0)
					removed = true;
			}
		}
		if (!removed)
			break;
	}
	close(fd);
	rmdir(dir);
}
