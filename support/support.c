/* support.c: arena, buffer, diagnostics and the allocation wrappers.
 *
 * The arena is a list of chunks; allocations bump a pointer in the head chunk and
 * large requests get a chunk of their own. Nothing is freed until arena_free. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/sha.h>


#include "support.h"

struct ArenaChunk {
	ArenaChunk *next;
	size_t used, cap;
	_Alignas(16) unsigned char mem[];
};

enum { ARENA_CHUNK = 64 * 1024 };

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		die("out of memory (%zu x %zu bytes)", n, size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

Arena *arena_new(void)
{
	return xcalloc(1, sizeof(Arena));
}

void arena_free(Arena *a)
{
	if (!a)
		return;
	for (ArenaChunk *c = a->head, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	free(a);
}

void arena_reset(Arena *a)
{
	ArenaChunk *keep = NULL;
	for (ArenaChunk *c = a->head, *next; c; c = next) {
		next = c->next;
		if (!keep && c->cap == ARENA_CHUNK)
			keep = c;
		else
			free(c);
	}
	if (keep) {
		keep->used = 0;
		keep->next = NULL;
	}
	a->head = keep;
	a->total = 0;
}

void *arena_alloc(Arena *a, size_t size)
{
	void *p = arena_alloc_raw(a, size);
	memset(p, 0, (size + 15) & ~(size_t)15);
	return p;
}

void *arena_alloc_raw(Arena *a, size_t size)
{
	size = (size + 15) & ~(size_t)15;
	ArenaChunk *c = a->head;
	if (!c || c->cap - c->used < size) {
		size_t cap = size > ARENA_CHUNK / 4 ? size : ARENA_CHUNK;
		ArenaChunk *n = xmalloc(sizeof(ArenaChunk) + cap);
		n->used = 0;
		n->cap = cap;
		if (c && cap != ARENA_CHUNK) {
			/* a big block: keep filling the current chunk afterwards */
			n->next = c->next;
			c->next = n;
		} else {
			n->next = c;
			a->head = n;
		}
		c = n;
	}
	void *p = c->mem + c->used;
	c->used += size;
	a->total += size;
	return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

char *arena_strdup(Arena *a, const char *s)
{
	return arena_strndup(a, s, strlen(s));
}

char *arena_printf(Arena *a, const char *fmt, ...)
{
	va_list ap, aq;
	va_start(ap, fmt);
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *p = arena_alloc(a, (size_t)n + 1);
	vsnprintf(p, (size_t)n + 1, fmt, aq);
	va_end(aq);
	return p;
}

static void buf_reserve(Buf *b, size_t extra)
{
	if (b->len + extra + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + extra + 1)
		cap *= 2;
	b->data = xrealloc(b->data, cap);
	b->cap = cap;
}

void buf_write(Buf *b, const void *p, size_t n)
{
	buf_reserve(b, n);
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = 0;
}

void buf_putc(Buf *b, char c)
{
	buf_write(b, &c, 1);
}

void buf_puts(Buf *b, const char *s)
{
	buf_write(b, s, strlen(s));
}

void buf_vprintf(Buf *b, const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	buf_reserve(b, (size_t)n);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void buf_printf(Buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	buf_vprintf(b, fmt, ap);
	va_end(ap);
}

void buf_free(Buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

void diag_set(Diag *d, const char *file, int line, int col, const char *fmt, ...)
{
	snprintf(d->file, sizeof d->file, "%s", file ? file : "");
	d->line = line;
	d->col = col;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof d->msg, fmt, ap);
	va_end(ap);
}

void diag_format(const Diag *d, char *buf, size_t size)
{
	if (d->line > 0 && d->col > 0)
		snprintf(buf, size, "%s:%d:%d: error: %s", d->file, d->line, d->col, d->msg);
	else if (d->line > 0)
		snprintf(buf, size, "%s:%d: error: %s", d->file, d->line, d->msg);
	else if (d->file[0])
		snprintf(buf, size, "%s: error: %s", d->file, d->msg);
	else
		snprintf(buf, size, "error: %s", d->msg);
}

_Noreturn void die_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "fusec: internal error at %s:%d: ", file, line);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

void fmt_double(char *buf, size_t size, double v)
{
	if (v != v) {
		snprintf(buf, size, "nan");
		return;
	}
	if (v == 1.0 / 0.0 || v == -1.0 / 0.0) {
		snprintf(buf, size, v > 0 ? "inf" : "-inf");
		return;
	}
	if (v == 0 && signbit(v)) {
		snprintf(buf, size, "-0.0");
		return;
	}
	if (v > -1e15 && v < 1e15 && v == (double)(long long)v) {
		snprintf(buf, size, "%lld", (long long)v);   /* 10, not 1e+01 */
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, size, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

double clock_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- files ----------------------------------------------------------------- */

char *read_regular_file(const char *path, size_t max, size_t *len, Diag *d)
{
	struct stat sb;
	if (stat(path, &sb) != 0) {
		diag_set(d, path, 0, 0, "cannot open: %s", strerror(errno));
		return NULL;
	}
	if (!S_ISREG(sb.st_mode)) {
		diag_set(d, path, 0, 0, "not a regular file (%s)",
			 S_ISDIR(sb.st_mode) ? "a folder" : S_ISCHR(sb.st_mode) ? "a device" :
			 S_ISFIFO(sb.st_mode) ? "a pipe" : "a special file");
		return NULL;
	}
	if (max && (uint64_t)sb.st_size >= max) {
		diag_set(d, path, 0, 0, "file is larger than %zu MiB", max >> 20);
		return NULL;
	}
	/* read_file still stops at max: the file may grow, or be swapped for another,
	 * between the stat and the read. */
	return read_file(path, max, len, d);
}

int finish_stdout(const char *prog, int status)
{
	int bad = fflush(stdout) != 0 || ferror(stdout);
	int err = errno;
	if (fclose(stdout) != 0 && !bad) {
		bad = 1;
		err = errno;
	}
	if (!bad)
		return status;
	fprintf(stderr, "%s: error: cannot write the output: %s\n", prog,
		err ? strerror(err) : "write error");
	return status ? status : 3;
}

void sha256_hex(const void *p, size_t n, char out[65])
{
	unsigned char md[32];
	SHA256(p, n, md);
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

int mkdir_p(const char *dir)
{
	char *p = xmalloc(strlen(dir) + 1);
	strcpy(p, dir);
	int rc = 0;
	for (char *s = p + 1; rc == 0; s++) {
		if (*s != '/' && *s)
			continue;
		char ch = *s;
		*s = 0;
		if (mkdir(p, 0777) != 0 && errno != EEXIST)
			rc = -1;
		*s = ch;
		if (!ch)
			break;
	}
	free(p);
	return rc;
}

struct Sha256 {
	EVP_MD_CTX *ctx;
};

Sha256 *sha256_begin(void)
{
	Sha256 *h = xmalloc(sizeof *h);
	h->ctx = EVP_MD_CTX_new();
	if (!h->ctx || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
		fprintf(stderr, "fusec: libcrypto cannot start a SHA-256\n");
		abort();
	}
	return h;
}

void sha256_add(Sha256 *h, const void *p, size_t n)
{
	if (n && EVP_DigestUpdate(h->ctx, p, n) != 1) {
		fprintf(stderr, "fusec: libcrypto SHA-256 update failed\n");
		abort();
	}
}

void sha256_end(Sha256 *h, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	if (EVP_DigestFinal_ex(h->ctx, md, &len) != 1 || len != 32) {
		fprintf(stderr, "fusec: libcrypto SHA-256 final failed\n");
		abort();
	}
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	EVP_MD_CTX_free(h->ctx);
	free(h);
}

const char *fusec_build_id(void)
{
	static char id[128];
	static int done;
	if (!done) {
		struct stat st;
		if (stat("/proc/self/exe", &st) == 0)
			snprintf(id, sizeof id, "%llx:%llx:%lld:%lld.%09ld",
				 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
				 (long long)st.st_size, (long long)st.st_mtim.tv_sec,
				 (long)st.st_mtim.tv_nsec);
		done = 1;
	}
	return id;
}

char *read_file(const char *path, size_t max, size_t *len, Diag *d)
{
	bool std = !strcmp(path, "-");
	const char *name = std ? "<stdin>" : path;
	FILE *f = std ? stdin : fopen(path, "rb");
	if (!f) {
		diag_set(d, name, 0, 0, "cannot open: %s", strerror(errno));
		return NULL;
	}
	/* A device (/dev/zero, a disk) or a folder is no file to read: refuse it before
	 * reading up to max bytes of it. Pipes are read, up to max. */
	struct stat sb;
	if (fstat(fileno(f), &sb) == 0 && (S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) ||
					   S_ISDIR(sb.st_mode)) && !(std && S_ISCHR(sb.st_mode))) {
		diag_set(d, name, 0, 0, "not a regular file (%s)",
			 S_ISDIR(sb.st_mode) ? "a folder" : "a device");
		if (!std)
			fclose(f);
		return NULL;
	}
	size_t cap = 1 << 16, n = 0;
	char *buf = xmalloc(cap);
	errno = 0;
	for (;;) {
		if (n == cap) {
			if (max && cap >= max) {
				diag_set(d, name, 0, 0, "input is larger than %zu MiB", max >> 20);
				free(buf);
				buf = NULL;
				break;
			}
			cap *= 2;
			buf = xrealloc(buf, cap);
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (buf && ferror(f)) {
		diag_set(d, name, 0, 0, "cannot read: %s", strerror(errno));
		free(buf);
		buf = NULL;
	}
	if (!std)
		fclose(f);
	if (!buf)
		return NULL;
	if (n == cap)
		buf = xrealloc(buf, cap + 1);
	buf[n] = 0;
	*len = n;
	return buf;
}

static int edit_distance(const char *a, const char *b)
{
	enum { MAXW = 64 };
	int la = (int)strlen(a), lb = (int)strlen(b);
	if (la >= MAXW || lb >= MAXW)
		return MAXW;
	int d[MAXW + 1][MAXW + 1];
	for (int i = 0; i <= la; i++)
		d[i][0] = i;
	for (int j = 0; j <= lb; j++)
		d[0][j] = j;
	for (int i = 1; i <= la; i++)
		for (int j = 1; j <= lb; j++) {
			int cost = a[i - 1] != b[j - 1];
			int v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < v)
				v = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[la][lb];
}

const char *closest_word(const char *s, const char *const *cand, int n)
{
	const char *best = NULL;
	int bestd = 0;
	for (int i = 0; i < n; i++) {
		if (!cand[i])
			continue;
		int d = edit_distance(s, cand[i]);
		int la = (int)strlen(s), lc = (int)strlen(cand[i]);
		int limit = (la > lc ? la : lc) / 3;
		if (limit < 1)
			limit = 1;
		if (limit > 3)
			limit = 3;
		if (d <= limit && (!best || d < bestd)) {
			best = cand[i];
			bestd = d;
		}
	}
	return best;
}
