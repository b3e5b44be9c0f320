/* result_cache.c: whole-compile results in the cache folder (result_cache.h).
 *
 * An entry is a sequence of records, each a tag letter, a number and a newline,
 * then as many bytes and a newline:
 *
 *     fusec-result/2
 *     K <n>  the key                       N <n>  the graph's name
 *     O <ops>                              D <n>  a dependency's path, then a line
 *     F <n>  an extension, then "<n>" and      with its SHA-256
 *            that many bytes of the file   S 64   the SHA-256 of all that precedes
 *     E      the end
 *
 * so that a truncated, damaged or changed entry is refused, never half read. The
 * entry is input like any other file: its name must be one a graph could have,
 * its extensions the ones a compile writes, and its dependencies files inside the
 * graph's folder, so nothing in it decides a path outside the output folder. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../codegen/kcache.h"
#include "../host/host.h"
#include "result_cache.h"

static const char magic[] = RC_FORMAT "\n";

/* The files a compile writes (write_outputs in compile.c): an entry names no other. */
static const char *const exts[] = {".plan.json", ".ptx", ".weights.bin", ".ll",
				   ".relative.txt", ".dot", ".svg"};

/* "S 64\n", the digest, "\nE\n" */
#define TAIL_BYTES (5 + 64 + 3)

/* Graphs and outputs can be large; entries beyond this are not kept. */
#define MAX_ENTRY_BYTES ((size_t)1 << 30)   /* the graph readers' limit too */

/* The contents of a regular file (malloc'd), or NULL. */
static char *slurp(const char *path, size_t max, size_t *len)
{
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > max)
		return NULL;
	Diag d;
	return read_file(path, max, len, &d);
}

int rc_key_file(Buf *key, const char *label, const char *path, char **keep, size_t *keep_len)
{
	size_t len;
	char *text = slurp(path, MAX_ENTRY_BYTES, &len);
	if (!text)
		return -1;
	char sha[65];
	sha256_hex(text, len, sha);
	buf_printf(key, "%s %zu %s\n", label, len, sha);
	if (keep) {
		*keep = text;
		*keep_len = len;
	} else {
		free(text);
	}
	return 0;
}

static char *entry_path(const char *dir, const Buf *key)
{
	char sha[65];
	sha256_hex(key->data ? key->data : "", key->len, sha);
	size_t n = strlen(dir) + 80;
	char *p = xmalloc(n);
	snprintf(p, n, "%s/r-%s.res", dir, sha);
	return p;
}

/* ---- reading ---------------------------------------------------------------- */

typedef struct {
	char *p, *end;
	bool bad;
} Cursor;

/* "<tag> <number>\n": the number, or -1 (and bad) when the record is not there. */
static long long record(Cursor *c, char tag)
{
	if (c->bad || c->end - c->p < 3 || c->p[0] != tag || c->p[1] != ' ') {
		c->bad = true;
		return -1;
	}
	char *q = c->p + 2;
	long long v = 0;
	while (q < c->end && *q >= '0' && *q <= '9' && v < (1LL << 40))
		v = v * 10 + (*q++ - '0');
	if (q == c->p + 2 || q >= c->end || *q != '\n') {
		c->bad = true;
		return -1;
	}
	c->p = q + 1;
	return v;
}

/* n bytes and a newline; the bytes are NUL-terminated in place of the newline. */
static char *bytes(Cursor *c, long long n)
{
	if (c->bad || n < 0 || c->end - c->p < n + 1 || c->p[n] != '\n') {
		c->bad = true;
		return NULL;
	}
	char *s = c->p;
	s[n] = 0;
	c->p += n + 1;
	return s;
}

/* The dependency as the graph names it (a path inside the graph's folder, joined
 * as ir/build.c joins it), or NULL when the graph could not have named it. */
static const char *dep_rel(const char *graph, const char *dep)
{
	const char *slash = strrchr(graph, '/');
	size_t n = slash ? (size_t)(slash - graph) + 1 : 0;
	if (strncmp(dep, graph, n) || !dep[n] || dep[n] == '/')
		return NULL;
	for (const char *p = dep + n; *p;) {
		size_t k = strcspn(p, "/");
		if (k == 2 && p[0] == '.' && p[1] == '.')
			return NULL;
		p += k + (p[k] == '/');
	}
	return dep + n;
}

/* The dependency holds the bytes it held: read as the graph reads it (no link). */
static bool dep_unchanged(const char *graph, const char *dep, const char *want)
{
	const char *rel = dep_rel(graph, dep);
	if (!rel)
		return false;
	size_t len;
	Diag d;
	char *text = host_read_constant_file(graph, rel, dep, &len, &d);
	if (!text)
		return false;
	char sha[65];
	sha256_hex(text, len, sha);
	free(text);
	return !strcmp(sha, want);
}

/* ".ARCH" then suffix: a file of one arch among several (".sm_80.ptx", ".sm_90a.ll"):
 * "sm_", two or three digits, at most an `a`. */
static bool arch_ext(const char *ext, const char *suffix)
{
	size_t n = strlen(ext), m = strlen(suffix);
	if (n <= m + 4 || strcmp(ext + n - m, suffix) || strncmp(ext, ".sm_", 4))
		return false;
	size_t d = strspn(ext + 4, "0123456789"), rest = n - m - 4 - d;
	return d >= 2 && d <= 3 && (rest == 0 || (rest == 1 && ext[4 + d] == 'a'));
}

static bool ext_known(const RcEntry *e, const char *ext)
{
	for (int i = 0; i < e->nfiles; i++)
		if (!strcmp(e->files[i].ext, ext))
			return false;   /* twice */
	for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++)
		if (!strcmp(ext, exts[i]))
			return true;
	return arch_ext(ext, ".ptx") || arch_ext(ext, ".ll");
}

bool rc_get(const char *dir, const Buf *key, const char *graph, RcEntry *e)
{
	memset(e, 0, sizeof *e);
	char *path = entry_path(dir, key);
	size_t len;
	e->data = cg_cache_read(path, MAX_ENTRY_BYTES, &len);
	free(path);
	if (!e->data)
		return false;
	/* the digest first: nothing of a changed entry is looked at */
	size_t m = sizeof magic - 1;
	if (len < m + TAIL_BYTES || memcmp(e->data, magic, m))
		goto miss;
	char *tail = e->data + len - TAIL_BYTES, sha[65];
	sha256_hex(e->data, len - TAIL_BYTES, sha);
	if (memcmp(tail, "S 64\n", 5) || memcmp(tail + 5, sha, 64) || memcmp(tail + 69, "\nE\n", 3))
		goto miss;
	Cursor c = {e->data + m, tail, false};
	long long kn = record(&c, 'K');
	const char *k = bytes(&c, kn);
	if (c.bad || (size_t)kn != key->len || memcmp(k, key->data, key->len))
		goto miss;
	e->name = bytes(&c, record(&c, 'N'));
	e->nops = (long)record(&c, 'O');
	if (c.bad || !ir_graph_name_ok(e->name))
		goto miss;
	while (!c.bad && c.p < c.end && *c.p == 'D') {
		const char *dep = bytes(&c, record(&c, 'D'));
		const char *dsha = bytes(&c, 64);
		if (c.bad || e->ndeps == (int)(sizeof e->deps / sizeof e->deps[0]) ||
		    !dep_unchanged(graph, dep, dsha))
			goto miss;
		e->deps[e->ndeps++] = dep;
	}
	while (!c.bad && c.p < c.end && *c.p == 'F') {
		const char *ext = bytes(&c, record(&c, 'F'));
		long long n = record(&c, 'L');
		const char *text = bytes(&c, n);
		if (c.bad || e->nfiles == (int)(sizeof e->files / sizeof e->files[0]) ||
		    !ext_known(e, ext))
			goto miss;
		e->files[e->nfiles++] = (RcFile){ext, text, (size_t)n};
	}
	if (c.bad || c.p != c.end || e->nfiles < 2 || strcmp(e->files[0].ext, exts[0]) ||
	    (strcmp(e->files[1].ext, exts[1]) && !arch_ext(e->files[1].ext, ".ptx")))
		goto miss;
	return true;
miss:
	rc_entry_free(e);
	return false;
}

void rc_entry_free(RcEntry *e)
{
	free(e->data);
	memset(e, 0, sizeof *e);
}

/* ---- writing ---------------------------------------------------------------- */

/* The entry being written, and the digest of what was written so far. */
typedef struct {
	FILE *f;
	Sha256 *h;
	bool ok;
} Writer;

static void put(Writer *w, const void *p, size_t n)
{
	if (w->ok && fwrite(p, 1, n, w->f) == n)
		sha256_add(w->h, p, n);
	else
		w->ok = false;
}

static void put_bytes(Writer *w, char tag, const char *s, size_t n)
{
	char head[32];
	int k = snprintf(head, sizeof head, "%c %zu\n", tag, n);
	put(w, head, (size_t)k);
	put(w, s, n);
	put(w, "\n", 1);
}

int rc_put(const char *dir, const Buf *key, const char *name, long nops,
	   const char *const *deps, const char (*sha)[65], int ndeps, const RcFile *files,
	   int nfiles)
{
	if (ndeps > 64 || nfiles > RC_MAX_FILES)
		return -1;
	FileReplace r;
	int fd = cg_cache_temp(dir, &r);
	if (fd < 0)
		return -1;
	Writer w = {fdopen(fd, "wb"), sha256_begin(), true};
	w.ok = w.f != NULL;
	put(&w, magic, sizeof magic - 1);
	put_bytes(&w, 'K', key->data, key->len);
	put_bytes(&w, 'N', name, strlen(name));
	char ops[32];
	put(&w, ops, (size_t)snprintf(ops, sizeof ops, "O %ld\n", nops));
	for (int i = 0; i < ndeps; i++) {
		put_bytes(&w, 'D', deps[i], strlen(deps[i]));
		put(&w, sha[i], 64);
		put(&w, "\n", 1);
	}
	for (int i = 0; i < nfiles; i++) {
		put_bytes(&w, 'F', files[i].ext, strlen(files[i].ext));
		put_bytes(&w, 'L', files[i].text, files[i].len);
	}
	char digest[65];
	sha256_end(w.h, digest);
	bool ok = w.ok && fprintf(w.f, "S 64\n%s\nE\n", digest) > 0;
	ok = (w.f ? fclose(w.f) == 0 : (close(fd), false)) && ok;
	char *path = entry_path(dir, key);
	int rc = file_replace_end(&r, path, ok, 0644);
	free(path);
	return rc;
}
