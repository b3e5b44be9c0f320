/* kcache.h: the on-disk kernel cache of `fusec compile` (docs/kernel-cache.md).
 *
 * In:  a chunk of a module's kernels (emit_par.c), built and not yet optimized, and
 *      the compile's options.
 * Out: the PTX the chunk would emit, when an earlier compile stored it; or a new
 *      entry stored after the chunk was optimized and emitted.
 *
 * The key is the text of everything the PTX depends on: the cache format, fusec's
 * version, LLVM's version, the target and arch, the libdevice file (path, size and
 * a hash of its bytes), the module name, and the spec of every kernel of the chunk
 * in order (kind, variant, relative ops with their placeholder numbers, written set). An entry is
 * the file DIR/<32 hex digits of two hashes of the key>.ptx, holding the lengths
 * of the key and the PTX and the SHA-256 of both, the key itself, then the PTX; a
 * read compares the whole key, the lengths and the digest, so a hash collision, a
 * truncated or a changed entry is a miss, never a wrong answer. Entries are written
 * to a temporary file in DIR and renamed into place, so parallel compiles sharing
 * DIR see whole entries or none. A cache that cannot be read or written is
 * skipped: the compile goes on without. Before any use, cg_cache_dir_check makes
 * the folder and refuses one that other users could write (the result cache of
 * cmd/result_cache.c lives in the same folder and reads its entries with
 * cg_cache_read too). Memory: the key is malloc'd (cg_cache_key_free). */
#ifndef FUSEC_KCACHE_H
#define FUSEC_KCACHE_H

#include "codegen.h"

typedef struct {
	Buf text;              /* the key */
	char name[33];         /* its file name stem: 32 hex digits */
} CgCacheKey;

/* The key of the module's kernels [first, first + n) (entries in creation order). */
void cg_cache_key(CgModule *m, int first, int n, CgCacheKey *k);
void cg_cache_key_free(CgCacheKey *k);
/* The cached PTX of key k in dir, appended to *ptx: true on a hit. */
bool cg_cache_get(const char *dir, const CgCacheKey *k, Buf *ptx);
/* Store ptx under key k in dir (made by cg_cache_dir_check). 0, or -1 (nothing stored). */
int cg_cache_put(const char *dir, const CgCacheKey *k, const char *ptx, size_t len);

typedef enum {
	CG_CACHE_OK,        /* use it */
	CG_CACHE_UNUSABLE,  /* it cannot be made or found: go on without a cache */
	CG_CACHE_UNSAFE,    /* other users could change it: why says how */
} CgCacheDir;

/* Make the cache folder dir when missing (mode 0700, and its missing parents), then
 * check that no other user can change it: the folder and each one above it belong
 * to the user or root, and no other user can write them (a sticky folder above it,
 * such as /tmp, is fine; a group that holds only the user counts as the user).
 * With trust, only the folder is made. */
CgCacheDir cg_cache_dir_check(const char *dir, bool trust, char *why, size_t n);
/* A cache entry's bytes, when path is a regular file of at most max bytes, read
 * whole: not through a link, and without waiting on a pipe. malloc'd and
 * NUL-terminated (*len bytes before the NUL), or NULL. */
char *cg_cache_read(const char *path, size_t max, size_t *len);
/* A new entry's temporary file in the cache folder dir (DIR/.tmp-xxxxxx,
 * file_replace_begin); its writer publishes it with file_replace_end. */
int cg_cache_temp(const char *dir, FileReplace *r);

#endif
