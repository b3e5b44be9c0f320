/* test_math.c: the math lowering (codegen/math.c) and the host JIT (codegen/jit.c).
 *
 * Each op is lowered in host mode into a scalar function, JIT-compiled, and
 * compared with libm at sampled points with a per-op ulp tolerance (f32 against
 * the f64 libm function, f64 against the long double one); special inputs get
 * exact expectations. The GPU side builds one nvptx64 module holding every op,
 * checks that no llvm.exp/log/sin/... call or other external survives, emits
 * PTX for sm_90 and, where ptxas exists, assembles it for sm_90 and sm_80. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "../../codegen/jit.h"
#include "../../codegen/math.h"
#include "test.h"

/* ---- building and running scalar functions ------------------------------------ */

typedef struct {
	OpKind op;
	GeluApprox approx;
	const char *name;
} MOp;

static const MOp unary_ops[] = {
	{OP_EXP, GELU_NONE, "exp"}, {OP_LOG, GELU_NONE, "log"}, {OP_LOG1P, GELU_NONE, "log1p"},
	{OP_SQRT, GELU_NONE, "sqrt"}, {OP_RECIP, GELU_NONE, "recip"}, {OP_SIN, GELU_NONE, "sin"},
	{OP_COS, GELU_NONE, "cos"}, {OP_TANH, GELU_NONE, "tanh"}, {OP_ERF, GELU_NONE, "erf"},
	{OP_FLOOR, GELU_NONE, "floor"}, {OP_CEIL, GELU_NONE, "ceil"}, {OP_ROUND, GELU_NONE, "round"},
	{OP_TRUNC, GELU_NONE, "trunc"}, {OP_SIGMOID, GELU_NONE, "sigmoid"}, {OP_SILU, GELU_NONE, "silu"},
	{OP_GELU, GELU_NONE, "gelu"}, {OP_GELU, GELU_TANH, "gelu_tanh"}, {OP_ABS, GELU_NONE, "abs"},
	{OP_SIGN, GELU_NONE, "sign"}, {OP_NEG, GELU_NONE, "neg"}, {OP_RELU, GELU_NONE, "relu"},
};
static const MOp binary_ops[] = {
	{OP_POW, GELU_NONE, "pow"}, {OP_POWF, GELU_NONE, "powf"}, {OP_POW_SCALAR, GELU_NONE, "pow_scalar"},
	{OP_REM, GELU_NONE, "rem"}, {OP_REM_SCALAR, GELU_NONE, "rem_scalar"},
};
enum { NUN = sizeof unary_ops / sizeof unary_ops[0], NBIN = sizeof binary_ops / sizeof binary_ops[0] };

/* Adds "NAME_f32"/"NAME_f64" (T(T) or T(T,T)) and "is_nan_*"/"is_inf_*" (i8(T)). */
static void add_all(LLVMContextRef ctx, LLVMModuleRef mod, bool gpu, bool libdevice)
{
	LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
	CgMath m = {ctx, mod, b, gpu, libdevice};
	char name[64];
	for (int ty = 0; ty < 2; ty++) {
		LLVMTypeRef t = ty ? LLVMDoubleTypeInContext(ctx) : LLVMFloatTypeInContext(ctx);
		LLVMTypeRef p2[2] = {t, t};
		const char *sfx = ty ? "f64" : "f32";
		for (int i = 0; i < NUN + NBIN + 2; i++) {
			bool bin = i >= NUN && i < NUN + NBIN;
			bool pred = i >= NUN + NBIN;
			const char *nm = i < NUN ? unary_ops[i].name : bin ? binary_ops[i - NUN].name
				       : i == NUN + NBIN ? "is_nan" : "is_inf";
			snprintf(name, sizeof name, "%s_%s", nm, sfx);
			LLVMTypeRef rt = pred ? LLVMInt8TypeInContext(ctx) : t;
			LLVMValueRef fn = LLVMAddFunction(mod, name, LLVMFunctionType(rt, p2, bin ? 2 : 1, false));
			LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
			LLVMValueRef x = LLVMGetParam(fn, 0), r;
			if (bin) {
				r = cg_math_binary(&m, binary_ops[i - NUN].op, x, LLVMGetParam(fn, 1));
			} else if (pred) {
				r = cg_math_unary(&m, i == NUN + NBIN ? OP_IS_NAN : OP_IS_INF, x, GELU_NONE);
				assert_true(LLVMTypeOf(r) == LLVMInt1TypeInContext(ctx));
				r = LLVMBuildZExt(b, r, rt, "");
			} else {
				r = cg_math_unary(&m, unary_ops[i].op, x, unary_ops[i].approx);
			}
			assert_true(LLVMTypeOf(r) == rt || pred);
			LLVMBuildRet(b, r);
		}
	}
	LLVMDisposeBuilder(b);
}

static CgJit *g_jit;

static void *fn_addr(const char *name, const char *sfx)
{
	char full[64];
	Diag d;
	snprintf(full, sizeof full, "%s_%s", name, sfx);
	void *p = cg_jit_lookup(g_jit, full, &d);
	if (!p)
		fail_msg("lookup %s: %s", full, d.msg);
	return p;
}

static int setup_jit(void **state)
{
	(void)state;
	Diag d;
	g_jit = cg_jit_new(&d);
	if (!g_jit) {
		fprintf(stderr, "jit: %s\n", d.msg);
		return -1;
	}
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("test_math", ctx);
	add_all(ctx, mod, false, false);
	if (cg_jit_add_module(g_jit, mod, ctx, &d)) {
		fprintf(stderr, "jit: %s\n", d.msg);
		return -1;
	}
	return 0;
}

static int teardown_jit(void **state)
{
	(void)state;
	cg_jit_free(g_jit);
	g_jit = NULL;
	return 0;
}

/* ---- references and tolerances -------------------------------------------------- */

static long double ref_unary(const char *n, long double x)
{
	if (!strcmp(n, "exp")) return expl(x);
	if (!strcmp(n, "log")) return logl(x);
	if (!strcmp(n, "log1p")) return log1pl(x);
	if (!strcmp(n, "sqrt")) return sqrtl(x);
	if (!strcmp(n, "recip")) return 1.0L / x;
	if (!strcmp(n, "sin")) return sinl(x);
	if (!strcmp(n, "cos")) return cosl(x);
	if (!strcmp(n, "tanh")) return tanhl(x);
	if (!strcmp(n, "erf")) return erfl(x);
	if (!strcmp(n, "floor")) return floorl(x);
	if (!strcmp(n, "ceil")) return ceill(x);
	if (!strcmp(n, "round")) return rintl(x);
	if (!strcmp(n, "trunc")) return truncl(x);
	if (!strcmp(n, "sigmoid")) return 1.0L / (1.0L + expl(-x));
	if (!strcmp(n, "silu")) return x / (1.0L + expl(-x));
	if (!strcmp(n, "gelu")) return 0.5L * x * erfcl(-x / sqrtl(2.0L));
	if (!strcmp(n, "gelu_tanh")) {
		long double u = sqrtl(2.0L / 3.141592653589793238462643383279502884L) * (x + 0.044715L * x * x * x);
		return x / (1.0L + expl(-2.0L * u)); /* = 0.5x(1 + tanh u), without the cancellation */
	}
	if (!strcmp(n, "abs")) return fabsl(x);
	if (!strcmp(n, "sign")) return x > 0 ? 1.0L : x < 0 ? -1.0L : x;
	if (!strcmp(n, "neg")) return -x;
	if (!strcmp(n, "relu")) return x < 0 ? 0.0L : x;
	fail_msg("no reference for %s", n);
	return 0;
}

/* Max ulp allowed on the test points (docs/math.md has the measured maxima). */
static double tol_unary(const char *n)
{
	static const struct { const char *n; double ulp; } t[] = {
		{"exp", 1.5}, {"log", 1.5}, {"log1p", 3}, {"sqrt", 0.5}, {"recip", 0.5},
		{"sin", 2}, {"cos", 2}, {"tanh", 3}, {"erf", 2}, {"sigmoid", 3}, {"silu", 4},
		{"gelu", 6}, {"gelu_tanh", 16}, /* ill-conditioned tail: see docs/math.md */
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (!strcmp(t[i].n, n))
			return t[i].ulp;
	return 0; /* exact ops */
}

static long double ulp_at(long double r, bool f64)
{
	int mant = f64 ? 53 : 24, emin = f64 ? -1021 : -125, e;
	r = fabsl(r);
	if (r == 0)
		return ldexpl(1.0L, emin - mant);
	frexpl(r, &e);
	return ldexpl(1.0L, (e < emin ? emin : e) - mant);
}

static void check_close(const char *what, double x, double y, double got, long double ref, double tol, bool f64)
{
	if (!f64)
		ref = (long double)(double)ref;
	if (isinf(f64 ? (double)ref : (float)ref))
		ref = f64 ? (long double)(double)ref : (long double)(float)ref;
	if (isnan(ref) || isinf(ref)) {
		if ((isnan(ref) && !isnan(got)) || (!isnan(ref) && (long double)got != ref))
			fail_msg("%s(%.17g, %.17g) = %.17g, want %.17Lg", what, x, y, got, ref);
		return;
	}
	long double u = fabsl((long double)got - ref) / ulp_at(ref, f64);
	if (u > tol)
		fail_msg("%s_%s(%.17g, %.17g) = %.17g, want %.17Lg: %.2Lf ulp > %.2f",
			 what, f64 ? "f64" : "f32", x, y, got, ref, u, tol);
}

/* Deterministic sample points: a log-spaced grid in both signs, plus halves. */
static int sample_points(double *v, int max)
{
	int n = 0;
	for (int e = -60; e <= 60 && n < max - 4; e++)
		for (int k = 0; k < 3 && n < max - 4; k++) {
			double x = ldexp(1.0 + k * 0.3711, e / 2) * (e % 2 ? 1.37 : 1.0);
			v[n++] = x;
			v[n++] = -x;
		}
	for (int i = -40; i <= 40 && n < max; i++)
		v[n++] = i * 0.5 + 0.125 * (i % 3);
	return n;
}

/* The domain on which each function is held to its tolerance here. */
static bool in_domain(const char *n, double x)
{
	double a = fabs(x);
	if (!strcmp(n, "gelu") || !strcmp(n, "gelu_tanh"))
		return a <= 5;
	if (!strcmp(n, "sin") || !strcmp(n, "cos"))
		return a <= 1e6;
	return true;
}

static void test_math_unary_accuracy(void **state)
{
	(void)state;
	double pts[512];
	int np = sample_points(pts, 512);
	for (int i = 0; i < NUN; i++) {
		const char *n = unary_ops[i].name;
		float (*f32)(float) = (float (*)(float))fn_addr(n, "f32");
		double (*f64)(double) = (double (*)(double))fn_addr(n, "f64");
		for (int k = 0; k < np; k++) {
			double x = pts[k];
			if (!in_domain(n, x))
				continue;
			float xf = (float)x;
			check_close(n, xf, 0, f32(xf), (long double)(double)ref_unary(n, xf), tol_unary(n), false);
			check_close(n, x, 0, f64(x), ref_unary(n, x), tol_unary(n), true);
		}
	}
}

static long double ref_rem(long double x, long double y)
{
	long double m = fmodl(x, y);
	if (m != 0 && ((m < 0) != (y < 0)))
		m += y;
	return m;
}

static void test_math_binary_accuracy(void **state)
{
	(void)state;
	static const double xs[] = {0.5, 1.5, 2.0, 3.25, 10.0, 1e-3, 7.5e4, 0.999, 1.001, 123.456};
	static const double ys[] = {2.0, 0.5, -1.0, 3.0, -2.5, 10.0, 0.1, -7.0, 1.25, 33.0};
	for (int bi = 0; bi < NBIN; bi++) {
		const char *n = binary_ops[bi].name;
		bool is_pow = binary_ops[bi].op != OP_REM && binary_ops[bi].op != OP_REM_SCALAR;
		float (*f32)(float, float) = (float (*)(float, float))fn_addr(n, "f32");
		double (*f64)(double, double) = (double (*)(double, double))fn_addr(n, "f64");
		for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
			for (size_t j = 0; j < sizeof ys / sizeof ys[0]; j++)
				for (int s = 0; s < 2; s++) {
					double x = s ? -xs[i] : xs[i], y = ys[j];
					if (is_pow && x < 0)
						y = floor(y);
					float xf = (float)x, yf = (float)y;
					long double r32 = is_pow ? powl(xf, yf) : ref_rem(xf, yf);
					long double r64 = is_pow ? powl(x, y) : ref_rem(x, y);
					check_close(n, xf, yf, f32(xf, yf), (long double)(double)r32, is_pow ? 1 : 0.5, false);
					check_close(n, x, y, f64(x, y), r64, is_pow ? 2 : 0.5, true);
				}
	}
}

/* ---- specials ----------------------------------------------------------------------- */

typedef struct {
	const char *fn;
	double x, y, want;  /* want NAN: any NaN */
} Special;

static const Special specials[] = {
	{"exp", INFINITY, 0, INFINITY}, {"exp", -INFINITY, 0, 0}, {"exp", NAN, 0, NAN},
	{"exp", 0, 0, 1}, {"exp", -0.0, 0, 1}, {"exp", 1000, 0, INFINITY}, {"exp", -1000, 0, 0},
	{"log", 0, 0, -INFINITY}, {"log", -0.0, 0, -INFINITY}, {"log", -1, 0, NAN},
	{"log", INFINITY, 0, INFINITY}, {"log", 1, 0, 0}, {"log", NAN, 0, NAN}, {"log", -INFINITY, 0, NAN},
	{"log1p", -1, 0, -INFINITY}, {"log1p", -2, 0, NAN}, {"log1p", INFINITY, 0, INFINITY},
	{"log1p", 0, 0, 0}, {"log1p", -0.0, 0, -0.0},
	{"sqrt", -1, 0, NAN}, {"sqrt", INFINITY, 0, INFINITY}, {"sqrt", -0.0, 0, -0.0},
	{"recip", 0, 0, INFINITY}, {"recip", -0.0, 0, -INFINITY}, {"recip", INFINITY, 0, 0},
	{"sin", INFINITY, 0, NAN}, {"sin", -INFINITY, 0, NAN}, {"sin", NAN, 0, NAN}, {"sin", -0.0, 0, -0.0},
	{"cos", INFINITY, 0, NAN}, {"cos", 0, 0, 1},
	{"tanh", INFINITY, 0, 1}, {"tanh", -INFINITY, 0, -1}, {"tanh", 50, 0, 1}, {"tanh", -0.0, 0, -0.0},
	{"tanh", NAN, 0, NAN},
	{"erf", INFINITY, 0, 1}, {"erf", -INFINITY, 0, -1}, {"erf", 0, 0, 0}, {"erf", -0.0, 0, -0.0},
	{"erf", NAN, 0, NAN},
	{"round", 0.5, 0, 0}, {"round", 1.5, 0, 2}, {"round", 2.5, 0, 2}, {"round", -2.5, 0, -2},
	{"round", -0.5, 0, -0.0}, {"floor", -0.5, 0, -1}, {"ceil", -0.5, 0, -0.0}, {"trunc", -1.7, 0, -1},
	{"floor", INFINITY, 0, INFINITY}, {"round", NAN, 0, NAN},
	{"sigmoid", INFINITY, 0, 1}, {"sigmoid", -INFINITY, 0, 0}, {"sigmoid", 0, 0, 0.5}, {"sigmoid", NAN, 0, NAN},
	{"silu", INFINITY, 0, INFINITY}, {"silu", 0, 0, 0}, {"silu", -1000, 0, -0.0},
	{"gelu", INFINITY, 0, INFINITY}, {"gelu", 0, 0, 0}, {"gelu", -100, 0, -0.0}, {"gelu", NAN, 0, NAN},
	{"gelu_tanh", INFINITY, 0, INFINITY}, {"gelu_tanh", -100, 0, -0.0}, {"gelu_tanh", 0, 0, 0},
	{"abs", -0.0, 0, 0}, {"abs", -INFINITY, 0, INFINITY},
	{"sign", -3, 0, -1}, {"sign", 2, 0, 1}, {"sign", 0, 0, 0}, {"sign", NAN, 0, NAN},
	{"sign", -INFINITY, 0, -1}, {"relu", -2, 0, 0}, {"relu", 3, 0, 3}, {"relu", NAN, 0, NAN},
	{"neg", 0, 0, -0.0},
	{"pow", NAN, 0, 1}, {"pow", 1, NAN, 1}, {"pow", 2, NAN, NAN}, {"pow", NAN, 2, NAN},
	{"pow", -8, 1.0 / 3, NAN}, {"pow", -2, 3, -8}, {"pow", -2, 2, 4}, {"pow", -0.0, -3, -INFINITY},
	{"pow", 0, -3, INFINITY}, {"pow", 0, -2, INFINITY}, {"pow", -0.0, 3, -0.0}, {"pow", 0, 2, 0},
	{"pow", -1, INFINITY, 1}, {"pow", 0.5, INFINITY, 0}, {"pow", 0.5, -INFINITY, INFINITY},
	{"pow", 2, INFINITY, INFINITY}, {"pow", 2, -INFINITY, 0}, {"pow", -INFINITY, -3, -0.0},
	{"pow", -INFINITY, 3, -INFINITY}, {"pow", -INFINITY, 2, INFINITY}, {"pow", INFINITY, -1, 0},
	{"pow", INFINITY, 0.5, INFINITY}, {"pow", 10, 400, INFINITY}, {"pow", 10, -400, 0},
	{"pow", 2, 10, 1024}, {"pow", -INFINITY, 0.5, INFINITY},
	{"rem", 5, 3, 2}, {"rem", -5, 3, 1}, {"rem", 5, -3, -1}, {"rem", -5, -3, -2}, {"rem", 5, 0, NAN},
	{"rem", INFINITY, 3, NAN}, {"rem", 5, INFINITY, 5}, {"rem", -5, INFINITY, INFINITY},
	{"rem", 6, 3, 0}, {"rem", -6, 3, 0}, {"rem", 6, -3, -0.0}, {"rem", 5.5, 2, 1.5},
};

static bool same_value(double got, double want)
{
	if (isnan(want))
		return isnan(got);
	return got == want && signbit(got) == signbit(want);
}

static void test_math_specials(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) {
		const Special *s = &specials[i];
		bool bin = !strcmp(s->fn, "pow") || !strcmp(s->fn, "rem");
		for (int ty = 0; ty < 2; ty++) {
			double got;
			if (ty == 0 && bin)
				got = ((float (*)(float, float))fn_addr(s->fn, "f32"))((float)s->x, (float)s->y);
			else if (ty == 0)
				got = ((float (*)(float))fn_addr(s->fn, "f32"))((float)s->x);
			else if (bin)
				got = ((double (*)(double, double))fn_addr(s->fn, "f64"))(s->x, s->y);
			else
				got = ((double (*)(double))fn_addr(s->fn, "f64"))(s->x);
			double want = ty == 0 ? (double)(float)s->want : s->want;
			if (!same_value(got, want))
				fail_msg("%s_%s(%g, %g) = %.17g, want %.17g", s->fn, ty ? "f64" : "f32",
					 s->x, s->y, got, want);
		}
	}
}

static void test_math_denormals(void **state)
{
	(void)state;
	float (*expf_)(float) = (float (*)(float))fn_addr("exp", "f32");
	double (*exp_)(double) = (double (*)(double))fn_addr("exp", "f64");
	float (*logf_)(float) = (float (*)(float))fn_addr("log", "f32");
	double (*log_)(double) = (double (*)(double))fn_addr("log", "f64");
	/* results in the denormal range and denormal arguments */
	for (float x = -103.0f; x < -87.0f; x += 0.37f)
		check_close("exp", x, 0, expf_(x), (long double)exp((double)x), 1.0, false);
	for (double x = -744.0; x < -700.0; x += 1.37)
		check_close("exp", x, 0, exp_(x), expl(x), 1.0, true);
	for (float x = FLT_TRUE_MIN; x < FLT_MIN; x *= 3.7f)
		check_close("log", x, 0, logf_(x), (long double)log((double)x), 1.0, false);
	for (double x = DBL_TRUE_MIN; x < DBL_MIN; x *= 3.7)
		check_close("log", x, 0, log_(x), logl(x), 1.0, true);
	float (*sinf_)(float) = (float (*)(float))fn_addr("sin", "f32");
	assert_true(sinf_(1e-40f) == 1e-40f);
	double (*tanh_)(double) = (double (*)(double))fn_addr("tanh", "f64");
	assert_true(tanh_(1e-310) == 1e-310);
}

static void test_math_predicates(void **state)
{
	(void)state;
	unsigned char (*nan32)(float) = (unsigned char (*)(float))fn_addr("is_nan", "f32");
	unsigned char (*inf64)(double) = (unsigned char (*)(double))fn_addr("is_inf", "f64");
	unsigned char (*inf32)(float) = (unsigned char (*)(float))fn_addr("is_inf", "f32");
	unsigned char (*nan64)(double) = (unsigned char (*)(double))fn_addr("is_nan", "f64");
	assert_int_equal(nan32(NAN), 1);
	assert_int_equal(nan32(INFINITY), 0);
	assert_int_equal(nan32(1.0f), 0);
	assert_int_equal(nan64(-NAN), 1);
	assert_int_equal(nan64(0.0), 0);
	assert_int_equal(inf32(-INFINITY), 1);
	assert_int_equal(inf32(FLT_MAX), 0);
	assert_int_equal(inf32(NAN), 0);
	assert_int_equal(inf64(INFINITY), 1);
	assert_int_equal(inf64(DBL_MAX), 0);
}

static void test_math_supports(void **state)
{
	(void)state;
	for (int i = 0; i < NUN; i++)
		assert_true(cg_math_supports(unary_ops[i].op));
	for (int i = 0; i < NBIN; i++)
		assert_true(cg_math_supports(binary_ops[i].op));
	assert_true(cg_math_supports(OP_IS_NAN));
	assert_false(cg_math_supports(OP_ADD));
	assert_false(cg_math_supports(OP_MATMUL));
	assert_false(cg_math_supports(OP_SUM));
}

/* ---- the JIT on its own -------------------------------------------------------------- */

static void test_jit_errors(void **state)
{
	(void)state;
	Diag d;
	CgJit *j = cg_jit_new(&d);
	assert_non_null(j);
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("m", ctx);
	LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx);
	LLVMValueRef fn = LLVMAddFunction(mod, "add7", LLVMFunctionType(i32, &i32, 1, false));
	LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
	LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
	LLVMBuildRet(b, LLVMBuildAdd(b, LLVMGetParam(fn, 0), LLVMConstInt(i32, 7, false), ""));
	LLVMDisposeBuilder(b);
	assert_int_equal(cg_jit_add_module(j, mod, ctx, &d), 0);
	int (*add7)(int) = (int (*)(int))cg_jit_lookup(j, "add7", &d);
	assert_non_null(add7);
	assert_int_equal(add7(35), 42);
	assert_null(cg_jit_lookup(j, "no_such_function", &d));
	assert_non_null(strstr(d.msg, "no_such_function"));

	/* an invalid module (a block without terminator) is refused, not run */
	ctx = LLVMContextCreate();
	mod = LLVMModuleCreateWithNameInContext("bad", ctx);
	fn = LLVMAddFunction(mod, "bad", LLVMFunctionType(i32 = LLVMInt32TypeInContext(ctx), &i32, 1, false));
	LLVMAppendBasicBlockInContext(ctx, fn, "entry");
	assert_int_equal(cg_jit_add_module(j, mod, ctx, &d), -1);
	assert_non_null(strstr(d.msg, "invalid module"));
	cg_jit_free(j);
}

/* ---- the GPU module ------------------------------------------------------------------ */

static LLVMTargetMachineRef nvptx_tm(const char *arch)
{
	LLVMInitializeNVPTXTargetInfo();
	LLVMInitializeNVPTXTarget();
	LLVMInitializeNVPTXTargetMC();
	LLVMInitializeNVPTXAsmPrinter();
	LLVMTargetRef t;
	char *err = NULL;
	if (LLVMGetTargetFromTriple("nvptx64-nvidia-cuda", &t, &err)) {
		LLVMDisposeMessage(err);
		return NULL;
	}
	return LLVMCreateTargetMachine(t, "nvptx64-nvidia-cuda", arch, "+ptx78", LLVMCodeGenLevelDefault,
				       LLVMRelocDefault, LLVMCodeModelDefault);
}

static const char *find_ptxas(void)
{
	static char path[512];
	const char *env = getenv("PATH");
	if (env) {
		char *copy = strdup(env), *save = NULL;
		for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
			snprintf(path, sizeof path, "%s/ptxas", dir);
			if (access(path, X_OK) == 0) {
				free(copy);
				return path;
			}
		}
		free(copy);
	}
	snprintf(path, sizeof path, "/usr/local/cuda/bin/ptxas");
	return access(path, X_OK) == 0 ? path : NULL;
}

/* Fails when a defined function calls a function that is neither defined in
 * the module nor an allowed intrinsic. */
static void check_no_externals(LLVMModuleRef mod)
{
	static const char *const banned[] = {"llvm.exp", "llvm.log", "llvm.sin", "llvm.cos", "llvm.tanh",
					     "llvm.pow", "llvm.erf", "llvm.ldexp", "llvm.frexp"};
	for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
		if (!LLVMIsDeclaration(fn) || !LLVMGetFirstUse(fn))
			continue;
		size_t len;
		const char *name = LLVMGetValueName2(fn, &len);
		for (size_t i = 0; i < sizeof banned / sizeof banned[0]; i++)
			if (!strncmp(name, banned[i], strlen(banned[i])))
				fail_msg("the GPU module calls %s", name);
		if (strncmp(name, "llvm.", 5))
			fail_msg("the GPU module calls the external function %s", name);
	}
}

static void ptxas_check(const char *ptx, const char *arch, const char *tag)
{
	const char *ptxas = find_ptxas();
	if (!ptxas) {
		print_message("[ SKIPPED  ] ptxas not found (PATH, /usr/local/cuda/bin): %s PTX not assembled\n", tag);
		return;
	}
	char file[] = "/tmp/fusec-math-XXXXXX";
	int fd = mkstemp(file);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fputs(ptx, f);
	fclose(f);
	{
		char cmd[1200], out[4096] = "";
		snprintf(cmd, sizeof cmd, "%s -arch=%s -o /dev/null %s 2>&1", ptxas, arch, file);
		FILE *p = popen(cmd, "r");
		assert_non_null(p);
		size_t n = fread(out, 1, sizeof out - 1, p);
		out[n] = 0;
		int rc = pclose(p);
		if (rc != 0) {
			unlink(file);
			fail_msg("ptxas %s failed on %s PTX: %s", arch, tag, out);
		}
	}
	unlink(file);
}

static char *emit_gpu_module(bool libdevice, const char *arch)
{
	LLVMTargetMachineRef tm = nvptx_tm(arch);
	assert_non_null(tm);
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("gpu_math", ctx);
	LLVMSetTarget(mod, "nvptx64-nvidia-cuda");
	LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
	char *dl = LLVMCopyStringRepOfTargetData(td);
	LLVMSetDataLayout(mod, dl);
	LLVMDisposeMessage(dl);
	LLVMDisposeTargetData(td);
	add_all(ctx, mod, true, libdevice);
	if (libdevice) {
		Diag d;
		const char *path = cg_math_find_libdevice();
		assert_non_null(path);
		if (cg_math_link_libdevice(mod, path, &d))
			fail_msg("link libdevice: %s", d.msg);
	}
	char *msg = NULL;
	LLVMPassBuilderOptionsRef opt = LLVMCreatePassBuilderOptions();
	LLVMErrorRef err = LLVMRunPasses(mod, "default<O3>", tm, opt);
	LLVMDisposePassBuilderOptions(opt);
	if (err) {
		char *em = LLVMGetErrorMessage(err);
		fail_msg("O3: %s", em);
	}
	check_no_externals(mod);
	LLVMMemoryBufferRef buf;
	if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &msg, &buf))
		fail_msg("PTX emission failed: %s", msg);
	size_t n = LLVMGetBufferSize(buf);
	char *ptx = malloc(n + 1);
	memcpy(ptx, LLVMGetBufferStart(buf), n);
	ptx[n] = 0;
	LLVMDisposeMemoryBuffer(buf);
	LLVMDisposeModule(mod);
	LLVMContextDispose(ctx);
	LLVMDisposeTargetMachine(tm);
	return ptx;
}

static void test_math_gpu_ptx(void **state)
{
	(void)state;
	static const char *const arch[] = {"sm_90", "sm_80"};
	for (int i = 0; i < 2; i++) {
		char *ptx = emit_gpu_module(false, arch[i]);
		char target[32];
		snprintf(target, sizeof target, ".target %s", arch[i]);
		assert_non_null(strstr(ptx, target));
		assert_non_null(strstr(ptx, ".visible .func  (.param .b32 func_retval0) exp_f32"));
		assert_non_null(strstr(ptx, "fma.rn.f64"));
		assert_null(strstr(ptx, ".extern"));
		ptxas_check(ptx, arch[i], "default");
		free(ptx);
	}
}

static void test_math_gpu_libdevice(void **state)
{
	(void)state;
	if (!cg_math_find_libdevice()) {
		print_message("[ SKIPPED  ] no libdevice under /usr/local/cuda*: libdevice mode not tested\n");
		return;
	}
	static const char *const arch[] = {"sm_90", "sm_80"};
	for (int i = 0; i < 2; i++) {
		char *ptx = emit_gpu_module(true, arch[i]);
		assert_null(strstr(ptx, ".extern"));
		assert_null(strstr(ptx, "__nv_expf"));  /* inlined and internalized away */
		ptxas_check(ptx, arch[i], "libdevice");
		free(ptx);
	}
}

static void test_math_libdevice_errors(void **state)
{
	(void)state;
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("m", ctx);
	Diag d;
	assert_int_equal(cg_math_link_libdevice(mod, "/nonexistent/libdevice.10.bc", &d), -1);
	assert_non_null(strstr(d.msg, "cannot read libdevice"));
	char file[] = "/tmp/fusec-notbc-XXXXXX";
	int fd = mkstemp(file);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not bitcode", 11), 11);
	close(fd);
	assert_int_equal(cg_math_link_libdevice(mod, file, &d), -1);
	assert_non_null(strstr(d.msg, "bitcode"));
	unlink(file);
	LLVMDisposeModule(mod);
	LLVMContextDispose(ctx);
}

const struct CMUnitTest math_tests[] = {
	cmocka_unit_test(test_math_supports),
	cmocka_unit_test(test_jit_errors),
	cmocka_unit_test_setup_teardown(test_math_unary_accuracy, setup_jit, teardown_jit),
	cmocka_unit_test_setup_teardown(test_math_binary_accuracy, setup_jit, teardown_jit),
	cmocka_unit_test_setup_teardown(test_math_specials, setup_jit, teardown_jit),
	cmocka_unit_test_setup_teardown(test_math_denormals, setup_jit, teardown_jit),
	cmocka_unit_test_setup_teardown(test_math_predicates, setup_jit, teardown_jit),
	cmocka_unit_test(test_math_gpu_ptx),
	cmocka_unit_test(test_math_gpu_libdevice),
	cmocka_unit_test(test_math_libdevice_errors),
};
const size_t math_ntests = SUITE_COUNT(math_tests);
