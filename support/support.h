/* support.h: the small things every layer uses: arena, growable buffer,
 * diagnostics, internal-error exit.
 *
 * Memory: an Arena owns everything allocated from it and frees it all at once.
 * A Buf owns its bytes until buf_free. A Diag is a plain value. */
#ifndef FUSEC_SUPPORT_H
#define FUSEC_SUPPORT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FUSEC_VERSION "0.1.0"

/* ---- arena ----------------------------------------------------------------- */

typedef struct ArenaChunk ArenaChunk;
typedef struct {
	ArenaChunk *head;
	size_t total;        /* bytes handed out, for memory reports */
} Arena;

Arena *arena_new(void);
void arena_free(Arena *a);
void arena_reset(Arena *a);                       /* empty it, keeping one chunk */
void *arena_alloc(Arena *a, size_t size);          /* zeroed, 16-byte aligned */
void *arena_alloc_raw(Arena *a, size_t size);      /* the same, not zeroed */
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define ARENA_NEW(a, T, n) ((T *)arena_alloc((a), sizeof(T) * (size_t)(n)))

/* ---- growable byte buffer -------------------------------------------------- */

typedef struct {
	char *data;          /* always NUL-terminated when len > 0 */
	size_t len, cap;
} Buf;

void buf_putc(Buf *b, char c);
void buf_puts(Buf *b, const char *s);
void buf_write(Buf *b, const void *p, size_t n);
void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_vprintf(Buf *b, const char *fmt, va_list ap);
void buf_free(Buf *b);

/* ---- diagnostics ----------------------------------------------------------- */

/* A user-facing error: "file:line:col: error: msg". line/col 0 mean unknown. */
typedef struct {
	char file[256];
	int line, col;
	char msg[768];
} Diag;

void diag_set(Diag *d, const char *file, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* Format as one line, without a trailing newline. */
void diag_format(const Diag *d, char *buf, size_t size);

/* An internal bug: prints file:line and aborts. Never for user errors. */
_Noreturn void die_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define die(...) die_at(__FILE__, __LINE__, __VA_ARGS__)

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);

/* Elements of an array. Side tables indexed by an enum stay unsized and
 * static-assert COUNTOF(table) == the enum's count, so a forgotten entry fails the
 * build instead of reading NULL. */
#define COUNTOF(a) (sizeof(a) / sizeof *(a))

/* ---- files ----------------------------------------------------------------- */

/* Read a whole file: "-" is stdin. Returns malloc'd bytes with a NUL after the
 * *len read; NULL with d set ("cannot open", "cannot read", or "input is larger
 * than N MiB" when max > 0 and the file holds max bytes or more). Messages name
 * the file as `path`, or "<stdin>". */
char *read_file(const char *path, size_t max, size_t *len, Diag *d);
/* The same for a file a program trusts less (a compiled plan, its PTX): only a
 * regular file is read (not a FIFO, a device such as /dev/zero, or a folder), and
 * one of max bytes or more is refused before it is read. */
char *read_regular_file(const char *path, size_t max, size_t *len, Diag *d);

/* Flush stdout and report a write error on it (a full disk, a closed pipe):
 * returns `status`, or 3 with a message on stderr when anything written to stdout
 * was lost. Every command that prints to stdout ends through it. */
int finish_stdout(const char *prog, int status);

/* ---- writing files (files.c) ----------------------------------------------- */

/* Undo on a signal: what a command made and has not yet handed over is taken away
 * again when SIGINT, SIGTERM or SIGHUP ends it (docs/reliability.md). undo_install
 * (once, by a command; never by library code) installs the handlers, keeping a
 * signal the process ignores ignored; until then the calls below do nothing but
 * their own work. undo_push registers a step, run by the handler newest first;
 * undo_drop forgets it (NULL is fine). Make a thing and push its step between
 * undo_hold and undo_release (signals blocked, nestable), so no signal falls
 * between the two. */
typedef enum {
	UNDO_UNLINK = 1,     /* unlink(a) */
	UNDO_RMDIR,          /* rmdir(a) */
	UNDO_CLEAR_DIR,      /* dir_remove_flat(a) */
	UNDO_RENAME,         /* rename(a, b): put a kept file back */
	UNDO_EXCHANGE,       /* exchange a and b again */
} UndoKind;
typedef struct UndoStep UndoStep;
void undo_install(void);
void undo_hold(void);
void undo_release(void);
UndoStep *undo_push(UndoKind kind, const char *a, const char *b);
void undo_drop(UndoStep *s);

/* A new empty file PREFIXxxxxxx (random; O_EXCL, so an existing name or a symbolic
 * link is never opened), mode 0666 less the umask. Returns its descriptor and sets
 * *path (malloc'd); -1 with errno. With undo, its removal is registered there (the
 * caller drops it once the file is renamed away); without, nothing is registered. */
int file_temp(const char *prefix, char **path, UndoStep **undo);
/* The same for a folder (mode 0777 less the umask), registered as UNDO_CLEAR_DIR.
 * NULL with errno. */
char *dir_temp(const char *prefix, UndoStep **undo);
/* "DIR/.fusec-" for path "DIR/NAME" (".fusec-" without a slash): temporary files
 * beside path, in its folder, so a rename publishes them. malloc'd. */
char *file_dir_prefix(const char *path);
/* Replacing a file whole: write a fresh temporary file, then rename it over the
 * old one, so that a reader sees the old file or the new one, never a part.
 * file_replace_begin makes the file (file_temp, with its undo step) and returns its
 * descriptor, -1 with errno. The caller writes it and closes the descriptor;
 * file_replace_end then gives it `mode` (0: as file_temp made it) and renames it
 * to path when ok (the writing and closing succeeded), or removes it. 0, or -1
 * with errno (when ok, of the chmod or rename that failed). */
typedef struct {
	char *tmp;           /* the temporary file's name (malloc'd) */
	UndoStep *undo;      /* its removal, should a signal end the process */
} FileReplace;
int file_replace_begin(FileReplace *r, const char *prefix);
int file_replace_end(FileReplace *r, const char *path, bool ok, unsigned mode);
/* "a folder", "a pipe (FIFO)", "a device", "a symbolic link", ... for an st_mode. */
const char *file_kind(unsigned mode);
/* Open a path the user named that is not a regular file (a device, a pipe, a
 * symbolic link) to write it in place: never replaced by a rename. A pipe no
 * process reads fails with EPIPE instead of blocking. Not truncated yet (the
 * open may come before a commit that fails). -1 with errno. */
int file_open_in_place(const char *path);
/* Write the whole content of a file opened so: a regular file (through a link) is
 * truncated first. 0, or -1 with errno. */
int file_write_in_place(int fd, const void *p, size_t n);
/* write(2) all n bytes (EINTR and short writes retried); 0, or -1 with errno. */
int file_write_all(int fd, const void *p, size_t n);
/* Remove a flat folder of files and the folder, never following a symbolic link:
 * a link (or a file) at dir is unlinked, what it names left alone.
 * Async-signal-safe. */
void dir_remove_flat(const char *dir);

/* ---- hashing --------------------------------------------------------------- */

/* 64-bit FNV-1a step and a final mix; stable across runs and machines. */
static inline uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ULL;
	return h;
}
static inline uint64_t hash_u64(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	h *= 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 31);
}
#define HASH_SEED 0xcbf29ce484222325ULL

/* SHA-256 of n bytes as 64 lowercase hex digits and a NUL (OpenSSL's libcrypto).
 * Plans record it for the files they name (docs/reliability.md). */
void sha256_hex(const void *p, size_t n, char out[65]);
/* mkdir -p: dir and its missing parents (0777 before the umask); 0, or -1 (errno). */
int mkdir_p(const char *dir);
/* The same over pieces: sha256_begin, sha256_add for each piece in order, then
 * sha256_end, which writes the digest and frees the state. */
typedef struct Sha256 Sha256;
Sha256 *sha256_begin(void);
void sha256_add(Sha256 *h, const void *p, size_t n);
void sha256_end(Sha256 *h, char out[65]);

/* Which build of fusec this is, for cache keys: FUSEC_VERSION alone does not change
 * when the code does, so the keys also take the executable's identity (device,
 * inode, size and modification time of /proc/self/exe). "" when it cannot be told;
 * caches then must not be used. Static storage. */
const char *fusec_build_id(void);



/* "Did you mean": the candidate closest to s by edit distance (insertions,
 * deletions, substitutions, swaps of neighbours), or NULL when none is close
 * (distance above a third of the longer word, at least 1, at most 3). */
const char *closest_word(const char *s, const char *const *cand, int n);

/* Seconds on a monotonic clock, for phase timings. */
double clock_seconds(void);

/* Shortest "%.Ng" text that reads back as the same double ("2", "0.1", "inf", "nan"). */
void fmt_double(char *buf, size_t size, double v);
#endif
