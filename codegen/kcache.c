/* kcache.c: the on-disk kernel cache (kcache.h), and what both caches share: the
 * folder's check and the reading of an entry.
 *
 * A cache is input fusec did not necessarily write: anyone who can write the
 * folder can plant an entry, and a disk or a killed copy can leave a damaged one.
 * So a folder that other users can write (or that lies under one they can rename)
 * is refused unless the user trusts it, an entry is opened without following a
 * link or waiting on a pipe, and it carries its lengths and the SHA-256 of the key
 * and the PTX: a short, long or changed entry is a miss, and the compile that
 * misses writes it again. */
#define _DEFAULT_SOURCE   /* realpath, S_ISVTX */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cg_impl.h"
#include "kcache.h"

/* 2: cooperative reduce kernels; 3: reduce rows kept in registers; 4: f32 gelu's
 * one-piece erfc, bf16 rounding by cvt.rn on sm_80+, the matmul tile table remade
 * (variant numbers changed); 5: split reductions zero their partials (the same
 * spec, new code), split-K matmul configurations; 6: entries carry their lengths
 * and a SHA-256 of the key and the PTX */
static const char magic[] = "fusec-kcache/6\n";

/* Entries beyond this are not read (a chunk's PTX is at most a few MB). */
#define MAX_ENTRY_BYTES ((size_t)1 << 30)

/* A second, independent 64-bit hash for the file name (the first is FNV-1a). */
static uint64_t mix_hash(const char *p, size_t n)
{
	uint64_t h = 0x243f6a8885a308d3ULL ^ n;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	return hash_u64(h, n);
}

static void key_file(CgCacheKey *k, const char *path)
{
	buf_printf(&k->text, "libdevice %s", path);
	FILE *f = fopen(path, "rb");
	if (!f) {
		buf_puts(&k->text, " unreadable\n");
		return;
	}
	uint64_t h = HASH_SEED;
	size_t total = 0, n;
	char chunk[65536];
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
		h = hash_bytes(h, chunk, n);
		total += n;
	}
	fclose(f);
	buf_printf(&k->text, " %zu %016llx\n", total, (unsigned long long)h);
}

void cg_cache_key(CgModule *m, int first, int n, CgCacheKey *k)
{
	memset(k, 0, sizeof *k);
	unsigned major, minor, patch;
	LLVMGetVersion(&major, &minor, &patch);
	buf_printf(&k->text, "%sfusec %s\nbuild %s\nllvm %u.%u.%u\ntarget %d %s\nname %s\ncheck %d\n"
		   "codegen level %d\n",
		   magic, FUSEC_VERSION, fusec_build_id(), major, minor, patch, (int)m->opt.target,
		   m->opt.arch ? m->opt.arch : "", m->opt.name ? m->opt.name : "",
		   !m->opt.no_call_check, cg_nvptx_codegen_level());
	if (m->opt.libdevice)
		key_file(k, m->opt.libdevice);
	for (int i = first; i < first + n; i++) {
		const CgEntry *e = &m->entries[i];
		/* the variant (matmul tile configuration) is part of a kernel's identity:
		 * the same ops get other code at other sizes or under --allow-tf32 */
		buf_printf(&k->text, "kernel %d %d %d\n", (int)e->kind, e->nops, e->variant);
		if (e->nhwc)   /* a channel-last tensor (NHWCRelayout): other code */
			buf_printf(&k->text, " nhwc %d\n", e->nhwc - 1);
		if (e->red_long == CG_RED_LONG_F32)   /* long f32 rows: other trips and registers */
			buf_puts(&k->text, " red_long\n");
		else if (e->red_long)   /* long rows with the row cache in dynamic shared memory */
			buf_printf(&k->text, " red_long %d\n", e->red_long);
		if (e->red_row)   /* a reduce kernel built for one row length and block */
			buf_printf(&k->text, " red_row %lld %d %d\n", (long long)e->red_row, e->red_g,
				   e->red_r);
		for (int j = 0; j < e->nops; j++) {
			buf_printf(&k->text, " %d ", e->ops[j].place0);
			ir_rel_print(&k->text, &e->ops[j]);
			buf_putc(&k->text, '\n');
		}
		buf_puts(&k->text, " written");
		for (int j = 0; j < e->nwritten; j++)
			if (e->written[j])
				buf_printf(&k->text, " %d", j);
		buf_putc(&k->text, '\n');
	}
	uint64_t a = hash_bytes(HASH_SEED, k->text.data, k->text.len);
	uint64_t b = mix_hash(k->text.data, k->text.len);
	snprintf(k->name, sizeof k->name, "%016llx%016llx", (unsigned long long)a,
		 (unsigned long long)b);
}

void cg_cache_key_free(CgCacheKey *k)
{
	buf_free(&k->text);
}

static char *entry_path(const char *dir, const CgCacheKey *k)
{
	size_t n = strlen(dir) + sizeof k->name + 8;
	char *p = xmalloc(n);
	snprintf(p, n, "%s/%s.ptx", dir, k->name);
	return p;
}

/* "<digits>" then the character after: the number, or NULL past the end. */
static const char *number(const char *p, const char *end, char after, uint64_t *v)
{
	const char *q = p;
	*v = 0;
	while (q < end && *q >= '0' && *q <= '9' && *v < ((uint64_t)1 << 40))
		*v = *v * 10 + (uint64_t)(*q++ - '0');
	return q > p && q < end && *q == after ? q + 1 : NULL;
}

/* An entry is "<key length> <PTX length> <SHA-256 of key and PTX>\n", the key,
 * then the PTX: exactly so long, with that digest, and the very key asked for. */
bool cg_cache_get(const char *dir, const CgCacheKey *k, Buf *ptx)
{
	char *path = entry_path(dir, k);
	size_t len;
	char *data = cg_cache_read(path, MAX_ENTRY_BYTES, &len);
	free(path);
	if (!data)
		return false;
	const char *end = data + len, *p = data;
	uint64_t kn = 0, pn = 0;
	p = number(p, end, ' ', &kn);
	p = p ? number(p, end, ' ', &pn) : NULL;
	bool hit = p && end - p > 65 && p[64] == '\n' && strspn(p, "0123456789abcdef") >= 64;
	const char *body = hit ? p + 65 : NULL;
	hit = hit && kn == k->text.len && pn > 0 && (uint64_t)(end - body) == kn + pn &&
	      !memcmp(body, k->text.data, kn);
	if (hit) {
		char sha[65];
		sha256_hex(body, (size_t)(kn + pn), sha);
		hit = !memcmp(sha, p, 64);
	}
	if (hit)
		buf_write(ptx, body + kn, (size_t)pn);
	free(data);
	return hit;
}

int cg_cache_put(const char *dir, const CgCacheKey *k, const char *ptx, size_t len)
{
	FileReplace r;
	int fd = cg_cache_temp(dir, &r);
	if (fd < 0)
		return -1;
	char sha[65];
	Sha256 *h = sha256_begin();
	sha256_add(h, k->text.data, k->text.len);
	sha256_add(h, ptx, len);
	sha256_end(h, sha);
	FILE *f = fdopen(fd, "wb");
	bool ok = f && fprintf(f, "%zu %zu %s\n", k->text.len, len, sha) > 0 &&
		  fwrite(k->text.data, 1, k->text.len, f) == k->text.len &&
		  fwrite(ptx, 1, len, f) == len;
	ok = (f ? fclose(f) == 0 : (close(fd), false)) && ok;
	char *path = entry_path(dir, k);
	int rc = file_replace_end(&r, path, ok, 0644);
	free(path);
	return rc;
}

/* ---- what both caches share ------------------------------------------------------ */

int cg_cache_temp(const char *dir, FileReplace *r)
{
	/* a fresh name, taken away again if a signal ends the compile */
	size_t n = strlen(dir) + 8;
	char *prefix = xmalloc(n);
	snprintf(prefix, n, "%s/.tmp-", dir);
	int fd = file_replace_begin(r, prefix);
	free(prefix);
	return fd;
}

char *cg_cache_read(const char *path, size_t max, size_t *len)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat sb;
	char *data = NULL;
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size <= max) {
		size_t size = (size_t)sb.st_size, got = 0;
		data = xmalloc(size + 1);
		ssize_t r = 1;
		while (got < size && (r = read(fd, data + got, size - got)) != 0)
			if (r > 0)
				got += (size_t)r;
			else if (errno != EINTR)
				break;
		/* shorter than fstat said (truncated meanwhile), or longer: not whole */
		char extra;
		if (got != size || read(fd, &extra, 1) != 0) {
			free(data);
			data = NULL;
		} else {
			data[size] = 0;
			*len = size;
		}
	}
	close(fd);
	return data;
}

/* A group of the user alone: the user's own primary group, named as the user, with
 * no other member (the "user private group" of most Linux distributions, under
 * which umask 002 makes folders group-writable). */
static bool private_group(gid_t gid)
{
	struct passwd *pw = getpwuid(geteuid());
	struct group *gr = pw ? getgrgid(gid) : NULL;
	if (!gr || gid != pw->pw_gid || strcmp(gr->gr_name, pw->pw_name))
		return false;
	for (char **m = gr->gr_mem; *m; m++)
		if (strcmp(*m, pw->pw_name))
			return false;
	return true;
}

/* Whether another user can change what folder p holds (last: the cache folder
 * itself, where a sticky bit does not help: others could add entries). */
static bool unsafe_folder(const char *p, bool last, char *why, size_t n)
{
	struct stat sb;
	if (lstat(p, &sb) != 0) {
		snprintf(why, n, "'%s' cannot be examined: %s", p, strerror(errno));
		return true;
	}
	if (!S_ISDIR(sb.st_mode)) {
		snprintf(why, n, "'%s' is not a folder", p);
		return true;
	}
	if (sb.st_uid != geteuid() && sb.st_uid != 0) {
		snprintf(why, n, "'%s' belongs to another user (uid %u)", p, (unsigned)sb.st_uid);
		return true;
	}
	bool others = (sb.st_mode & S_IWOTH) || ((sb.st_mode & S_IWGRP) && !private_group(sb.st_gid));
	if (others && (last || !(sb.st_mode & S_ISVTX))) {
		snprintf(why, n, "'%s' can be written by other users (mode %04o)", p,
			 (unsigned)(sb.st_mode & 07777));
		return true;
	}
	return false;
}

CgCacheDir cg_cache_dir_check(const char *dir, bool trust, char *why, size_t n)
{
	why[0] = 0;
	/* missing folders are made private: only their user reads or writes them */
	char *p = xmalloc(strlen(dir) + 1);
	strcpy(p, dir);
	bool made = true;
	for (char *s = p + 1; made; s++) {
		if (*s != '/' && *s)
			continue;
		char ch = *s;
		*s = 0;
		made = mkdir(p, 0700) == 0 || errno == EEXIST;
		*s = ch;
		if (!ch)
			break;
	}
	free(p);
	if (!made)
		return CG_CACHE_UNUSABLE;
	if (trust)
		return CG_CACHE_OK;
	char real[PATH_MAX];
	if (!realpath(dir, real))
		return CG_CACHE_UNUSABLE;
	/* every folder on the way: another user who can rename one can swap the cache */
	bool unsafe = unsafe_folder("/", !real[1], why, n);
	for (char *s = real + 1; !unsafe && *s; s++) {
		if (s[1] && s[1] != '/')
			continue;
		char ch = s[1];
		s[1] = 0;
		unsafe = unsafe_folder(real, !ch, why, n);
		s[1] = ch;
	}
	return unsafe ? CG_CACHE_UNSAFE : CG_CACHE_OK;
}
