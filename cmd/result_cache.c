/* result_cache.c: whole-compile results in the cache folder (result_cache.h).
 *
 * An entry is a sequence of records, each a tag letter, a number and a newline,
 * then as many bytes and a newline:
 *
 *     fusec-result/1
 *     K <n>  the key                       N <n>  the graph's name
 *     O <ops>                              D <n>  a dependency's path, then a line
 *     F <n>  an extension, then "<n>" and      with its SHA-256
 *            that many bytes of the file   E      the end
 *
 * so that a truncated or damaged entry is refused, never half read. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "result_cache.h"

static const char magic[] = "fusec-result/1\n";

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

int rc_file_sha(const char *path, char out[65])
{
	size_t len;
	char *text = slurp(path, MAX_ENTRY_BYTES, &len);
	if (!text)
		return -1;
	sha256_hex(text, len, out);
	free(text);
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

static bool dep_unchanged(const char *path, const char *want)
{
	char sha[65];
	return rc_file_sha(path, sha) == 0 && !strcmp(sha, want);
}

bool rc_get(const char *dir, const Buf *key, RcEntry *e)
{
	memset(e, 0, sizeof *e);
	char *path = entry_path(dir, key);
	size_t len;
	e->data = slurp(path, MAX_ENTRY_BYTES, &len);
	free(path);
	if (!e->data)
		return false;
	Cursor c = {e->data, e->data + len, false};
	size_t m = sizeof magic - 1;
	if (len < m || memcmp(e->data, magic, m))
		goto miss;
	c.p += m;
	long long kn = record(&c, 'K');
	const char *k = bytes(&c, kn);
	if (c.bad || (size_t)kn != key->len || memcmp(k, key->data, key->len))
		goto miss;
	e->name = bytes(&c, record(&c, 'N'));
	e->nops = (long)record(&c, 'O');
	while (!c.bad && c.p < c.end && *c.p == 'D') {
		const char *dep = bytes(&c, record(&c, 'D'));
		const char *sha = bytes(&c, 64);
		if (c.bad || e->ndeps == (int)(sizeof e->deps / sizeof e->deps[0]) ||
		    !dep_unchanged(dep, sha))
			goto miss;
		e->deps[e->ndeps++] = dep;
	}
	while (!c.bad && c.p < c.end && *c.p == 'F') {
		const char *ext = bytes(&c, record(&c, 'F'));
		long long n = record(&c, 'L');
		const char *text = bytes(&c, n);
		if (c.bad || e->nfiles == (int)(sizeof e->files / sizeof e->files[0]))
			goto miss;
		e->files[e->nfiles++] = (RcFile){ext, text, (size_t)n};
	}
	if (c.bad || c.end - c.p != 2 || memcmp(c.p, "E\n", 2) || !e->nfiles || !e->name[0])
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

static bool put_bytes(FILE *f, char tag, const char *s, size_t n)
{
	return fprintf(f, "%c %zu\n", tag, n) > 0 && fwrite(s, 1, n, f) == n && putc('\n', f) != EOF;
}

int rc_put(const char *dir, const Buf *key, const char *name, long nops,
	   const char *const *deps, const char (*sha)[65], int ndeps, const RcFile *files,
	   int nfiles)
{
	if (ndeps > 64 || nfiles > 8 || mkdir_p(dir))
		return -1;
	size_t n = strlen(dir) + 24;
	char *tmp = xmalloc(n);
	snprintf(tmp, n, "%s/.tmp-XXXXXX", dir);
	int fd = mkstemp(tmp);
	if (fd < 0) {
		free(tmp);
		return -1;
	}
	FILE *f = fdopen(fd, "wb");
	bool ok = f && fputs(magic, f) != EOF && put_bytes(f, 'K', key->data, key->len) &&
		  put_bytes(f, 'N', name, strlen(name)) && fprintf(f, "O %ld\n", nops) > 0;
	for (int i = 0; ok && i < ndeps; i++)
		ok = put_bytes(f, 'D', deps[i], strlen(deps[i])) && fprintf(f, "%s\n", sha[i]) > 0;
	for (int i = 0; ok && i < nfiles; i++)
		ok = put_bytes(f, 'F', files[i].ext, strlen(files[i].ext)) &&
		     put_bytes(f, 'L', files[i].text, files[i].len);
	ok = ok && fputs("E\n", f) != EOF;
	ok = (f ? fclose(f) == 0 : (close(fd), false)) && ok;
	char *path = entry_path(dir, key);
	if (ok)
		ok = chmod(tmp, 0644) == 0 && rename(tmp, path) == 0;
	if (!ok)
		unlink(tmp);
	free(path);
	free(tmp);
	return ok ? 0 : -1;
}
