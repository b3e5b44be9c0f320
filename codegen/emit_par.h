/* emit_par.h: optimize and emit a chunked NVPTX module on several threads, with the
 * kernel cache (docs/kernel-cache.md).
 *
 * In:  a CgModule set to cg_module_chunked whose kernels are all built
 *      (cg_lower done); the number of worker threads; the cache folder or NULL.
 * Out: the PTX of every kernel, in the order the kernels were built, appended to
 *      *out: one header, then each chunk's kernels. The text depends only on the
 *      kernels and options: chunk boundaries come from the kernel specs, each chunk
 *      is optimized and emitted alone, and the parts are joined in chunk order,
 *      whatever the number of threads and whichever parts came from the cache.
 * Memory: each chunk's context and module are disposed of as soon as it is emitted;
 *      every worker has a target machine of its own. */
#ifndef FUSEC_EMIT_PAR_H
#define FUSEC_EMIT_PAR_H

#include "codegen.h"

typedef struct {
	int chunks;            /* chunks in the module */
	int hits;              /* of which the cache had */
	int threads;           /* worker threads used */
	int twins;             /* kernels whose PTX is an earlier kernel's, renamed */
} CgEmitStats;

/* Build the kernels of m in chunks from now on (NVPTX modules, before any kernel):
 * after a kernel whose spec hash is 0 mod 8, or once a chunk holds 32 kernels, the
 * chunk's context and module are set aside and a fresh pair opens. */
void cg_module_chunked(CgModule *m);

/* 0, or -1 with *d (the first failing chunk, in chunk order). progress, when not
 * NULL, is called with arg after each chunk (cached ones included) with the kernels
 * done so far and in all, from the worker threads, under a lock. */
int cg_module_emit_chunked(CgModule *m, int threads, const char *cache_dir,
			   void (*progress)(void *arg, int done, int total), void *arg,
			   Buf *out, CgEmitStats *st, Diag *d);

/* Worker threads by default: the CPUs online, at most 8. */
int cg_default_threads(void);

#endif
