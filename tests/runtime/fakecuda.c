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
 * Knobs (environment): FAKECUDA_NO_DEVICE=1 (cuInit fails: no device),
 * FAKECUDA_CC=80 (compute capability), FAKECUDA_MEM=BYTES (allocation limit),
 * FAKECUDA_L2=BYTES (L2 size, default 50 MiB). A PTX containing FAKE_JIT_ERROR
 * fails to load with a JIT log. At unload it reports leaked allocations, events,
 * modules or context references on stderr. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum { MAX_ALLOCS = 4096 };

static struct { unsigned char *p; size_t n; } allocs[MAX_ALLOCS];
static int nlive_allocs, nlive_events, nlive_modules, ctx_refs, inited;
static size_t mem_used;
static double clock_ms;

typedef struct {
	char *text;
} Module;

typedef struct {
	int kind;              /* 1 fix_fma, 2 fix_affine, 0 unknown */
} Func;

static Func func_fma = {1}, func_affine = {2}, func_other = {0};

typedef struct {
	double t;
	int recorded;
} Event;

static const char *env(const char *k)
{
	const char *v = getenv(k);
	return v && v[0] ? v : NULL;
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
	case 500: *s = "CUDA_ERROR_NOT_FOUND"; return 0;
	case 700: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; return 0;
	case 719: *s = "CUDA_ERROR_LAUNCH_FAILED"; return 0;
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
CUresult cuCtxSynchronize(void) { return ctx_refs > 0 ? 0 : 3; }

CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned nopt, int *opts, void **vals)
{
	const char *text = image;
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
	free(m->text);
	free(m);
	nlive_modules--;
	return 0;
}

CUresult cuModuleGetFunction(void **f, void *mod, const char *name)
{
	Module *m = mod;
	char pat[300];
	snprintf(pat, sizeof pat, ".entry %s(", name);
	if (!strstr(m->text, pat))
		return 500;
	*f = strcmp(name, "fix_fma") == 0 ? &func_fma
	   : strcmp(name, "fix_affine") == 0 ? &func_affine : &func_other;
	return 0;
}

CUresult cuFuncSetAttribute(void *f, int attr, int v) { return attr == 8 && v <= (227 << 10) ? 0 : 1; }

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	size_t limit = env("FAKECUDA_MEM") ? (size_t)atoll(env("FAKECUDA_MEM")) : (size_t)1 << 32;
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
	if (find(dst, n) < 0)
		return 1;
	memcpy((void *)(uintptr_t)dst, src, n);
	return 0;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
	if (find(src, n) < 0)
		return 1;
	memcpy(dst, (void *)(uintptr_t)src, n);
	return 0;
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	if (find(dst, n) < 0 || find(src, n) < 0)
		return 1;
	memmove((void *)(uintptr_t)dst, (void *)(uintptr_t)src, n);
	return 0;
}

CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n)
{
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

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			unsigned by, unsigned bz, unsigned shared, void *stream, void **params,
			void **extra)
{
	Func *fn = f;
	if (!params || extra || gx == 0 || gy == 0 || gz == 0 || bx * by * bz > 1024 ||
	    bx * by * bz == 0)
		return 1;
	long long threads = (long long)gx * bx;
	int bad = 0;
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
			return 700;
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
			return 700;
		for (long long i = 0; i < m; i++) {
			y[i] = fmaf(t[i], alpha, beta);
			mk[i] = y[i] > 1.0f;
		}
		clock_ms += 0.005;
	} else {
		return 719;
	}
	return 0;
}

CUresult cuEventCreate(void **ev, unsigned flags)
{
	*ev = calloc(1, sizeof(Event));
	nlive_events++;
	return 0;
}

CUresult cuEventRecord(void *ev, void *stream)
{
	Event *e = ev;
	e->t = clock_ms;
	e->recorded = 1;
	return 0;
}

CUresult cuEventSynchronize(void *ev) { return ((Event *)ev)->recorded ? 0 : 1; }

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

__attribute__((destructor)) static void report_leaks(void)
{
	if (nlive_allocs || nlive_events || nlive_modules || ctx_refs)
		fprintf(stderr, "fakecuda: leaked %d allocations, %d events, %d modules, "
			"%d context references\n", nlive_allocs, nlive_events, nlive_modules,
			ctx_refs);
}
