/* fakecuda.c: a host-only stand-in for libcuda.so.1, for testing the runtime on a
 * machine without a GPU (FUSEC_LIBCUDA=build/tests/fakecuda.so).
 *
 * It exports the driver symbols the runtime looks up, under the same versioned
 * names and signatures. Device memory is host memory; every pointer handed to a
 * copy, memset or kernel must lie inside a live allocation, or the call fails
 * with CUDA_ERROR_INVALID_VALUE / CUDA_ERROR_ILLEGAL_ADDRESS. Loading a module
 * keeps its PTX text; a function exists when the text has `.entry NAME(`. The two
 * kernels of tests/runtime/axpb.cu are emulated thread by thread over the launch
 * grid, so a wrong grid, argument order or argument width shows in the results.
 * Time is a counter: each launch of fix_fma advances it by 10 us, fix_affine by
 * 5 us, so CUDA-event timings are exact.
 *
 * Streams and CUDA graphs: work runs at once whatever the stream. A stream in
 * capture (cuStreamBeginCapture_v2) runs nothing: each cuLaunchKernel on it
 * becomes a node holding a copy of the argument values, sized by the entry's
 * .param list in the PTX, as the driver copies them; cuStreamEndCapture hands the
 * nodes over as a graph, cuGraphInstantiateWithFlags copies them into an
 * executable graph, and cuGraphLaunch runs its nodes in capture order with those
 * copied values, so a graph captured with other buffers writes into those. While
 * a capture is on, the calls a capture forbids (allocation, copies, memset,
 * synchronization, the legacy default stream) fail with
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidate it, and so does a launch
 * with a bad configuration; cuStreamEndCapture then fails with
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED. The legacy (NULL) stream cannot be
 * captured.
 *
 * Knobs (environment): FAKECUDA_NO_DEVICE=1 (cuInit fails: no device),
 * FAKECUDA_CC=80 (compute capability), FAKECUDA_MEM=BYTES (allocation limit),
 * FAKECUDA_L2=BYTES (L2 size, default 50 MiB). FAKECUDA_LAUNCH_US=N: the host's
 * cost of one launch, as device time idle before it (each direct launch, each
 * cuGraphLaunch once); default 0. FAKECUDA_CAPTURE_FAIL=begin|launch|end|
 * instantiate|graph-launch fails that step of a graph (begin: not supported;
 * launch: the first captured launch is refused, the capture invalidated;
 * end: CUDA_ERROR_UNKNOWN; instantiate: out of memory; graph-launch:
 * cuGraphLaunch fails with CUDA_ERROR_LAUNCH_FAILED). Built with
 * -DFAKECUDA_NO_LAUNCH_EX (build/tests/fakecuda_noex.so) it has no cuLaunchKernelEx,
 * as a driver before CUDA 12. FAKECUDA_TRACE=FILE appends
 * a line per kernel run (its entry, grid, block, shared bytes and argument values,
 * a pointer as bufN+OFFSET into the Nth allocation slot, and "direct" or "graph")
 * and per capture step. A PTX containing FAKE_JIT_ERROR fails to load with a JIT
 * log. At unload it reports leaked allocations, events, modules, streams, graphs,
 * executable graphs or context references on stderr; fakecuda_live() counts
 * them. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum { MAX_ALLOCS = 4096 };

enum { MAX_PARAMS = 64, TMAP_BYTES = 128 };
enum {
	E_INVALID_VALUE = 1, E_OUT_OF_MEMORY = 2, E_ILLEGAL_STATE = 401, E_ILLEGAL_ADDRESS = 700,
	E_LAUNCH_FAILED = 719, E_NOT_SUPPORTED = 801, E_CAPTURE_UNSUPPORTED = 900,
	E_CAPTURE_INVALIDATED = 901, E_UNKNOWN = 999,
};

static struct { unsigned char *p; size_t n; } allocs[MAX_ALLOCS];
static int nlive_allocs, nlive_events, nlive_modules, nlive_streams, nlive_graphs,
	nlive_execs, ctx_refs, inited;
static size_t mem_used;
static double clock_ms;

typedef struct Func Func;
struct Func {
	int kind;              /* 1 fix_fma, 2 fix_affine, 0 unknown */
	char name[128];
	int nparams;
	int psize[MAX_PARAMS]; /* bytes of each parameter, from the PTX */
	Func *next;            /* the module's list */
};

typedef struct {
	char *text;
	Func *funcs;
} Module;

/* A captured launch, its argument values copied. */
typedef struct {
	Func *f;
	unsigned grid[3], block[3], shared;
	unsigned char *args;   /* the values, back to back */
} Node;

typedef struct {
	Node *nodes;
	int n, cap;
} NodeList;

enum { STREAM_MAGIC = 0x57ea3 };

typedef struct {
	int magic;
	int capturing, invalid; /* in capture; a step of it failed */
	NodeList cap;
} Stream;

typedef struct {
	NodeList nodes;
} Graph;

static Stream *capture;   /* the stream in capture, or NULL (one at a time here) */

typedef struct {
	double t;
	int recorded;
} Event;

static const char *env(const char *k)
{
	const char *v = getenv(k);
	return v && v[0] ? v : NULL;
}

static int fail_at(const char *step)
{
	const char *v = env("FAKECUDA_CAPTURE_FAIL");
	return v && strcmp(v, step) == 0;
}

static FILE *trace_file(void)
{
	const char *path = env("FAKECUDA_TRACE");
	return path ? fopen(path, "a") : NULL;
}

static void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void trace(const char *fmt, ...)
{
	FILE *f = trace_file();
	if (!f)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

/* A call a capture forbids: it fails, and invalidates the capture under way. */
static int capture_forbids(void)
{
	if (!capture)
		return 0;
	capture->invalid = 1;
	return 1;
}

/* The allocation holding [p, p + n), or -1. */
static int find(CUdeviceptr p, size_t n)
{
	for (int i = 0; i < MAX_ALLOCS; i++) {
		uintptr_t b = (uintptr_t)allocs[i].p;
		if (b && p >= b && p + n <= b + allocs[i].n && p + n >= p)
			return i;
	}
	return -1;
}

CUresult cuGetErrorName(CUresult r, const char **s)
{
	switch (r) {
	case 0: *s = "CUDA_SUCCESS"; return 0;
	case 1: *s = "CUDA_ERROR_INVALID_VALUE"; return 0;
	case 2: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return 0;
	case 3: *s = "CUDA_ERROR_NOT_INITIALIZED"; return 0;
	case 100: *s = "CUDA_ERROR_NO_DEVICE"; return 0;
	case 218: *s = "CUDA_ERROR_INVALID_PTX"; return 0;
	case 401: *s = "CUDA_ERROR_ILLEGAL_STATE"; return 0;
	case 500: *s = "CUDA_ERROR_NOT_FOUND"; return 0;
	case 700: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; return 0;
	case 719: *s = "CUDA_ERROR_LAUNCH_FAILED"; return 0;
	case 801: *s = "CUDA_ERROR_NOT_SUPPORTED"; return 0;
	case 900: *s = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"; return 0;
	case 901: *s = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"; return 0;
	case 999: *s = "CUDA_ERROR_UNKNOWN"; return 0;
	}
	*s = NULL;
	return 1;
}

CUresult cuGetErrorString(CUresult r, const char **s)
{
	switch (r) {
	case 2: *s = "out of memory"; return 0;
	case 100: *s = "no CUDA-capable device is detected"; return 0;
	case 218: *s = "a PTX JIT compilation failed"; return 0;
	case 500: *s = "named symbol not found"; return 0;
	case 700: *s = "an illegal memory access was encountered"; return 0;
	case 719: *s = "unspecified launch failure"; return 0;
	case 801: *s = "operation not supported"; return 0;
	case 900: *s = "operation not permitted when stream is capturing"; return 0;
	case 901: *s = "operation failed due to a previous error during capture"; return 0;
	case 999: *s = "unknown error"; return 0;
	}
	*s = NULL;
	return 1;
}

CUresult cuInit(unsigned flags)
{
	if (flags != 0)
		return 1;
	if (env("FAKECUDA_NO_DEVICE"))
		return 100;
	inited = 1;
	return 0;
}

CUresult cuDriverGetVersion(int *v) { *v = 12080; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = inited ? 1 : 0; return inited ? 0 : 3; }

CUresult cuDeviceGet(int *dev, int ordinal)
{
	if (!inited)
		return 3;
	*dev = ordinal;
	return ordinal == 0 ? 0 : 101;
}

CUresult cuDeviceGetName(char *name, int len, int dev)
{
	snprintf(name, (size_t)len, "Fake CUDA Device");
	return dev == 0 ? 0 : 101;
}

CUresult cuDeviceGetAttribute(int *v, int attr, int dev)
{
	int cc = env("FAKECUDA_CC") ? atoi(env("FAKECUDA_CC")) : 90;
	switch (attr) {
	case 16: *v = 132; break;
	case 38: *v = env("FAKECUDA_L2") ? atoi(env("FAKECUDA_L2")) : 50 << 20; break;
	case 75: *v = cc / 10; break;
	case 76: *v = cc % 10; break;
	case 97: *v = 227 << 10; break;
	default: return 1;
	}
	return dev == 0 ? 0 : 101;
}

CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
	static int the_ctx;
	if (!inited || dev != 0)
		return 3;
	ctx_refs++;
	*ctx = &the_ctx;
	return 0;
}

CUresult cuDevicePrimaryCtxRelease_v2(int dev)
{
	if (ctx_refs <= 0)
		return 1;
	ctx_refs--;
	return 0;
}

CUresult cuCtxSetCurrent(void *ctx) { return ctx ? 0 : 1; }
CUresult cuCtxSynchronize(void)
{
	if (capture_forbids())
		return E_CAPTURE_UNSUPPORTED;
	return ctx_refs > 0 ? 0 : 3;
}

CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned nopt, int *opts, void **vals)
{
	const char *text = image;
	if (capture_forbids())
		return E_CAPTURE_UNSUPPORTED;
	if (strstr(text, "FAKE_JIT_ERROR")) {
		for (unsigned i = 0; i < nopt; i++)
			if (opts[i] == 5) {
				size_t cap = 0;
				for (unsigned k = 0; k < nopt; k++)
					if (opts[k] == 6)
						cap = (size_t)(uintptr_t)vals[k];
				if (cap)
					snprintf(vals[i], cap, "ptxas application ptx input, line 3; "
						 "fatal   : Parsing error near 'FAKE_JIT_ERROR'\n");
			}
		return 218;
	}
	if (!strstr(text, ".entry"))
		return 218;
	Module *m = calloc(1, sizeof *m);
	m->text = strdup(text);
	nlive_modules++;
	*mod = m;
	return 0;
}

CUresult cuModuleUnload(void *mod)
{
	Module *m = mod;
	while (m->funcs) {
		Func *f = m->funcs;
		m->funcs = f->next;
		free(f);
	}
	free(m->text);
	free(m);
	nlive_modules--;
	return 0;
}

/* The byte size of each parameter of `.entry NAME(` at p (just after the '('), as
 * the driver reads them: .u64/.s64/.b64/.f64 8, the 32-bit kinds 4, an
 * `.align N .b8 name[SIZE]` SIZE; -1 if the list cannot be read. */
static int param_sizes(const char *p, int *size)
{
	int n = 0;
	const char *end = strchr(p, ')');
	if (!end)
		return -1;
	while (p < end) {
		const char *q = strstr(p, ".param");
		if (!q || q >= end)
			break;
		q += 6;
		while (*q == ' ' || *q == '\t')
			q++;
		int sz = -1;
		if (!strncmp(q, ".align", 6)) {
			const char *br = strchr(q, '[');
			if (br && br < end)
				sz = atoi(br + 1);
		} else if (!strncmp(q + 2, "64", 2)) {
			sz = 8;
		} else if (!strncmp(q + 2, "32", 2)) {
			sz = 4;
		} else if (!strncmp(q + 2, "16", 2)) {
			sz = 2;
		} else if (!strncmp(q + 2, "8", 1)) {
			sz = 1;
		}
		if (sz <= 0 || n == MAX_PARAMS)
			return -1;
		/* declarations are separated by commas: a `.param` inside one (a mangled
		 * name) is PTX the JIT would refuse; the runtime may count it otherwise */
		const char *next = strstr(q, ".param");
		const char *comma = strchr(q, ',');
		if (next && next < end && (!comma || comma > next))
			return -1;
		size[n++] = sz;
		p = q;
	}
	return n;
}

CUresult cuModuleGetFunction(void **f, void *mod, const char *name)
{
	Module *m = mod;
	char pat[300];
	snprintf(pat, sizeof pat, ".entry %s(", name);
	/* a whole word, as the runtime reads it (not the tail of ".pred.entry") */
	const char *at = strstr(m->text, pat);
	while (at && at > m->text && (isalnum((unsigned char)at[-1]) || at[-1] == '_' ||
				      at[-1] == '$' || at[-1] == '.'))
		at = strstr(at + 1, pat);
	if (!at)
		return 500;
	Func *fn = calloc(1, sizeof *fn);
	fn->kind = strcmp(name, "fix_fma") == 0 ? 1 : strcmp(name, "fix_affine") == 0 ? 2 : 0;
	snprintf(fn->name, sizeof fn->name, "%s", name);
	fn->nparams = param_sizes(at + strlen(pat), fn->psize);
	fn->next = m->funcs;
	m->funcs = fn;
	*f = fn;
	return 0;
}

/* Encode a tiled tensor map with the driver's checks (cuda.h's documentation of
 * cuTensorMapEncodeTiled) and our own layout of its 128 bytes, for the trace: the
 * address, the rank, the dims (words 2..6), the strides (7..11; [7] 0), then the
 * box (five 32-bit words). It must cover memory inside one allocation: the dims' reach from the
 * address. */
CUresult cuTensorMapEncodeTiled(void *map, int type, unsigned rank, void *addr,
				const unsigned long long *dim, const unsigned long long *stride,
				const unsigned *box, const unsigned *estride, int interleave,
				int swizzle, int l2, int oob)
{
	static const int size[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
	if (!map || (uintptr_t)map % 64 || type < 0 || type > 12 || rank < 1 || rank > 5 ||
	    (uintptr_t)addr % 16 || interleave || swizzle < 0 || swizzle > 3 || l2 < 0 ||
	    l2 > 3 || (oob != 0 && oob != 1))
		return E_INVALID_VALUE;
	int es = size[type];
	unsigned long long reach = 0;
	for (unsigned k = 0; k < rank; k++) {
		if (!dim[k] || dim[k] > (1ull << 32) || !box[k] || box[k] > 256 || !estride[k] ||
		    estride[k] > 8)
			return E_INVALID_VALUE;
		if (k > 0 && (stride[k - 1] % 16 || stride[k - 1] >= (1ull << 40)))
			return E_INVALID_VALUE;
		reach += k ? (dim[k] - 1) * stride[k - 1] : dim[0] * (unsigned long long)es;
	}
	if ((box[0] * (unsigned)es) % 16 || (swizzle == 3 && box[0] * (unsigned)es > 128) ||
	    (swizzle == 2 && box[0] * (unsigned)es > 64) || (swizzle == 1 && box[0] * (unsigned)es > 32))
		return E_INVALID_VALUE;
	if (find((CUdeviceptr)(uintptr_t)addr, (size_t)reach) < 0)
		return E_INVALID_VALUE;
	unsigned long long w[12] = {(uintptr_t)addr, rank};
	unsigned b[5] = {0};
	for (unsigned k = 0; k < rank; k++) {
		w[2 + k] = dim[k];
		w[7 + k] = k ? stride[k - 1] : 0;
		b[k] = box[k];
	}
	memset(map, 0, TMAP_BYTES);
	memcpy(map, w, sizeof w);
	memcpy((char *)map + sizeof w, b, sizeof b);
	return 0;
}

CUresult cuFuncSetAttribute(void *f, int attr, int v) { return attr == 8 && v <= (227 << 10) ? 0 : 1; }

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	size_t limit = env("FAKECUDA_MEM") ? (size_t)atoll(env("FAKECUDA_MEM")) : (size_t)1 << 32;
	if (capture_forbids())
		return E_CAPTURE_UNSUPPORTED;
	if (n == 0)
		return 1;
	if (mem_used + n > limit)
		return 2;
	for (int i = 0; i < MAX_ALLOCS; i++)
		if (!allocs[i].p) {
			allocs[i].p = malloc(n);
			allocs[i].n = n;
			memset(allocs[i].p, 0x5a, n);
			mem_used += n;
			nlive_allocs++;
			*p = (uintptr_t)allocs[i].p;
			return 0;
		}
	return 2;
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
	if (capture_forbids())
		return E_CAPTURE_UNSUPPORTED;
	for (int i = 0; i < MAX_ALLOCS; i++)
		if ((uintptr_t)allocs[i].p == p && p) {
			free(allocs[i].p);
			mem_used -= allocs[i].n;
			allocs[i].p = NULL;
			nlive_allocs--;
			return 0;
		}
	return 1;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
	if (capture_forbids())
		return E_CAPTURE_UNSUPPORTED;
	if (find(dst, n) < 0)
		return 1;
	memcpy((void *)(uintptr_t)dst, src, n);
	return 0;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
	if (capture_forbids())
		return E_CAPTURE_UNSUPPORTED;
	if (find(src, n) < 0)
		return 1;
	memcpy(dst, (void *)(uintptr_t)src, n);
	return 0;
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	if (capture_forbids())
		return E_CAPTURE_UNSUPPORTED;
	if (find(dst, n) < 0 || find(src, n) < 0)
		return 1;
	memmove((void *)(uintptr_t)dst, (void *)(uintptr_t)src, n);
	return 0;
}

CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n)
{
	if (capture_forbids())
		return E_CAPTURE_UNSUPPORTED;
	if (find(dst, n) < 0)
		return 1;
	memset((void *)(uintptr_t)dst, v, n);
	return 0;
}

/* A device pointer argument that must cover elements [0, n) of size sz. */
static void *arg_ptr(void **params, int i, long long n, size_t sz, int *bad)
{
	CUdeviceptr p;
	memcpy(&p, params[i], sizeof p);
	if (n > 0 && find(p, (size_t)n * sz) < 0)
		*bad = 1;
	return (void *)(uintptr_t)p;
}

/* One trace line for a kernel run: pointers as bufN+OFFSET, other values in hex. */
static void trace_kernel(const Func *fn, const unsigned *grid, const unsigned *block,
			 unsigned shared, void **params, const char *via)
{
	FILE *f = trace_file();
	if (!f)
		return;
	fprintf(f, "kernel %s grid %u,%u,%u block %u,%u,%u shared %u args", fn->name, grid[0],
		grid[1], grid[2], block[0], block[1], block[2], shared);
	for (int i = 0; i < fn->nparams; i++) {
		unsigned long long v = 0;
		memcpy(&v, params[i], (size_t)(fn->psize[i] < 8 ? fn->psize[i] : 8));
		int k = fn->psize[i] == 8 || fn->psize[i] == TMAP_BYTES ? find(v, 1) : -1;
		if (fn->psize[i] == TMAP_BYTES) {   /* a map of ours: its address first */
			unsigned long long w[12];
			unsigned b[5];
			memcpy(w, params[i], sizeof w);
			memcpy(b, (const char *)params[i] + sizeof w, sizeof b);
			fprintf(f, "%stmap(", i ? "," : " ");
			if (k >= 0)
				fprintf(f, "buf%d+%llu", k, v - (unsigned long long)(uintptr_t)allocs[k].p);
			else
				fprintf(f, "0x%llx", v);
			for (unsigned r = 0; r < w[1] && r < 5; r++)
				fprintf(f, "%s%llu/%u", r ? "x" : ";", w[2 + r], b[r]);
			fprintf(f, ")");
		} else if (k >= 0)
			fprintf(f, "%sbuf%d+%llu", i ? "," : " ", k,
				v - (unsigned long long)(uintptr_t)allocs[k].p);
		else
			fprintf(f, "%s0x%0*llx", i ? "," : " ", 2 * fn->psize[i], v);
	}
	fprintf(f, " (%s)\n", via);
	fclose(f);
}

/* Run kernel fn over the grid with the argument values params points to. */
static CUresult run_kernel(const Func *fn, const unsigned *grid, const unsigned *block,
			   unsigned shared, void **params, const char *via)
{
	long long threads = (long long)grid[0] * block[0];
	int bad = 0;
	trace_kernel(fn, grid, block, shared, params, via);
	if (fn->kind == 1) {
		double s;
		long long n;
		memcpy(&s, params[3], sizeof s);
		memcpy(&n, params[4], sizeof n);
		long long m = n < threads ? n : threads;
		const float *a = arg_ptr(params, 0, m, 4, &bad), *b = arg_ptr(params, 1, m, 4, &bad);
		const float *c = arg_ptr(params, 2, m, 4, &bad);
		float *t = arg_ptr(params, 5, m, 4, &bad);
		if (bad)
			return E_ILLEGAL_ADDRESS;
		for (long long i = 0; i < m; i++)
			t[i] = fmaf(a[i], b[i], c[i] * (float)s);
		clock_ms += 0.010;
	} else if (fn->kind == 2) {
		float alpha, beta;
		int n;
		memcpy(&alpha, params[1], sizeof alpha);
		memcpy(&beta, params[2], sizeof beta);
		memcpy(&n, params[3], sizeof n);
		long long m = n < threads ? n : threads;
		const float *t = arg_ptr(params, 0, m, 4, &bad);
		float *y = arg_ptr(params, 4, m, 4, &bad);
		unsigned char *mk = arg_ptr(params, 5, m, 1, &bad);
		if (bad)
			return E_ILLEGAL_ADDRESS;
		for (long long i = 0; i < m; i++) {
			y[i] = fmaf(t[i], alpha, beta);
			mk[i] = y[i] > 1.0f;
		}
		clock_ms += 0.005;
	} else {
		return E_LAUNCH_FAILED;
	}
	return 0;
}

static double launch_cost_ms(void)
{
	return env("FAKECUDA_LAUNCH_US") ? atof(env("FAKECUDA_LAUNCH_US")) / 1e3 : 0;
}

/* A stream handle: NULL (the legacy default stream) or a live Stream. */
static int bad_stream(void *stream)
{
	return stream && ((Stream *)stream)->magic != STREAM_MAGIC;
}

static void nodes_free(NodeList *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->nodes[i].args);
	free(l->nodes);
	memset(l, 0, sizeof *l);
}

/* Copy a launch into l, its argument values by the entry's parameter sizes. */
static void nodes_add(NodeList *l, Func *fn, const unsigned *grid, const unsigned *block,
		      unsigned shared, void **params)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 8;
		l->nodes = realloc(l->nodes, (size_t)l->cap * sizeof *l->nodes);
	}
	Node *nd = &l->nodes[l->n++];
	size_t total = 0;
	for (int i = 0; i < fn->nparams; i++)
		total += (size_t)fn->psize[i];
	nd->f = fn;
	memcpy(nd->grid, grid, sizeof nd->grid);
	memcpy(nd->block, block, sizeof nd->block);
	nd->shared = shared;
	nd->args = malloc(total + 1);
	for (int i = 0, off = 0; i < fn->nparams; off += fn->psize[i], i++)
		memcpy(nd->args + off, params[i], (size_t)fn->psize[i]);
}

static void nodes_copy(NodeList *to, const NodeList *from)
{
	for (int i = 0; i < from->n; i++) {
		const Node *nd = &from->nodes[i];
		void *params[MAX_PARAMS];
		for (int k = 0, off = 0; k < nd->f->nparams; off += nd->f->psize[k], k++)
			params[k] = nd->args + off;
		nodes_add(to, nd->f, nd->grid, nd->block, nd->shared, params);
	}
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			unsigned by, unsigned bz, unsigned shared, void *stream, void **params,
			void **extra)
{
	Func *fn = f;
	unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
	if (bad_stream(stream))
		return E_INVALID_VALUE;
	if (capture && stream != capture) {   /* the legacy stream, or another one */
		capture->invalid = 1;
		return E_CAPTURE_UNSUPPORTED;
	}
	int given = 0;   /* the runtime's argument arrays end with a NULL (runtime.c) */
	while (params && given < fn->nparams && params[given])
		given++;
	if (!params || extra || gx == 0 || gy == 0 || gz == 0 || bx * by * bz > 1024 ||
	    bx * by * bz == 0 || fn->nparams < 0 || given < fn->nparams) {
		/* fewer arguments than the entry's parameters (a PTX whose signature the
		 * runtime read otherwise): the real driver would read past them */
		if (capture)
			capture->invalid = 1;
		return E_INVALID_VALUE;
	}
	if (capture) {
		if (fail_at("launch") || capture->invalid) {
			capture->invalid = 1;
			return E_CAPTURE_UNSUPPORTED;
		}
		nodes_add(&capture->cap, fn, grid, block, shared, params);
		trace("captured %s (%d)", fn->name, capture->cap.n);
		return 0;
	}
	clock_ms += launch_cost_ms();
	return run_kernel(fn, grid, block, shared, params, "direct");
}

/* cuLaunchKernelEx (cuda.h's CUlaunchConfig and CUlaunchAttribute, written here
 * from cuda.h rather than taken from runtime/rt_driver.h, so that a slip in the
 * runtime's copy of the layout fails here instead of agreeing with itself): the
 * attributes the runtime sets, a cluster along x whose size divides grid.x and
 * programmatic stream serialization ("pdl"), are checked and traced, and the
 * blocks run as cuLaunchKernel's (one at a time, so
 * a cluster's blocks never meet: the kernels that need clusters are sm_90a's,
 * which this library does not run). */
typedef struct {
	int id;
	char pad[4];
	union {
		char bytes[64];
		struct {
			unsigned x, y, z;
		} cluster;
		int programmatic;
	} value;
} FakeLaunchAttr;

typedef struct {
	unsigned grid[3], block[3];
	unsigned shared;
	void *stream;
	FakeLaunchAttr *attrs;
	unsigned nattrs;
} FakeLaunchConfig;

#ifndef FAKECUDA_NO_LAUNCH_EX   /* fakecuda_noex.so: a driver older than CUDA 12 */
CUresult cuLaunchKernelEx(const FakeLaunchConfig *c, void *f, void **params, void **extra)
{
	if (!c || !f)
		return E_INVALID_VALUE;
	for (unsigned i = 0; i < c->nattrs; i++) {
		const FakeLaunchAttr *a = &c->attrs[i];
		if (a->id == 6) {   /* programmatic stream serialization */
			if (a->value.programmatic != 1)
				return E_INVALID_VALUE;
			/* FAKECUDA_PDL_NO_CAPTURE=1: refused in a capture, as some
			 * drivers do */
			const char *nc = getenv("FAKECUDA_PDL_NO_CAPTURE");
			if (capture && nc && !strcmp(nc, "1")) {
				capture->invalid = 1;
				return E_CAPTURE_UNSUPPORTED;
			}
			trace("pdl");
			continue;
		}
		if (a->id != 4 || a->value.cluster.x < 1 || a->value.cluster.y != 1 ||
		    a->value.cluster.z != 1 || c->grid[0] % a->value.cluster.x)
			return E_INVALID_VALUE;
		trace("cluster %u", a->value.cluster.x);
	}
	return cuLaunchKernel(f, c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1],
			      c->block[2], c->shared, c->stream, params, extra);
}
#endif

CUresult cuStreamCreate(void **stream, unsigned flags)
{
	if (flags > 1)
		return E_INVALID_VALUE;
	Stream *s = calloc(1, sizeof *s);
	s->magic = STREAM_MAGIC;
	nlive_streams++;
	*stream = s;
	return 0;
}

CUresult cuStreamDestroy_v2(void *stream)
{
	Stream *s = stream;
	if (!s || bad_stream(s))
		return E_INVALID_VALUE;
	if (capture == s)
		capture = NULL;
	nodes_free(&s->cap);
	s->magic = 0;
	free(s);
	nlive_streams--;
	return 0;
}

CUresult cuStreamSynchronize(void *stream)
{
	if (bad_stream(stream))
		return E_INVALID_VALUE;
	return capture_forbids() ? E_CAPTURE_UNSUPPORTED : 0;
}

CUresult cuStreamBeginCapture_v2(void *stream, int mode)
{
	Stream *s = stream;
	if (!s)
		return E_CAPTURE_UNSUPPORTED;   /* the legacy stream */
	if (bad_stream(s) || mode < 0 || mode > 2)
		return E_INVALID_VALUE;
	if (capture)
		return capture == s ? E_ILLEGAL_STATE : E_NOT_SUPPORTED;
	if (fail_at("begin"))
		return E_NOT_SUPPORTED;
	s->capturing = 1;
	s->invalid = 0;
	capture = s;
	trace("capture begin");
	return 0;
}

CUresult cuStreamEndCapture(void *stream, void **graph)
{
	Stream *s = stream;
	if (!s || bad_stream(s) || !graph)
		return E_INVALID_VALUE;
	if (!s->capturing)
		return E_ILLEGAL_STATE;
	s->capturing = 0;
	capture = NULL;
	*graph = NULL;
	if (s->invalid) {
		nodes_free(&s->cap);
		trace("capture end: invalidated");
		return E_CAPTURE_INVALIDATED;
	}
	if (fail_at("end")) {
		nodes_free(&s->cap);
		return E_UNKNOWN;
	}
	Graph *g = calloc(1, sizeof *g);
	g->nodes = s->cap;
	memset(&s->cap, 0, sizeof s->cap);
	nlive_graphs++;
	trace("capture end: %d launches", g->nodes.n);
	*graph = g;
	return 0;
}

CUresult cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags)
{
	Graph *g = graph;
	if (!g || !exec || flags > 15)
		return E_INVALID_VALUE;
	if (capture_forbids())
		return E_CAPTURE_UNSUPPORTED;
	if (fail_at("instantiate"))
		return E_OUT_OF_MEMORY;
	Graph *x = calloc(1, sizeof *x);
	nodes_copy(&x->nodes, &g->nodes);   /* independent of the graph from now on */
	nlive_execs++;
	trace("instantiate: %d launches", x->nodes.n);
	*exec = x;
	return 0;
}

CUresult cuGraphLaunch(void *exec, void *stream)
{
	Graph *x = exec;
	if (!x || bad_stream(stream))
		return E_INVALID_VALUE;
	if (capture_forbids())
		return E_CAPTURE_UNSUPPORTED;
	if (fail_at("graph-launch"))
		return E_LAUNCH_FAILED;
	trace("graph launch: %d launches", x->nodes.n);
	clock_ms += launch_cost_ms();
	for (int i = 0; i < x->nodes.n; i++) {
		const Node *nd = &x->nodes.nodes[i];
		void *params[MAX_PARAMS];
		for (int k = 0, off = 0; k < nd->f->nparams; off += nd->f->psize[k], k++)
			params[k] = nd->args + off;
		CUresult r = run_kernel(nd->f, nd->grid, nd->block, nd->shared, params, "graph");
		if (r)
			return r;
	}
	return 0;
}

CUresult cuGraphExecDestroy(void *exec)
{
	Graph *x = exec;
	if (!x)
		return E_INVALID_VALUE;
	nodes_free(&x->nodes);
	free(x);
	nlive_execs--;
	return 0;
}

CUresult cuGraphDestroy(void *graph)
{
	Graph *g = graph;
	if (!g)
		return E_INVALID_VALUE;
	nodes_free(&g->nodes);
	free(g);
	nlive_graphs--;
	return 0;
}

CUresult cuEventCreate(void **ev, unsigned flags)
{
	*ev = calloc(1, sizeof(Event));
	nlive_events++;
	return 0;
}

/* Recording into a capture would make an event node: not emulated. */
CUresult cuEventRecord(void *ev, void *stream)
{
	Event *e = ev;
	if (bad_stream(stream))
		return E_INVALID_VALUE;
	if (capture_forbids())
		return stream == capture ? E_NOT_SUPPORTED : E_CAPTURE_UNSUPPORTED;
	e->t = clock_ms;
	e->recorded = 1;
	return 0;
}

CUresult cuEventSynchronize(void *ev)
{
	if (capture_forbids())
		return E_CAPTURE_UNSUPPORTED;
	return ((Event *)ev)->recorded ? 0 : 1;
}

CUresult cuEventElapsedTime(float *ms, void *a, void *b)
{
	Event *x = a, *y = b;
	if (!x->recorded || !y->recorded)
		return 1;
	*ms = (float)(y->t - x->t);
	return 0;
}

CUresult cuEventDestroy_v2(void *ev)
{
	free(ev);
	nlive_events--;
	return 0;
}

/* Everything alive (for tests that hold the library open): allocations, events,
 * modules, streams, graphs, executable graphs, context references. */
int fakecuda_live(void)
{
	return nlive_allocs + nlive_events + nlive_modules + nlive_streams + nlive_graphs +
	       nlive_execs + ctx_refs;
}

__attribute__((destructor)) static void report_leaks(void)
{
	if (fakecuda_live())
		fprintf(stderr, "fakecuda: leaked %d allocations, %d events, %d modules, "
			"%d streams, %d graphs, %d executable graphs, %d context references\n",
			nlive_allocs, nlive_events, nlive_modules, nlive_streams, nlive_graphs,
			nlive_execs, ctx_refs);
}
