/* math_accuracy.c: sweeps every function of codegen/math.c over a wide range
 * and reports its error against the C library.
 *
 * Each function is lowered by cg_math_unary/binary (host mode, the same
 * portable IR the GPU gets by default) into a loop kernel, JIT-compiled with
 * ORC, and run over log-spaced inputs (evenly spaced float encodings, so every
 * binade gets the same number of points) plus special values. f32 results are
 * compared with the f64 libm function, f64 results with the long double one.
 * Printed per function and type: points, max ulp error and where, max
 * absolute error, and special-value mismatches (NaN/inf where the reference
 * has none, or the reverse). docs/math.md records the numbers.
 *
 * Usage: math_accuracy [POINTS]   (points per function and type; default 2^22)
 * Exit status 0, or 1 when the JIT fails. */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>

#include "../../codegen/jit.h"
#include "../../codegen/math.h"

typedef struct {
	const char *name;
	OpKind op;
	GeluApprox approx;
	double lo, hi;        /* sweep |x| over [lo, hi], both signs unless pos_only */
	bool pos_only;
	long double (*ref)(long double x);
	long double (*ref2)(long double x, long double y);
} Fn;

static long double r_exp(long double x) { return expl(x); }
static long double r_log(long double x) { return logl(x); }
static long double r_log1p(long double x) { return log1pl(x); }
static long double r_sqrt(long double x) { return sqrtl(x); }
static long double r_recip(long double x) { return 1.0L / x; }
static long double r_sin(long double x) { return sinl(x); }
static long double r_cos(long double x) { return cosl(x); }
static long double r_tanh(long double x) { return tanhl(x); }
static long double r_erf(long double x) { return erfl(x); }
static long double r_sigmoid(long double x) { return 1.0L / (1.0L + expl(-x)); }
static long double r_silu(long double x) { return x / (1.0L + expl(-x)); }
static long double r_gelu(long double x) { return 0.5L * x * erfcl(-x / sqrtl(2.0L)); }
static long double r_gelu_tanh(long double x)
{
	long double u = sqrtl(2.0L / 3.14159265358979323846264338327950288L) * (x + 0.044715L * x * x * x);
	return x / (1.0L + expl(-2.0L * u));
}
static long double r_pow(long double x, long double y) { return powl(x, y); }
static long double r_rem(long double x, long double y)
{
	long double m = fmodl(x, y);
	if (m != 0 && ((m < 0) != (y < 0)))
		m += y;
	return m;
}

static const Fn fns[] = {
	{"exp",        OP_EXP,     GELU_NONE, 1e-30, 750, false, r_exp, NULL},
	{"log",        OP_LOG,     GELU_NONE, 1e-320, 1e308, true, r_log, NULL},
	{"log1p",      OP_LOG1P,   GELU_NONE, 1e-30, 1e30, false, r_log1p, NULL},
	{"sqrt",       OP_SQRT,    GELU_NONE, 1e-320, 1e308, true, r_sqrt, NULL},
	{"recip",      OP_RECIP,   GELU_NONE, 1e-300, 1e300, false, r_recip, NULL},
	{"sin",        OP_SIN,     GELU_NONE, 1e-30, 1e5, false, r_sin, NULL},
	{"cos",        OP_COS,     GELU_NONE, 1e-30, 1e5, false, r_cos, NULL},
	{"sin(wide)",  OP_SIN,     GELU_NONE, 1e5, 1e13, false, r_sin, NULL},
	{"cos(wide)",  OP_COS,     GELU_NONE, 1e5, 1e13, false, r_cos, NULL},
	{"tanh",       OP_TANH,    GELU_NONE, 1e-30, 30, false, r_tanh, NULL},
	{"erf",        OP_ERF,     GELU_NONE, 1e-30, 30, false, r_erf, NULL},
	{"sigmoid",    OP_SIGMOID, GELU_NONE, 1e-30, 750, false, r_sigmoid, NULL},
	{"silu",       OP_SILU,    GELU_NONE, 1e-30, 80, false, r_silu, NULL},
	{"gelu",       OP_GELU,    GELU_NONE, 1e-30, 30, false, r_gelu, NULL},
	{"gelu(tanh)", OP_GELU,    GELU_TANH, 1e-30, 30, false, r_gelu_tanh, NULL},
	{"gelu<=3",    OP_GELU,    GELU_NONE, 1e-30, 3, false, r_gelu, NULL},
	{"gelu(t)<=3", OP_GELU,    GELU_TANH, 1e-30, 3, false, r_gelu_tanh, NULL},
	{"sin(1e15)",  OP_SIN,     GELU_NONE, 1e13, 1e15, false, r_sin, NULL},
	{"sin(huge)",  OP_SIN,     GELU_NONE, 1e15, 1e300, false, r_sin, NULL},
	{"pow",        OP_POW,     GELU_NONE, 1e-30, 1e30, false, NULL, r_pow},
	{"rem",        OP_REM,     GELU_NONE, 1e-6, 1e6, false, NULL, r_rem},
};
enum { NFNS = sizeof fns / sizeof fns[0] };

/* ---- kernels ----------------------------------------------------------------- */

/* void NAME(const T *x, const T *y, T *out, i64 n): out[i] = op(x[i], y[i]). */
static void build_kernel(LLVMContextRef ctx, LLVMModuleRef mod, const Fn *f, bool f64, const char *name)
{
	LLVMTypeRef t = f64 ? LLVMDoubleTypeInContext(ctx) : LLVMFloatTypeInContext(ctx);
	LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0);
	LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
	LLVMTypeRef params[4] = {ptr, ptr, ptr, i64};
	LLVMValueRef fn = LLVMAddFunction(mod, name, LLVMFunctionType(LLVMVoidTypeInContext(ctx), params, 4, false));
	LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(ctx, fn, "entry");
	LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(ctx, fn, "loop");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(ctx, fn, "done");
	LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
	LLVMPositionBuilderAtEnd(b, entry);
	LLVMValueRef n = LLVMGetParam(fn, 3);
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSGT, n, LLVMConstInt(i64, 0, false), ""), loop, done);
	LLVMPositionBuilderAtEnd(b, loop);
	LLVMValueRef i = LLVMBuildPhi(b, i64, "i");
	LLVMValueRef px = LLVMBuildGEP2(b, t, LLVMGetParam(fn, 0), &i, 1, "");
	LLVMValueRef py = LLVMBuildGEP2(b, t, LLVMGetParam(fn, 1), &i, 1, "");
	LLVMValueRef po = LLVMBuildGEP2(b, t, LLVMGetParam(fn, 2), &i, 1, "");
	LLVMValueRef x = LLVMBuildLoad2(b, t, px, "");
	CgMath m = {ctx, mod, b, false, false};
	LLVMValueRef r;
	if (f->ref2)
		r = cg_math_binary(&m, f->op, x, LLVMBuildLoad2(b, t, py, ""));
	else
		r = cg_math_unary(&m, f->op, x, f->approx);
	LLVMBuildStore(b, r, po);
	LLVMValueRef next = LLVMBuildAdd(b, i, LLVMConstInt(i64, 1, false), "");
	LLVMValueRef zero = LLVMConstInt(i64, 0, false);
	LLVMBasicBlockRef cur = LLVMGetInsertBlock(b);
	LLVMAddIncoming(i, &zero, &entry, 1);
	LLVMAddIncoming(i, &next, &cur, 1);
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, next, n, ""), loop, done);
	LLVMPositionBuilderAtEnd(b, done);
	LLVMBuildRetVoid(b);
	LLVMDisposeBuilder(b);
}

/* ---- inputs -------------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rng(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* n values with |x| log-spaced over [lo, hi] (evenly spaced encodings), random
 * signs unless pos_only, then specials. */
static void fill(double *v, long n, double lo, double hi, bool pos_only, bool f64)
{
	static const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0, 0.5, -0.5, 2.0};
	long nsp = (long)(sizeof sp / sizeof sp[0]);
	if (!f64) {
		lo = lo < FLT_TRUE_MIN ? FLT_TRUE_MIN : lo;
		hi = hi > FLT_MAX ? FLT_MAX : hi;
	}
	for (long i = 0; i < n; i++) {
		double x;
		if (i < nsp) {
			x = sp[i];
		} else if (f64) {
			uint64_t a, b, u;
			memcpy(&a, &lo, 8);
			memcpy(&b, &hi, 8);
			u = a + (uint64_t)((double)(b - a) * ((double)(i - nsp) / (double)(n - nsp)));
			u += rng() % 4096;
			memcpy(&x, &u, 8);
		} else {
			float fl = (float)lo, fh = (float)hi;
			uint32_t a, b, u;
			memcpy(&a, &fl, 4);
			memcpy(&b, &fh, 4);
			u = a + (uint32_t)((double)(b - a) * ((double)(i - nsp) / (double)(n - nsp)));
			float xf;
			memcpy(&xf, &u, 4);
			x = xf;
		}
		if (!pos_only && i >= nsp && (rng() & 1))
			x = -x;
		v[i] = x;
	}
}

/* ---- error measure -------------------------------------------------------------- */

typedef struct {
	double max_ulp, at_ulp, got_ulp;
	long double ref_ulp;
	double max_abs, at_abs;
	double max_ulp_y;
	long special_bad, n;
} Stat;

/* ulp of the format at |r|: the spacing between r and the next value away from 0. */
static long double ulp_of(long double r, bool f64)
{
	int mant = f64 ? 53 : 24;
	int emin = f64 ? -1021 : -125;
	r = fabsl(r);
	int e;
	if (r == 0)
		return ldexpl(1.0L, emin - mant);
	frexpl(r, &e);
	if (e < emin)
		e = emin;
	return ldexpl(1.0L, e - mant);
}

static void account(Stat *s, double x, double y, double got, long double ref, bool f64)
{
	s->n++;
	long double maxv = f64 ? DBL_MAX : FLT_MAX;
	/* the reference as the format would hold it */
	long double refr = f64 ? (long double)(double)ref : (long double)(float)ref;
	bool ref_special = isnan(ref) || isinf(refr) || fabsl(ref) > maxv;
	bool got_special = isnan(got) || isinf(got);
	if (ref_special || got_special) {
		bool same = (isnan(ref) && isnan(got)) || (!isnan(ref) && !isnan(got) && (long double)got == refr);
		if (!same)
			s->special_bad++;
		return;
	}
	long double err = fabsl((long double)got - ref);
	double u = (double)(err / ulp_of(ref, f64));
	if (u > s->max_ulp) {
		s->max_ulp = u;
		s->at_ulp = x;
		s->max_ulp_y = y;
		s->got_ulp = got;
		s->ref_ulp = ref;
	}
	if ((double)err > s->max_abs) {
		s->max_abs = (double)err;
		s->at_abs = x;
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : (1L << 22);
	if (n < 64)
		n = 64;
	Diag d;
	CgJit *jit = cg_jit_new(&d);
	if (!jit) {
		fprintf(stderr, "math_accuracy: %s\n", d.msg);
		return 1;
	}
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("math_accuracy", ctx);
	char name[64];
	for (int i = 0; i < NFNS; i++)
		for (int t = 0; t < 2; t++) {
			snprintf(name, sizeof name, "k%d_%s", i, t ? "f64" : "f32");
			build_kernel(ctx, mod, &fns[i], t, name);
		}
	if (cg_jit_add_module(jit, mod, ctx, &d)) {
		fprintf(stderr, "math_accuracy: %s\n", d.msg);
		cg_jit_free(jit);
		return 1;
	}
	double *xs = malloc((size_t)n * sizeof *xs), *ys = malloc((size_t)n * sizeof *ys);
	void *bx = malloc((size_t)n * 8), *by = malloc((size_t)n * 8), *bo = malloc((size_t)n * 8);
	printf("%-11s %-4s %9s %10s %-24s %11s %-14s %s\n", "function", "type", "points", "max ulp",
	       "at x (y)", "max abs", "at x", "special mismatches");
	int rc = 0;
	for (int i = 0; i < NFNS; i++)
		for (int t = 0; t < 2; t++) {
			const Fn *f = &fns[i];
			bool f64 = t;
			rng_state = 0x9e3779b97f4a7c15ULL + (uint64_t)i;
			fill(xs, n, f->lo, f->hi, f->pos_only, f64);
			if (f->ref2) {
				/* y: a mix of small integers, halves and log-spaced values */
				fill(ys, n, f64 ? 1e-3 : 1e-3, f->op == OP_POW ? 40.0 : 1e3, false, f64);
				for (long k = 0; k < n; k++) {
					uint64_t r = rng() % 8;
					if (r == 0)
						ys[k] = (double)(int)(rng() % 21) - 10;
					else if (r == 1)
						ys[k] = ((double)(int)(rng() % 41) - 20) * 0.5;
				}
				if (f->op == OP_POW)
					for (long k = 0; k < n; k++)
						xs[k] = fabs(xs[k]) > 1e4 ? fmod(xs[k], 1e4) : xs[k];
			}
			for (long k = 0; k < n; k++) {
				if (f64) {
					((double *)bx)[k] = xs[k];
					((double *)by)[k] = ys[k];
				} else {
					((float *)bx)[k] = (float)xs[k];
					((float *)by)[k] = (float)ys[k];
				}
			}
			snprintf(name, sizeof name, "k%d_%s", i, f64 ? "f64" : "f32");
			void (*k)(const void *, const void *, void *, long) =
				(void (*)(const void *, const void *, void *, long))cg_jit_lookup(jit, name, &d);
			if (!k) {
				fprintf(stderr, "math_accuracy: %s\n", d.msg);
				rc = 1;
				continue;
			}
			k(bx, by, bo, n);
			Stat s = {0};
			for (long j = 0; j < n; j++) {
				double x = f64 ? ((double *)bx)[j] : ((float *)bx)[j];
				double y = f64 ? ((double *)by)[j] : ((float *)by)[j];
				double got = f64 ? ((double *)bo)[j] : ((float *)bo)[j];
				long double ref;
				if (f->ref2)
					ref = f64 ? f->ref2(x, y) : (long double)(double)f->ref2(x, y);
				else
					ref = f64 ? f->ref(x) : (long double)(double)f->ref(x);
				account(&s, x, y, got, ref, f64);
			}
			char at[48];
			if (f->ref2)
				snprintf(at, sizeof at, "%.9g (%.6g)", s.at_ulp, s.max_ulp_y);
			else
				snprintf(at, sizeof at, "%.17g", s.at_ulp);
			printf("%-11s %-4s %9ld %10.3f %-24s %11.3g %-14.8g %ld\n", f->name, f64 ? "f64" : "f32", s.n,
			       s.max_ulp, at, s.max_abs, s.at_abs, s.special_bad);
			fflush(stdout);
		}
	free(xs);
	free(ys);
	free(bx);
	free(by);
	free(bo);
	cg_jit_free(jit);
	return rc;
}
