/* emit_par.c: chunks of a module optimized and emitted on worker threads
 * (emit_par.h).
 *
 * Each chunk has its own LLVMContext and module (module.c closes them while the
 * kernels are built), so a worker owns everything it touches: it sets its own
 * diagnostic handler on the chunk's context, verifies, links libdevice when asked,
 * runs default<O3> with its own target machine, checks the calls and emits PTX.
 * The main thread hands chunks out in order under a mutex and joins the parts.
 *
 * Joining: every part starts with the same header (the generator comment,
 * .version, .target, .address_size); the first part is kept whole and the others
 * from their first line after the header. A chunk whose PTX declares anything at
 * module level besides its entry points (a .global, .const, .shared, .func or
 * .extern) could clash with another chunk's, so it is refused as an internal error
 * rather than joined; the one exception is the dynamic shared memory's .extern,
 * the same line wherever it appears, written once after the header. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "cg_impl.h"
#include "emit_par.h"
#include "kcache.h"

typedef struct {
	struct CgChunk *chunk;
	CgCacheKey key;
	bool cached;           /* the part came from the cache */
	Buf ptx;
	Diag d;
	int rc;
	char *error;           /* first LLVM error diagnostic (malloc) */
} Job;

typedef struct {
	CgModule *m;
	Job *jobs;
	int njobs, next;
	pthread_mutex_t lock;
	void (*progress)(void *arg, int done, int total);
	void *arg;
	int done, total;       /* kernels, for progress */
} Pool;

static void count_done(Pool *p, const Job *j)
{
	if (!p->progress)
		return;
	pthread_mutex_lock(&p->lock);
	p->done += j->chunk->n;
	p->progress(p->arg, p->done, p->total);
	pthread_mutex_unlock(&p->lock);
}

static void job_diag_handler(LLVMDiagnosticInfoRef di, void *arg)
{
	Job *j = arg;
	if (LLVMGetDiagInfoSeverity(di) != LLVMDSError || j->error)
		return;
	char *s = LLVMGetDiagInfoDescription(di);
	size_t n = strlen(s) + 1;
	j->error = xmalloc(n);
	memcpy(j->error, s, n);
	LLVMDisposeMessage(s);
}

static int job_check(Job *j, const char *when)
{
	if (!j->error)
		return 0;
	diag_set(&j->d, "codegen", 0, 0, "LLVM error while %s: %s", when, j->error);
	return -1;
}

static int run_job(CgModule *m, LLVMTargetMachineRef tm, Job *j)
{
	LLVMModuleRef mod = j->chunk->mod;
	LLVMContextSetDiagnosticHandler(j->chunk->ctx, job_diag_handler, j);
	char *msg = NULL;
	if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
		diag_set(&j->d, "codegen", 0, 0, "internal: invalid kernel IR: %.600s", msg);
		LLVMDisposeMessage(msg);
		return -1;
	}
	LLVMDisposeMessage(msg);
	if (m->opt.libdevice && cg_math_link_libdevice(mod, m->opt.libdevice, &j->d))
		return -1;
	LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
	LLVMErrorRef err = LLVMRunPasses(mod, "default<O3>", tm, po);
	LLVMDisposePassBuilderOptions(po);
	if (err) {
		char *e = LLVMGetErrorMessage(err);
		diag_set(&j->d, "codegen", 0, 0, "optimization failed: %s", e);
		LLVMDisposeErrorMessage(e);
		return -1;
	}
	if (job_check(j, "optimizing"))
		return -1;
	if (!m->opt.no_call_check && cg_check_calls(mod, m->opt.target, &j->d))
		return -1;
	LLVMMemoryBufferRef mb = NULL;
	msg = NULL;
	if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &msg, &mb)) {
		diag_set(&j->d, "codegen", 0, 0, "PTX emission failed: %s", msg ? msg : "");
		LLVMDisposeMessage(msg);
		return -1;
	}
	if (job_check(j, "emitting PTX")) {
		LLVMDisposeMemoryBuffer(mb);
		return -1;
	}
	buf_write(&j->ptx, LLVMGetBufferStart(mb), LLVMGetBufferSize(mb));
	LLVMDisposeMemoryBuffer(mb);
	return 0;
}

static void *worker(void *arg)
{
	Pool *p = arg;
	LLVMTargetMachineRef tm = cg_module_target_machine(p->m);
	for (;;) {
		pthread_mutex_lock(&p->lock);
		int i = p->next < p->njobs ? p->next++ : -1;
		pthread_mutex_unlock(&p->lock);
		if (i < 0)
			break;
		Job *j = &p->jobs[i];
		if (j->cached) {
			count_done(p, j);
			continue;
		}
		if (!tm) {
			diag_set(&j->d, "codegen", 0, 0, "cannot create a target machine for %s",
				 p->m->opt.arch);
			j->rc = -1;
		} else {
			j->rc = run_job(p->m, tm, j);
		}
		/* done with the chunk: free its memory now */
		LLVMDisposeModule(j->chunk->mod);
		LLVMContextDispose(j->chunk->ctx);
		j->chunk->mod = NULL;
		j->chunk->ctx = NULL;
		count_done(p, j);
	}
	if (tm)
		LLVMDisposeTargetMachine(tm);
	return NULL;
}

int cg_default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > 8 ? 8 : (int)n;
}

/* Length of the header of a part: up to and including the .address_size line and
 * the blank line after it; 0 when there is none. */
static size_t header_len(const char *s, size_t len)
{
	const char *a = strstr(s, "\n.address_size ");
	if (!a)
		return 0;
	const char *e = memchr(a + 1, '\n', len - (size_t)(a + 1 - s));
	if (!e)
		return 0;
	e++;
	while ((size_t)(e - s) < len && *e == '\n')
		e++;
	return (size_t)(e - s);
}

/* The one module-level declaration parts may share: the launch's dynamic shared
 * memory (matmul_tile.c's large tiles), the same line in every part that has it,
 * written once after the header of the joined PTX. */
static const char dyn_shared_decl[] = ".extern .shared .align 16 .b8 fusec_dynamic_shared[];";

static bool is_dyn_shared(const char *p, size_t n)
{
	return n == sizeof dyn_shared_decl - 1 && !memcmp(p, dyn_shared_decl, n);
}

/* Append the body s to out without its dynamic shared declaration; *had: it was there. */
static void write_body(Buf *out, const char *s, size_t len, bool *had)
{
	for (const char *p = s; p < s + len;) {
		const char *nl = memchr(p, '\n', (size_t)(s + len - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(s + len - p);
		if (is_dyn_shared(p, n)) {
			*had = true;
			/* and the blank line LLVM puts after it */
			if (nl && nl + 1 < s + len && nl[1] == '\n')
				nl++;
		} else {
			buf_write(out, p, nl ? n + 1 : n);
		}
		p += nl ? (size_t)(nl - p) + 1 : n;
	}
}

/* Does the body declare anything at module level besides entry points (and the
 * dynamic shared memory)? */
static bool module_level_decl(const char *s, size_t len)
{
	static const char *const bad[] = {".global", ".const", ".shared", ".func", ".extern",
					  ".weak", ".visible .func", ".visible .global"};
	for (const char *p = s; p < s + len;) {
		const char *nl = memchr(p, '\n', (size_t)(s + len - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(s + len - p);
		for (size_t i = 0; i < sizeof bad / sizeof bad[0] && !is_dyn_shared(p, n); i++)
			if (n >= strlen(bad[i]) && !strncmp(p, bad[i], strlen(bad[i])))
				return true;
		p += n + 1;
	}
	return false;
}

/* ---- twins (module.c, cg_module_twin) ----
 *
 * A twin's chunk holds a stub under the twin's name; its PTX function (from
 * ".visible .entry NAME(" to the closing "}" line) is replaced by the original's,
 * renamed, with its branch labels ($L__BB<f>_, f: the function's number in its
 * chunk) renumbered to the stub's. */

/* The first occurrence of p[0..n) in s[0..len), or NULL. */
static const char *find_bytes(const char *s, size_t len, const char *p, size_t n)
{
	for (const char *q = s; n <= len && q <= s + len - n; q++) {
		q = memchr(q, p[0], (size_t)(s + len - n - q) + 1);
		if (!q)
			return NULL;
		if (!memcmp(q, p, n))
			return q;
	}
	return NULL;
}

/* The PTX function of kernel name in s: [*at, *at + *len); false when absent. */
static bool find_function(const char *s, size_t slen, const char *name, size_t *at, size_t *len)
{
	Buf pat = {0};
	buf_printf(&pat, "\n.visible .entry %s(", name);
	const char *p = find_bytes(s, slen, pat.data, pat.len);
	buf_free(&pat);
	if (!p)
		return false;
	p++;
	const char *e = find_bytes(p, slen - (size_t)(p - s), "\n}\n", 3);
	if (!e)
		return false;
	*at = (size_t)(p - s);
	*len = (size_t)(e + 3 - p);
	return true;
}

/* Append f (a function's PTX) to out with name a replaced by b and labels
 * $L__BB<fa>_ by $L__BB<fb>_; -1 when f has a label of another number. */
static int put_twin(Buf *out, const char *f, size_t n, const char *a, const char *b, int fa,
		    int fb)
{
	char la[32], lb[32];
	snprintf(la, sizeof la, "$L__BB%d_", fa);
	snprintf(lb, sizeof lb, "$L__BB%d_", fb);
	size_t na = strlen(a), nla = strlen(la);
	for (size_t i = 0; i < n;) {
		if (n - i >= na && f[i] == a[0] && !memcmp(f + i, a, na)) {
			buf_puts(out, b);
			i += na;
		} else if (n - i >= 6 && f[i] == '$' && !memcmp(f + i, "$L__BB", 6)) {
			if (n - i < nla || memcmp(f + i, la, nla))
				return -1;
			buf_puts(out, lb);
			i += nla;
		} else {
			buf_putc(out, f[i++]);
		}
	}
	return 0;
}

/* Put the originals' PTX in place of the stubs of chunk c (job j). */
static int patch_twins(CgModule *m, Job *jobs, int c, Diag *d)
{
	const struct CgChunk *ch = &m->chunks[c];
	for (int e = ch->first; e < ch->first + ch->n; e++) {
		int o = m->entries[e].twin;
		if (o < 0)
			continue;
		int oc = 0;
		while (oc + 1 < m->nchunks && m->chunks[oc + 1].first <= o)
			oc++;
		const char *on = m->entries[o].k->name, *en = m->entries[e].k->name;
		Buf *src = &jobs[oc].ptx, *dst = &jobs[c].ptx;
		size_t oat, olen, eat, elen;
		if (!src->data || !dst->data || !find_function(src->data, src->len, on, &oat, &olen) ||
		    !find_function(dst->data, dst->len, en, &eat, &elen)) {
			diag_set(d, "codegen", 0, 0, "internal: kernel %s (a twin of %s) not found in "
				 "the PTX", en, on);
			return -1;
		}
		Buf out = {0};
		buf_write(&out, dst->data, eat);
		if (put_twin(&out, src->data + oat, olen, on, en, o - m->chunks[oc].first,
			     e - ch->first)) {
			buf_free(&out);
			diag_set(d, "codegen", 0, 0, "internal: the PTX of kernel %s has labels of "
				 "another function", on);
			return -1;
		}
		buf_write(&out, dst->data + eat + elen, dst->len - eat - elen);
		buf_free(dst);
		*dst = out;
	}
	return 0;
}

int cg_module_emit_chunked(CgModule *m, int threads, const char *cache_dir,
			   void (*progress)(void *arg, int done, int total), void *arg,
			   Buf *out, CgEmitStats *st, Diag *d)
{
	memset(st, 0, sizeof *st);
	if (!m->chunked || m->finished || m->taken) {
		diag_set(d, "codegen", 0, 0, "internal: chunked emission of a module not built in chunks");
		return -1;
	}
	m->finished = true;
	cg_module_close_chunk(m);
	int n = m->nchunks;
	if (n == 0) {
		/* no kernels: the header alone, as the whole module would emit it */
		LLVMMemoryBufferRef mb = NULL;
		char *msg = NULL;
		if (LLVMTargetMachineEmitToMemoryBuffer(m->tm, m->mod, LLVMAssemblyFile, &msg, &mb)) {
			diag_set(d, "codegen", 0, 0, "PTX emission failed: %s", msg ? msg : "");
			LLVMDisposeMessage(msg);
			return -1;
		}
		buf_write(out, LLVMGetBufferStart(mb), LLVMGetBufferSize(mb));
		LLVMDisposeMemoryBuffer(mb);
		return 0;
	}
	Job *jobs = xcalloc((size_t)(n ? n : 1), sizeof *jobs);
	int todo = 0;
	for (int i = 0; i < n; i++) {
		Job *j = &jobs[i];
		j->chunk = &m->chunks[i];
		if (cache_dir) {
			cg_cache_key(m, j->chunk->first, j->chunk->n, &j->key);
			j->cached = cg_cache_get(cache_dir, &j->key, &j->ptx);
		}
		if (j->cached) {
			st->hits++;
			LLVMDisposeModule(j->chunk->mod);
			LLVMContextDispose(j->chunk->ctx);
			j->chunk->mod = NULL;
			j->chunk->ctx = NULL;
		} else {
			todo++;
		}
	}
	st->chunks = n;
	for (int i = 0; i < m->nentries; i++)
		st->twins += m->entries[i].twin >= 0;
	if (threads < 1)
		threads = 1;
	if (threads > todo)
		threads = todo;
	st->threads = threads;
	Pool pool = {m, jobs, n, 0, PTHREAD_MUTEX_INITIALIZER, progress, arg, 0, m->nentries};
	if (threads <= 1) {
		worker(&pool);
	} else {
		pthread_t *tid = xmalloc(sizeof *tid * (size_t)threads);
		int started = 0;
		for (; started < threads; started++)
			if (pthread_create(&tid[started], NULL, worker, &pool))
				break;
		if (started == 0)
			worker(&pool);
		for (int i = 0; i < started; i++)
			pthread_join(tid[i], NULL);
		free(tid);
	}
	int rc = 0;
	size_t head = 0;
	Buf bodies = {0};
	bool dyn = false;
	for (int i = 0; i < n && !rc; i++) {
		Job *j = &jobs[i];
		if (j->rc) {
			*d = j->d;
			rc = -1;
			break;
		}
		if (!j->cached && patch_twins(m, jobs, i, d)) {
			rc = -1;
			break;
		}
		size_t h = header_len(j->ptx.data ? j->ptx.data : "", j->ptx.len);
		if (!h || module_level_decl(j->ptx.data + h, j->ptx.len - h) ||
		    (i > 0 && (h != head || memcmp(j->ptx.data, jobs[0].ptx.data, h)))) {
			diag_set(d, "codegen", 0, 0, "internal: the PTX of kernel chunk %d cannot be "
				 "joined to the others", i);
			rc = -1;
			break;
		}
		if (i == 0) {
			head = h;
			buf_write(out, j->ptx.data, h);
		}
		write_body(&bodies, j->ptx.data + h, j->ptx.len - h, &dyn);
		if (cache_dir && !j->cached)
			cg_cache_put(cache_dir, &j->key, j->ptx.data, j->ptx.len);
	}
	if (!rc) {
		if (dyn) {
			buf_write(out, dyn_shared_decl, sizeof dyn_shared_decl - 1);
			buf_write(out, "\n\n", 2);
		}
		buf_write(out, bodies.data ? bodies.data : "", bodies.len);
	}
	buf_free(&bodies);
	for (int i = 0; i < n; i++) {
		if (cache_dir)
			cg_cache_key_free(&jobs[i].key);
		buf_free(&jobs[i].ptx);
		free(jobs[i].error);
	}
	free(jobs);
	return rc;
}
