/* kcache.c: the on-disk kernel cache (kcache.h). */
#include <errno.h>
#include <fcntl.h>
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
 * spec, new code), split-K matmul configurations */
static const char magic[] = "fusec-kcache/5\n";

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

bool cg_cache_get(const char *dir, const CgCacheKey *k, Buf *ptx)
{
	char *path = entry_path(dir, k);
	FILE *f = fopen(path, "rb");
	free(path);
	if (!f)
		return false;
	bool hit = false;
	char line[32];
	unsigned long long keylen;
	if (fgets(line, sizeof line, f) && sscanf(line, "%llu", &keylen) == 1 &&
	    keylen == k->text.len) {
		char *key = xmalloc(k->text.len + 1);
		hit = fread(key, 1, k->text.len, f) == k->text.len &&
		      !memcmp(key, k->text.data, k->text.len);
		free(key);
	}
	if (hit) {
		size_t start = ptx->len, n;
		char chunk[65536];
		while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
			buf_write(ptx, chunk, n);
		if (ferror(f) || ptx->len == start) {
			ptx->len = start;
			if (ptx->data)
				ptx->data[start] = 0;
			hit = false;
		}
	}
	fclose(f);
	return hit;
}

int cg_cache_put(const char *dir, const CgCacheKey *k, const char *ptx, size_t len)
{
	if (mkdir_p(dir))
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
	bool ok = f && fprintf(f, "%zu\n", k->text.len) > 0 &&
		  fwrite(k->text.data, 1, k->text.len, f) == k->text.len &&
		  fwrite(ptx, 1, len, f) == len;
	ok = (f ? fclose(f) == 0 : (close(fd), false)) && ok;
	char *path = entry_path(dir, k);
	if (ok)
		ok = chmod(tmp, 0644) == 0 && rename(tmp, path) == 0;
	if (!ok)
		unlink(tmp);
	free(path);
	free(tmp);
	return ok ? 0 : -1;
}
