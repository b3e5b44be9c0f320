/* math.c: the math lowering table and the IR sequences behind it.
 *
 * math_table[] is indexed by OpKind; each entry names the op, how it is
 * lowered (inline sequence or internal helper function), the body that emits
 * the portable lowering for f32 and f64, and the libdevice function used
 * instead in libdevice mode. cg_math_unary/binary only look entries up.
 *
 * The portable lowerings use nothing but IR that NVPTX and x86 both select:
 * fadd/fmul/fdiv, llvm.fma, fabs, floor, ceil, trunc, rint, sqrt, copysign,
 * minnum/maxnum, integer bit tricks on the float encoding, and branches.
 * They follow the classic recipe: reduce the argument exactly (Cody-Waite with
 * fma), evaluate a polynomial with fma (Horner), reconstruct, and patch the
 * special inputs with selects. Polynomial coefficients are Taylor coefficients
 * (exp, expm1, log, sin, cos) or Chebyshev fits (erf, erfc), produced by the
 * mpmath script in docs/math.md; the accuracy each reaches is measured by
 * tests/bench/math_accuracy.c and recorded in docs/math.md.
 *
 * Large lowerings become internal, alwaysinline functions named
 * "fusec.math.<name>.<f32|f64>" (".nv" in libdevice mode), created once per
 * module, so a kernel with ten exps carries one body and the optimizer inlines it. */
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>

#include "math.h"


/* ---- emission context ------------------------------------------------------ */

typedef struct {
	CgMath *m;
	LLVMBuilderRef b;     /* where instructions go */
	LLVMTypeRef t;        /* float or double */
	LLVMTypeRef it;       /* i32 or i64: the float's bits */
	bool f64;
	GeluApprox approx;    /* read by gelu only */
	OpKind op;            /* read by body_act_half only */
} Em;

typedef LLVMValueRef (*MathBody)(Em *e, LLVMValueRef *args);

static LLVMValueRef K(Em *e, double v)
{
	return LLVMConstReal(e->t, v);
}

static LLVMValueRef KI(Em *e, long long v)
{
	return LLVMConstInt(e->it, (unsigned long long)v, true);
}

/* A coefficient of a per-type table: f32 or f64 variant. */
#define KT(e, a, b) K((e), (e)->f64 ? (b) : (a))

static LLVMValueRef em_intrinsic(Em *e, const char *name, int n, LLVMValueRef *args)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	if (!id)
		die("unknown intrinsic %s", name);
	LLVMTypeRef tys[1] = {LLVMTypeOf(args[0])};
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(e->m->mod, id, tys, 1);
	LLVMTypeRef fty = LLVMIntrinsicGetType(e->m->ctx, id, tys, 1);
	return LLVMBuildCall2(e->b, fty, fn, args, (unsigned)n, "");
}

static LLVMValueRef I1(Em *e, const char *name, LLVMValueRef x)
{
	return em_intrinsic(e, name, 1, &x);
}

static LLVMValueRef I2(Em *e, const char *name, LLVMValueRef x, LLVMValueRef y)
{
	LLVMValueRef a[2] = {x, y};
	return em_intrinsic(e, name, 2, a);
}

static LLVMValueRef fma_(Em *e, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c)
{
	LLVMValueRef v[3] = {a, b, c};
	return em_intrinsic(e, "llvm.fma", 3, v);
}

static LLVMValueRef add(Em *e, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFAdd(e->b, a, b, ""); }
static LLVMValueRef sub(Em *e, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFSub(e->b, a, b, ""); }
static LLVMValueRef mul(Em *e, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFMul(e->b, a, b, ""); }
static LLVMValueRef fdiv(Em *e, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFDiv(e->b, a, b, ""); }
static LLVMValueRef neg(Em *e, LLVMValueRef a) { return LLVMBuildFNeg(e->b, a, ""); }
static LLVMValueRef fabs_(Em *e, LLVMValueRef a) { return I1(e, "llvm.fabs", a); }
static LLVMValueRef sel(Em *e, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildSelect(e->b, c, a, b, ""); }
static LLVMValueRef fcmp(Em *e, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFCmp(e->b, p, a, b, ""); }
static LLVMValueRef isnan_(Em *e, LLVMValueRef a) { return fcmp(e, LLVMRealUNO, a, a); }
static LLVMValueRef isinf_(Em *e, LLVMValueRef a) { return fcmp(e, LLVMRealOEQ, fabs_(e, a), K(e, HUGE_VAL)); }
static LLVMValueRef bits(Em *e, LLVMValueRef a) { return LLVMBuildBitCast(e->b, a, e->it, ""); }
static LLVMValueRef flt(Em *e, LLVMValueRef a) { return LLVMBuildBitCast(e->b, a, e->t, ""); }

/* Horner with fma: c[0]*x^(n-1) + ... + c[n-1]. */
static LLVMValueRef horner(Em *e, LLVMValueRef x, const double *c, int n)
{
	LLVMValueRef p = K(e, c[0]);
	for (int i = 1; i < n; i++)
		p = fma_(e, p, x, K(e, c[i]));
	return p;
}

/* ---- helper functions ------------------------------------------------------ */

/* Call (creating on first use) the internal helper "fusec.math.<name>.<type>"
 * whose body is emitted by `body` over nargs parameters of the float type. */
static LLVMValueRef em_helper(Em *e, const char *name, int nargs, LLVMValueRef *args, MathBody body)
{
	char full[96];
	snprintf(full, sizeof full, "fusec.math.%s%s.%s", name,
		 e->m->libdevice && e->m->gpu ? ".nv" : "", e->f64 ? "f64" : "f32");
	LLVMTypeRef params[2] = {e->t, e->t};
	LLVMTypeRef fty = LLVMFunctionType(e->t, params, (unsigned)nargs, false);
	LLVMValueRef fn = LLVMGetNamedFunction(e->m->mod, full);
	if (!fn) {
		fn = LLVMAddFunction(e->m->mod, full, fty);
		LLVMSetLinkage(fn, LLVMInternalLinkage);
		unsigned kind = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
		LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
					LLVMCreateEnumAttribute(e->m->ctx, kind, 0));
		LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(e->m->ctx, fn, "entry");
		Em inner = *e;
		inner.b = LLVMCreateBuilderInContext(e->m->ctx);
		LLVMPositionBuilderAtEnd(inner.b, entry);
		LLVMValueRef p[2];
		for (int i = 0; i < nargs; i++)
			p[i] = LLVMGetParam(fn, (unsigned)i);
		LLVMBuildRet(inner.b, body(&inner, p));
		LLVMDisposeBuilder(inner.b);
	}
	return LLVMBuildCall2(e->b, fty, fn, args, (unsigned)nargs, "");
}

/* A libdevice function of the float type: float(float) or float(float, float). */
static LLVMValueRef em_nv(Em *e, const char *name, int nargs, LLVMValueRef *args)
{
	LLVMTypeRef params[2] = {e->t, e->t};
	LLVMTypeRef fty = LLVMFunctionType(e->t, params, (unsigned)nargs, false);
	LLVMValueRef fn = LLVMGetNamedFunction(e->m->mod, name);
	if (!fn)
		fn = LLVMAddFunction(e->m->mod, name, fty);
	return LLVMBuildCall2(e->b, fty, fn, args, (unsigned)nargs, "");
}

static bool em_nv_mode(const Em *e)
{
	return e->m->libdevice && e->m->gpu;
}

/* 2^n for an integer n (of e->it) in the normal exponent range. */
static LLVMValueRef pow2i(Em *e, LLVMValueRef n)
{
	int mant = e->f64 ? 52 : 23, bias = e->f64 ? 1023 : 127;
	LLVMValueRef v = LLVMBuildAdd(e->b, n, KI(e, bias), "");
	return flt(e, LLVMBuildShl(e->b, v, KI(e, mant), ""));
}

/* ---- exp, expm1 ------------------------------------------------------------ */

/* Coefficients, highest degree first; generated by the script in docs/math.md. */
static const double erf_small_f32[7] = {7.8758750626854883411e-5, -8.0168642871658695293e-4, 5.1890874234339739861e-3, -2.6854212010626412443e-2, 1.1283594715160217732e-1, -3.7612626666720331023e-1, 1.1283791658483509460};
static const double erf_small_f64[13] = {5.9571761477489114044e-11, -1.1372848856791673670e-9, 1.4659775274047435814e-8, -1.6350312701054695011e-7, 1.6461000484121368033e-6, -1.4925595266831181565e-5, 1.2055331111642710923e-4, -8.5483269808337899052e-4, 5.2239776248180144673e-3, -2.6866170645076793248e-2, 1.1283791670954878666e-1, -3.7612638903183748056e-1, 1.1283791670955125738};
/* g(t) = erfc(a)·exp(a²)·(a + 2) with t = (a - 2)/(a + 2), a >= 0 (t in [-1, 1)):
 * gelu's f32 erfc (erfc_t_f32 below) */
static const double erfc_t_f32[13] = {-1.7604320698932338153e-5, 2.5286262459977813855e-6, 1.3713324580658478858e-4, 6.6251860315588351442e-5, -6.5817450998213105141e-4, -8.5439137692170207503e-4, 3.0891168212586440272e-3, 6.483864681870784862e-3, -2.1510470964434510062e-2, -3.6442796460743711056e-2, 2.79472085681975778e-1, -6.8716066451989817205e-1, 1.0215827052420229755};
/* x in (0.5, 1, 2, 10.1) */
static const double erfc_f32[3][12] = {
	{1.5000000000000000000, 5.0000000000000000000e-1,
	 3.6296277184796275294e-7, -1.7726173487214903504e-6, 6.6012227990299864754e-6, -2.3192177833854410281e-5, 6.4495069799477249240e-5, -7.2843069309151864394e-5, -7.4165063129288691832e-4, 8.2892436012463203133e-3, -5.9199010662147685390e-2, 3.5952293850319571439e-1},
	{7.5000000000000000000e-1, 2.5000000000000000000e-1,
	 -6.8742599263192521350e-8, 2.0866141373228251206e-7, 4.0189065754852063851e-8, -4.4574023078526340201e-6, 3.6803266629019914438e-5, -1.9711946919844161243e-4, 6.2958151120814006839e-4, 1.2092404977888104853e-3, -4.2270244451672287091e-2, 4.6817959206938136335e-1},
	{2.9950495049504950669e-1, 2.0049504950495049331e-1,
	 4.6101999489341210516e-7, -7.6914759785055720259e-7, -3.4568431724973015225e-6, 2.2470347692869313026e-5, -5.1664862638952479937e-5, -1.3121691420960349610e-4, 1.6782691842757331968e-3, -5.4626521928281660610e-3, -2.6959891576013941811e-2, 5.4169980380187271873e-1},
};
/* x in (0.5, 1, 2, 4, 27.3) */
static const double erfc_f64[4][22] = {
	{1.5000000000000000000, 5.0000000000000000000e-1,
	 -5.9360131437070800666e-13, 2.8266435302593681607e-12, -8.9828722777923382284e-12, 3.1932260037794464408e-11, -1.0886414107655475239e-10, 3.1304803543982517142e-10, -6.8134109282647314051e-10, 3.6121957875855152783e-10, 7.6365842250192254590e-9, -6.2376869167945128109e-8, 3.4729875588020456173e-7, -1.6200880605233093541e-6, 6.6138811437600368193e-6, -2.3324414419415324086e-5, 6.4490724702056209910e-5, -7.2796062450338929866e-5, -7.4165009830765588317e-4, 8.2892377385077652388e-3, -5.9199010672768591567e-2, 3.5952293862040013324e-1},
	{7.5000000000000000000e-1, 2.5000000000000000000e-1,
	 2.6850707126484653473e-15, -7.1691468460565545660e-14, 4.8261194602590845803e-13, -2.1351351261067560117e-12, 7.5988396286301988251e-12, -1.9383827269966336016e-11, 5.5487407805705424709e-12, 3.3614460238940668839e-10, -2.7628350516285111518e-9, 1.5041114573567166687e-8, -6.1902834719539840288e-8, 1.6981376651505689196e-7, 3.4229190316696756272e-8, -4.4230805305834454870e-6, 3.6805390635973213005e-5, -1.9713177832873807159e-4, 6.2958124597706372484e-4, 1.2092420392931371637e-3, -4.2270244446368701549e-2, 4.6817959203854039327e-1},
	{3.7500000000000000000e-1, 1.2500000000000000000e-1,
	 1.4799886822335058903e-16, -5.2560803954187219960e-16, -3.9419236834289971768e-16, 1.4089895217352093221e-14, -1.0384107253056079623e-13, 4.6336921165611933070e-13, -7.7683547822439991366e-13, -7.7833547040049931953e-12, 9.0928083761715774948e-11, -5.1695947604597993606e-10, 1.2687197609200077422e-9, 8.1131342426290062949e-9, -1.2191986847826405232e-7, 7.4860509206081455753e-7, -1.1538108983988555865e-6, -2.8389142313325226949e-5, 3.4622662915240613926e-4, -1.4381248079936002037e-3, -1.8948191196769486871e-2, 5.3086034931697504288e-1},
	{1.4331501831501831454e-1, 1.0668498168498168546e-1,
	 2.9122835109794621109e-15, -9.3055800578992242745e-15, -2.1534739349238966527e-14, 2.1784103974973435546e-13, -4.9308156037475299710e-13, -1.6676062339849084063e-12, 1.5508855450090472865e-11, -3.1875443099216621236e-11, -1.8004990843509895829e-10, 1.4278679542018805208e-9, -1.7767172578434110993e-9, -2.8529705879411829361e-8, 1.7047811836378802919e-7, 1.5312474548508133534e-7, -6.7142326539944339280e-6, 2.3656403607075193533e-5, 2.3164079803936305191e-4, -2.6844754960605115945e-3, -8.1320995540300912699e-3, 5.5856552805542232367e-1},
};
static const double exp_f32[8] = {1.9841269841269841270e-4, 1.3888888888888888889e-3, 8.3333333333333333333e-3, 4.1666666666666666667e-2, 1.6666666666666666667e-1, 5.0000000000000000000e-1, 1.0000000000000000000, 1.0000000000000000000};
static const double exp_f64[14] = {1.6059043836821614599e-10, 2.0876756987868098979e-9, 2.5052108385441718775e-8, 2.7557319223985890653e-7, 2.7557319223985890653e-6, 2.4801587301587301587e-5, 1.9841269841269841270e-4, 1.3888888888888888889e-3, 8.3333333333333333333e-3, 4.1666666666666666667e-2, 1.6666666666666666667e-1, 5.0000000000000000000e-1, 1.0000000000000000000, 1.0000000000000000000};
static const double expm1_f32[8] = {2.7557319223985890653e-6, 2.4801587301587301587e-5, 1.9841269841269841270e-4, 1.3888888888888888889e-3, 8.3333333333333333333e-3, 4.1666666666666666667e-2, 1.6666666666666666667e-1, 5.0000000000000000000e-1};
static const double expm1_f64[14] = {7.6471637318198164759e-13, 1.1470745597729724714e-11, 1.6059043836821614599e-10, 2.0876756987868098979e-9, 2.5052108385441718775e-8, 2.7557319223985890653e-7, 2.7557319223985890653e-6, 2.4801587301587301587e-5, 1.9841269841269841270e-4, 1.3888888888888888889e-3, 8.3333333333333333333e-3, 4.1666666666666666667e-2, 1.6666666666666666667e-1, 5.0000000000000000000e-1};
static const double log_f32[5] = {1.8181818181818181818e-1, 2.2222222222222222222e-1, 2.8571428571428571429e-1, 4.0000000000000000000e-1, 6.6666666666666666667e-1};
static const double log_f64[10] = {9.5238095238095238095e-2, 1.0526315789473684211e-1, 1.1764705882352941176e-1, 1.3333333333333333333e-1, 1.5384615384615384615e-1, 1.8181818181818181818e-1, 2.2222222222222222222e-1, 2.8571428571428571429e-1, 4.0000000000000000000e-1, 6.6666666666666666667e-1};
static const double sin_f32[5] = {-2.5052108385441718775e-8, 2.7557319223985890653e-6, -1.9841269841269841270e-4, 8.3333333333333333333e-3, -1.6666666666666666667e-1};
static const double sin_f64[9] = {-8.2206352466243297170e-18, 2.8114572543455207632e-15, -7.6471637318198164759e-13, 1.6059043836821614599e-10, -2.5052108385441718775e-8, 2.7557319223985890653e-6, -1.9841269841269841270e-4, 8.3333333333333333333e-3, -1.6666666666666666667e-1};
static const double cos_f32[5] = {2.0876756987868098979e-9, -2.7557319223985890653e-7, 2.4801587301587301587e-5, -1.3888888888888888889e-3, 4.1666666666666666667e-2};
static const double cos_f64[9] = {4.1103176233121648585e-19, -1.5619206968586226462e-16, 4.7794773323873852974e-14, -1.1470745597729724714e-11, 2.0876756987868098979e-9, -2.7557319223985890653e-7, 2.4801587301587301587e-5, -1.3888888888888888889e-3, 4.1666666666666666667e-2};

#define LN2_HI_F32 0.693145751953125
#define LN2_LO_F32 1.4286068203094173e-06
#define LN2_HI_F64 0.6931471803691238
#define LN2_LO_F64 1.9082149292705877e-10
#define LOG2E      1.4426950408889634

/* rint(t) for |t| < 2^22 (f32; f64 2^51), and *ni the same integer: t + 1.5·2^23 lands
 * where the float's ulp is 1, so the add rounds t to nearest even, and the sum's bits
 * count up from those of 1.5·2^23 one per integer. Two adds and an integer subtract,
 * where rint and a conversion are each a quarter-rate instruction on the GPU (the f32
 * softmax's exp had two of them beside its ex2). The value is rint's, bit for bit. */
static LLVMValueRef rint_small(Em *e, LLVMValueRef t, LLVMValueRef *ni)
{
	LLVMValueRef m = K(e, e->f64 ? 0x1.8p52 : 0x1.8p23);
	LLVMValueRef j = add(e, t, m);
	*ni = LLVMBuildSub(e->b, bits(e, j), bits(e, m), "");
	return sub(e, j, m);
}

/* x - n*ln2 with n = rint(x*log2(e)) (|x| below 2^21, which every caller clamps to);
 * returns r, sets *n and *ni (n as an integer of e->it). */
static LLVMValueRef reduce_ln2(Em *e, LLVMValueRef x, LLVMValueRef *n, LLVMValueRef *ni)
{
	*n = rint_small(e, mul(e, x, K(e, LOG2E)), ni);
	LLVMValueRef mn = neg(e, *n);
	LLVMValueRef r = fma_(e, mn, KT(e, LN2_HI_F32, LN2_HI_F64), x);
	return fma_(e, mn, KT(e, LN2_LO_F32, LN2_LO_F64), r);
}

/* 2^x on the GPU's special function unit: PTX ex2.approx.ftz.f32, relative error
 * below 2^-22 (about 2 ulp) for the reduced arguments exp gives it. */
static LLVMValueRef ex2_approx_f32(Em *e, LLVMValueRef x)
{
	static const char name[] = "llvm.nvvm.ex2.approx.ftz.f";
	unsigned id = LLVMLookupIntrinsicID(name, sizeof name - 1);
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(e->m->mod, id, NULL, 0);
	LLVMTypeRef fty = LLVMIntrinsicGetType(e->m->ctx, id, NULL, 0);
	return LLVMBuildCall2(e->b, fty, fn, &x, 1, "");
}

/* exp(x) = 2^n · e^r with |r| <= ln2/2. e^r is the polynomial, except for f32 on the
 * GPU, where it is ex2.approx(r·log2 e): the polynomial made fused elementwise chains
 * compute-bound on the H200 (docs/benchmarks.md), the SFU instruction does not. */
static LLVMValueRef body_exp(Em *e, LLVMValueRef *a)
{
	LLVMValueRef x = a[0];
	LLVMValueRef xc = I2(e, "llvm.minnum", I2(e, "llvm.maxnum", x, KT(e, -104.0, -746.0)),
			     KT(e, 89.0, 710.0));
	LLVMValueRef n, ni;
	LLVMValueRef r = reduce_ln2(e, xc, &n, &ni);
	LLVMValueRef p = e->f64 ? horner(e, r, exp_f64, 14)
		: e->m->gpu ? ex2_approx_f32(e, mul(e, r, K(e, LOG2E))) : horner(e, r, exp_f32, 8);
	LLVMValueRef n1 = LLVMBuildAShr(e->b, ni, KI(e, 1), "");
	LLVMValueRef n2 = LLVMBuildSub(e->b, ni, n1, "");
	LLVMValueRef res = mul(e, mul(e, p, pow2i(e, n1)), pow2i(e, n2));
	return sel(e, isnan_(e, x), x, res);
}

static LLVMValueRef em_exp(Em *e, LLVMValueRef x)
{
	if (em_nv_mode(e))
		return em_nv(e, e->f64 ? "__nv_exp" : "__nv_expf", 1, &x);
	return em_helper(e, "exp", 1, &x, body_exp);
}

/* expm1(x) for x whose 2^n (n = rint(x log2 e)) is a normal number:
 * 2^n (e^r - 1) + (2^n - 1), e^r - 1 = r + r^2 q(r). */
static LLVMValueRef expm1_reduced(Em *e, LLVMValueRef x)
{
	LLVMValueRef n, ni;
	LLVMValueRef r = reduce_ln2(e, x, &n, &ni);
	LLVMValueRef q = e->f64 ? horner(e, r, expm1_f64, 14) : horner(e, r, expm1_f32, 8);
	LLVMValueRef pr = fma_(e, mul(e, r, r), q, r);
	LLVMValueRef s = pow2i(e, ni);
	return fma_(e, s, pr, sub(e, s, K(e, 1.0)));
}

/* ---- log ------------------------------------------------------------------- */

/* Split a positive finite x (denormals too) into 2^k * (1 + f), 1+f in
 * [sqrt(1/2), sqrt(2)). Returns f; *kf is k as a float. */
static LLVMValueRef log_split(Em *e, LLVMValueRef x, LLVMValueRef *kf)
{
	int mant = e->f64 ? 52 : 23, bias = e->f64 ? 1023 : 127;
	long long one = e->f64 ? 0x3ff0000000000000LL : 0x3f800000LL;
	long long sqrth = e->f64 ? 0x3fe6a09e667f3bcdLL : 0x3f3504f3LL;
	long long mmask = e->f64 ? 0x000fffffffffffffLL : 0x007fffffLL;
	LLVMValueRef den = fcmp(e, LLVMRealOLT, x, KT(e, 0x1p-126, 0x1p-1022));
	LLVMValueRef xs = sel(e, den, mul(e, x, KT(e, 0x1p24, 0x1p54)), x);
	LLVMValueRef eb = sel(e, den, KI(e, e->f64 ? -54 : -24), KI(e, 0));
	LLVMValueRef ix = LLVMBuildAdd(e->b, bits(e, xs), KI(e, one - sqrth), "");
	LLVMValueRef k = LLVMBuildSub(e->b, LLVMBuildLShr(e->b, ix, KI(e, mant), ""), KI(e, bias), "");
	k = LLVMBuildAdd(e->b, k, eb, "");
	ix = LLVMBuildAdd(e->b, LLVMBuildAnd(e->b, ix, KI(e, mmask), ""), KI(e, sqrth), "");
	*kf = LLVMBuildSIToFP(e->b, k, e->t, "");
	return sub(e, flt(e, ix), K(e, 1.0));
}

/* log(1+f) - f + f^2/2 pieces: returns R with log(1+f) = f - (hfsq - s*(hfsq + R)). */
static LLVMValueRef log_poly(Em *e, LLVMValueRef s)
{
	LLVMValueRef z = mul(e, s, s);
	LLVMValueRef p = e->f64 ? horner(e, z, log_f64, 10) : horner(e, z, log_f32, 5);
	return mul(e, z, p);
}

static LLVMValueRef body_log(Em *e, LLVMValueRef *a)
{
	LLVMValueRef x = a[0], kf;
	LLVMValueRef f = log_split(e, x, &kf);
	LLVMValueRef s = fdiv(e, f, add(e, K(e, 2.0), f));
	LLVMValueRef hfsq = mul(e, K(e, 0.5), mul(e, f, f));
	LLVMValueRef R = log_poly(e, s);
	LLVMValueRef t = fma_(e, s, add(e, hfsq, R), mul(e, kf, KT(e, LN2_LO_F32, LN2_LO_F64)));
	LLVMValueRef lf = sub(e, f, sub(e, hfsq, t));
	LLVMValueRef res = fma_(e, kf, KT(e, LN2_HI_F32, LN2_HI_F64), lf);
	res = sel(e, fcmp(e, LLVMRealOEQ, x, K(e, HUGE_VAL)), x, res);
	res = sel(e, fcmp(e, LLVMRealOEQ, x, K(e, 0.0)), K(e, -HUGE_VAL), res);
	res = sel(e, fcmp(e, LLVMRealOLT, x, K(e, 0.0)), K(e, NAN), res);
	return sel(e, isnan_(e, x), x, res);
}

static LLVMValueRef em_log(Em *e, LLVMValueRef x)
{
	if (em_nv_mode(e))
		return em_nv(e, e->f64 ? "__nv_log" : "__nv_logf", 1, &x);
	return em_helper(e, "log", 1, &x, body_log);
}

static LLVMValueRef body_log1p(Em *e, LLVMValueRef *a)
{
	LLVMValueRef x = a[0];
	LLVMValueRef u = add(e, K(e, 1.0), x);
	LLVMValueRef res = mul(e, em_log(e, u), fdiv(e, x, sub(e, u, K(e, 1.0))));
	res = sel(e, fcmp(e, LLVMRealOEQ, u, K(e, 1.0)), x, res);
	return sel(e, fcmp(e, LLVMRealOEQ, x, K(e, HUGE_VAL)), x, res);
}

/* log(a) as hi + lo, about 2^-65 relative, for a > 0 (0, inf, NaN give the
 * plain log in hi and 0 in lo). Used by pow. f64 only. */
static void log_dd(Em *e, LLVMValueRef x, LLVMValueRef *hi, LLVMValueRef *lo)
{
	LLVMValueRef kf;
	LLVMValueRef f = log_split(e, x, &kf);
	LLVMValueRef u = add(e, K(e, 2.0), f);
	LLVMValueRef ul = add(e, sub(e, K(e, 2.0), u), f);
	LLVMValueRef sh = fdiv(e, f, u);
	LLVMValueRef sl = fdiv(e, sub(e, fma_(e, neg(e, sh), u, f), mul(e, sh, ul)), u);
	LLVMValueRef z = mul(e, sh, sh);
	LLVMValueRef tail = mul(e, mul(e, sh, z), horner(e, z, log_f64, 10));
	/* two-sum of k*ln2_hi (exact) and 2*sh */
	LLVMValueRef A = mul(e, kf, K(e, LN2_HI_F64));
	LLVMValueRef B = mul(e, K(e, 2.0), sh);
	LLVMValueRef S = add(e, A, B);
	LLVMValueRef bb = sub(e, S, A);
	LLVMValueRef err = add(e, sub(e, A, sub(e, S, bb)), sub(e, B, bb));
	LLVMValueRef rest = add(e, fma_(e, kf, K(e, LN2_LO_F64), fma_(e, K(e, 2.0), sl, tail)), err);
	LLVMValueRef h = add(e, S, rest);
	LLVMValueRef l = add(e, sub(e, S, h), rest);
	LLVMValueRef plain = em_log(e, x);
	LLVMValueRef ok = LLVMBuildAnd(e->b, fcmp(e, LLVMRealOGT, x, K(e, 0.0)),
				       fcmp(e, LLVMRealOLT, x, K(e, HUGE_VAL)), "");
	*hi = sel(e, ok, h, plain);
	*lo = sel(e, ok, l, K(e, 0.0));
}

/* ---- sin, cos -------------------------------------------------------------- */

#define PIO2_1_F32 1.5707963705062866
#define PIO2_2_F32 (-4.371138828673793e-08)
#define PIO2_3_F32 (-1.7151245100058819e-15)
#define PIO2_1_F64 1.5707963267948966
#define PIO2_2_F64 6.123233995736766e-17
#define PIO2_3_F64 (-1.4973849048591698e-33)
#define TWO_OVER_PI 0.6366197723675814
/* Above this |x| the f32 reduction is done in f64 (see docs/math.md). */
#define SINCOS_F32_CW_MAX 0x1p17

/* x = k*pi/2 + r, |r| <= pi/4 (plus rounding); returns r and sets *q = k mod 4 (i32). */
static LLVMValueRef reduce_pio2(Em *e, LLVMValueRef x, LLVMValueRef *q)
{
	LLVMValueRef k = I1(e, "llvm.rint", mul(e, x, K(e, TWO_OVER_PI)));
	LLVMValueRef mk = neg(e, k);
	LLVMValueRef r = fma_(e, mk, KT(e, PIO2_1_F32, PIO2_1_F64), x);
	r = fma_(e, mk, KT(e, PIO2_2_F32, PIO2_2_F64), r);
	r = fma_(e, mk, KT(e, PIO2_3_F32, PIO2_3_F64), r);
	/* past the accurate range k is not exact and r can be anything: keep the
	 * result bounded (NaN for ±inf/NaN x is restored by the caller) */
	r = I2(e, "llvm.minnum", I2(e, "llvm.maxnum", r, K(e, -0.85)), K(e, 0.85));
	/* k mod 4, exactly, without converting a huge k to an integer */
	LLVMValueRef kq = sub(e, k, mul(e, K(e, 4.0), I1(e, "llvm.floor", mul(e, k, K(e, 0.25)))));
	kq = sel(e, fcmp(e, LLVMRealORD, kq, kq), kq, K(e, 0.0));
	*q = LLVMBuildFPToSI(e->b, kq, LLVMInt32TypeInContext(e->m->ctx), "");
	return r;
}

static LLVMValueRef sin_poly(Em *e, LLVMValueRef r)
{
	LLVMValueRef z = mul(e, r, r);
	LLVMValueRef p = e->f64 ? horner(e, z, sin_f64, 9) : horner(e, z, sin_f32, 5);
	return fma_(e, mul(e, r, z), p, r);
}

static LLVMValueRef cos_poly(Em *e, LLVMValueRef r)
{
	LLVMValueRef z = mul(e, r, r);
	LLVMValueRef p = e->f64 ? horner(e, z, cos_f64, 9) : horner(e, z, cos_f32, 5);
	LLVMValueRef hz = mul(e, K(e, 0.5), z);
	LLVMValueRef w = sub(e, K(e, 1.0), hz);
	LLVMValueRef c = sub(e, sub(e, K(e, 1.0), w), hz);
	return add(e, w, fma_(e, mul(e, z, z), p, c));
}

/* sin (cos = false) or cos of x after reduction: picks the quadrant. */
static LLVMValueRef sincos_finish(Em *e, LLVMValueRef r, LLVMValueRef q, bool cos)
{
	LLVMTypeRef i32 = LLVMInt32TypeInContext(e->m->ctx);
	if (cos)
		q = LLVMBuildAdd(e->b, q, LLVMConstInt(i32, 1, false), "");
	LLVMValueRef s = sin_poly(e, r), c = cos_poly(e, r);
	LLVMValueRef odd = LLVMBuildICmp(e->b, LLVMIntNE, LLVMBuildAnd(e->b, q, LLVMConstInt(i32, 1, false), ""),
					 LLVMConstInt(i32, 0, false), "");
	LLVMValueRef ng = LLVMBuildICmp(e->b, LLVMIntNE, LLVMBuildAnd(e->b, q, LLVMConstInt(i32, 2, false), ""),
					LLVMConstInt(i32, 0, false), "");
	LLVMValueRef v = sel(e, odd, c, s);
	return sel(e, ng, neg(e, v), v);
}

static LLVMValueRef sincos_body(Em *e, LLVMValueRef x, bool cos)
{
	LLVMValueRef q;
	if (e->f64) {
		LLVMValueRef r = reduce_pio2(e, x, &q);
		return sincos_finish(e, r, q, cos);
	}
	/* f32: Cody-Waite in f32 for |x| < 2^17, in f64 above (a branch, so the
	 * f64 work is only paid by the large arguments). */
	LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(e->b));
	LLVMBasicBlockRef bsmall = LLVMAppendBasicBlockInContext(e->m->ctx, fn, "small");
	LLVMBasicBlockRef bbig = LLVMAppendBasicBlockInContext(e->m->ctx, fn, "big");
	LLVMBasicBlockRef bjoin = LLVMAppendBasicBlockInContext(e->m->ctx, fn, "join");
	LLVMValueRef small = fcmp(e, LLVMRealOLT, fabs_(e, x), K(e, SINCOS_F32_CW_MAX));
	LLVMBuildCondBr(e->b, small, bsmall, bbig);

	LLVMPositionBuilderAtEnd(e->b, bsmall);
	LLVMValueRef r1 = reduce_pio2(e, x, &q);
	LLVMValueRef q1 = q;
	LLVMBuildBr(e->b, bjoin);

	LLVMPositionBuilderAtEnd(e->b, bbig);
	Em w = *e;
	w.t = LLVMDoubleTypeInContext(e->m->ctx);
	w.it = LLVMInt64TypeInContext(e->m->ctx);
	w.f64 = true;
	LLVMValueRef xd = LLVMBuildFPExt(e->b, x, w.t, "");
	LLVMValueRef rd = reduce_pio2(&w, xd, &q);
	LLVMValueRef r2 = LLVMBuildFPTrunc(e->b, rd, e->t, "");
	LLVMValueRef q2 = q;
	LLVMBuildBr(e->b, bjoin);

	LLVMPositionBuilderAtEnd(e->b, bjoin);
	LLVMValueRef r = LLVMBuildPhi(e->b, e->t, "r");
	LLVMValueRef rv[2] = {r1, r2};
	LLVMBasicBlockRef rb[2] = {bsmall, bbig};
	LLVMAddIncoming(r, rv, rb, 2);
	LLVMValueRef qp = LLVMBuildPhi(e->b, LLVMInt32TypeInContext(e->m->ctx), "q");
	LLVMValueRef qv[2] = {q1, q2};
	LLVMAddIncoming(qp, qv, rb, 2);
	return sincos_finish(e, r, qp, cos);
}

/* sin(±0) = ±0: the reduction's fma(-k, C, x) turns -0 into +0. */
static LLVMValueRef body_sin(Em *e, LLVMValueRef *a)
{
	LLVMValueRef r = sincos_body(e, a[0], false);
	r = sel(e, fcmp(e, LLVMRealOEQ, a[0], K(e, 0.0)), a[0], r);
	return sel(e, fcmp(e, LLVMRealUEQ, fabs_(e, a[0]), K(e, HUGE_VAL)), K(e, NAN), r);
}

static LLVMValueRef body_cos(Em *e, LLVMValueRef *a)
{
	LLVMValueRef r = sincos_body(e, a[0], true);
	return sel(e, fcmp(e, LLVMRealUEQ, fabs_(e, a[0]), K(e, HUGE_VAL)), K(e, NAN), r);
}


/* ---- tanh, erf, erfc -------------------------------------------------------- */

/* tanh|x| = u / (u + 2) with u = expm1(2|x|), one expm1 and one division for every
 * x: 2|x| is clamped to 20 (f32; 40 for f64), where the quotient already rounds to 1,
 * so expm1's reduction 2^n (e^r - 1) + (2^n - 1) needs no overflow path. The quotient
 * damps u's relative error (its derivative is 2 / (u + 2) < 1). Half the instructions
 * of an expm1 and an exp with a division each (docs/benchmarks.md, G11). */
static LLVMValueRef body_tanh(Em *e, LLVMValueRef *a)
{
	LLVMValueRef x = a[0];
	LLVMValueRef y = I2(e, "llvm.minnum", mul(e, K(e, 2.0), fabs_(e, x)),
			    KT(e, 20.0, 40.0));
	LLVMValueRef u = expm1_reduced(e, y);
	LLVMValueRef res = fdiv(e, u, add(e, u, K(e, 2.0)));
	return sel(e, isnan_(e, x), x, I2(e, "llvm.copysign", res, x));
}

/* erf(x) = x*P(x^2) for |x| < 1, as x + x*(P - 1) to keep the leading 1 exact. */
static LLVMValueRef erf_small(Em *e, LLVMValueRef x)
{
	LLVMValueRef z = mul(e, x, x);
	const double *c = e->f64 ? erf_small_f64 : erf_small_f32;
	int n = e->f64 ? 13 : 7;
	LLVMValueRef p = K(e, c[0]);
	for (int i = 1; i < n; i++)
		p = fma_(e, p, z, K(e, i == n - 1 ? c[i] - 1.0 : c[i]));
	return fma_(e, x, p, x);
}

/* erfc(a) for a >= 0.5 given a^2 = zh + zl (exactly or nearly): exp(-a^2)/a * Q(1/a),
 * Q fitted on intervals of a. 0 above the underflow point. */
static LLVMValueRef erfc_core(Em *e, LLVMValueRef a, LLVMValueRef zh, LLVMValueRef zl)
{
	double amax = e->f64 ? 27.3 : 10.1;
	LLVMValueRef ac = I2(e, "llvm.minnum", I2(e, "llvm.maxnum", a, K(e, 0.5)), K(e, amax));
	LLVMValueRef w = fdiv(e, K(e, 1.0), ac);
	int niv = e->f64 ? 4 : 3, ncoef = e->f64 ? 22 : 12;
	const double *tab = e->f64 ? &erfc_f64[0][0] : &erfc_f32[0][0];
	static const double edge[] = {1.0, 2.0, 4.0};
	LLVMValueRef in[3];
	for (int i = 0; i < niv - 1; i++)
		in[i] = fcmp(e, LLVMRealOGE, ac, K(e, edge[i]));
	LLVMValueRef c[22];
	for (int j = 0; j < ncoef; j++) {
		LLVMValueRef v = K(e, tab[j]);
		for (int i = 1; i < niv; i++)
			v = sel(e, in[i - 1], K(e, tab[i * ncoef + j]), v);
		c[j] = v;
	}
	/* t = (w - mid) / half */
	LLVMValueRef t = fdiv(e, sub(e, w, c[0]), c[1]);
	LLVMValueRef p = c[2];
	for (int j = 3; j < ncoef; j++)
		p = fma_(e, p, t, c[j]);
	LLVMValueRef ex = em_exp(e, neg(e, zh));
	ex = fma_(e, ex, neg(e, zl), ex);
	LLVMValueRef res = mul(e, mul(e, ex, w), p);
	return sel(e, fcmp(e, LLVMRealOGT, a, K(e, amax)), K(e, 0.0), res);
}

/* a*a as hi + lo. */
static void sq2(Em *e, LLVMValueRef a, LLVMValueRef *hi, LLVMValueRef *lo)
{
	*hi = mul(e, a, a);
	*lo = fma_(e, a, a, neg(e, *hi));
}

static LLVMValueRef erfc_t_pos(Em *e, LLVMValueRef a, LLVMValueRef zh, LLVMValueRef zl);

static LLVMValueRef body_erf(Em *e, LLVMValueRef *a)
{
	LLVMValueRef x = a[0];
	if (em_nv_mode(e))
		return em_nv(e, e->f64 ? "__nv_erf" : "__nv_erff", 1, &x);
	LLVMValueRef ax = fabs_(e, x), zh, zl;
	sq2(e, ax, &zh, &zl);
	/* f32: |x| >= 1 through the one-piece erfc (below): erfc(1) < 0.16, so its few
	 * ulps are a fraction of an ulp of 1 - erfc; a third of erfc_core's work, which
	 * made matmul + bias + erf-GELU epilogues (BERT's) compute-bound */
	LLVMValueRef tail = e->f64 ? erfc_core(e, ax, zh, zl) : erfc_t_pos(e, ax, zh, zl);
	LLVMValueRef big = I2(e, "llvm.copysign", sub(e, K(e, 1.0), tail), x);
	LLVMValueRef res = sel(e, fcmp(e, LLVMRealOLT, ax, K(e, 1.0)), erf_small(e, x), big);
	return sel(e, isnan_(e, x), x, res);
}

/* erfc(z) for any z, with z^2 = zh + zl supplied by the caller. */
static LLVMValueRef erfc_any(Em *e, LLVMValueRef z, LLVMValueRef zh, LLVMValueRef zl)
{
	if (em_nv_mode(e))
		return em_nv(e, e->f64 ? "__nv_erfc" : "__nv_erfcf", 1, &z);
	LLVMValueRef az = fabs_(e, z);
	LLVMValueRef core = erfc_core(e, az, zh, zl);
	LLVMValueRef tail = sel(e, fcmp(e, LLVMRealOLT, z, K(e, 0.0)), sub(e, K(e, 2.0), core), core);
	LLVMValueRef mid = sub(e, K(e, 1.0), erf_small(e, z));
	LLVMValueRef res = sel(e, fcmp(e, LLVMRealOLT, az, K(e, 0.5)), mid, tail);
	return sel(e, isnan_(e, z), z, res);
}

/* f32 erfc(z) for any z with z^2 = zh + zl, in one piece (no interval selects, no
 * division by an interval's half width): with a = |z|, r = 1/(a + 2) and t = 1 - 4r
 * (= (a - 2)/(a + 2)), erfc(a) = exp(-a^2) · g(t) · r, g the degree-12 polynomial
 * erfc_t_f32; erfc(z) = 2 - erfc(a) for z < 0, and 1 - erf(z) for |z| < 0.5, as
 * erfc_any. One reciprocal, 12 + 7 fmas and an exp:
 * about a third of erfc_any's instructions, which made matmul + bias + gelu
 * epilogues compute-bound (docs/benchmarks.md, G7). exp(-a^2) underflows to 0 past
 * a ~ 10.1 by itself, and a = inf gives r = 0. */
/* A PTX instruction of one f32 operand through its NVVM intrinsic. */
static LLVMValueRef nvvm_f32(Em *e, const char *name, LLVMValueRef x)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(e->m->mod, id, NULL, 0);
	LLVMTypeRef fty = LLVMIntrinsicGetType(e->m->ctx, id, NULL, 0);
	return LLVMBuildCall2(e->b, fty, fn, &x, 1, "");
}

/* erfc(a) for a >= 0.5 (a = |z|, a^2 = zh + zl): the one-piece fit below. */
static LLVMValueRef erfc_t_pos(Em *e, LLVMValueRef a, LLVMValueRef zh, LLVMValueRef zl)
{
	LLVMValueRef ex, r, cut;
	if (e->m->gpu) {
		/* GPU: rcp.approx (1 ulp: the product below errs by one more) and
		 * exp(-zh) for zh in [0, 87] with one scaling (n >= -126: a normal
		 * 2^n); past a = 9.3 (zh > 86.5) erfc(a) < 2^-126, which the GPU's
		 * ftz exp flushes anyway: 0 there */
		r = nvvm_f32(e, "llvm.nvvm.rcp.approx.ftz.f", add(e, a, K(e, 2.0)));
		LLVMValueRef x = I2(e, "llvm.minnum", zh, K(e, 87.0));
		LLVMValueRef ni;
		LLVMValueRef n = rint_small(e, mul(e, x, K(e, -LOG2E)), &ni);
		LLVMValueRef rr = fma_(e, n, K(e, -LN2_HI_F32), neg(e, x));
		rr = fma_(e, n, K(e, -LN2_LO_F32), rr);
		LLVMValueRef p = ex2_approx_f32(e, mul(e, rr, K(e, LOG2E)));
		ex = mul(e, p, pow2i(e, ni));
		cut = K(e, 9.3);
	} else {
		r = fdiv(e, K(e, 1.0), add(e, a, K(e, 2.0)));
		ex = em_exp(e, neg(e, zh));
		cut = K(e, 10.1);
	}
	LLVMValueRef t = fma_(e, K(e, -4.0), r, K(e, 1.0));
	LLVMValueRef g = horner(e, t, erfc_t_f32, 13);
	ex = fma_(e, ex, neg(e, zl), ex);
	LLVMValueRef c = mul(e, mul(e, g, r), ex);
	/* past the underflow point (and a = inf, where zl is NaN) erfc(a) is 0 */
	return sel(e, fcmp(e, LLVMRealOGT, a, cut), K(e, 0.0), c);
}

static LLVMValueRef erfc_t(Em *e, LLVMValueRef z, LLVMValueRef zh, LLVMValueRef zl)
{
	LLVMValueRef a = fabs_(e, z);
	LLVMValueRef c = erfc_t_pos(e, a, zh, zl);
	LLVMValueRef tail = sel(e, fcmp(e, LLVMRealOLT, z, K(e, 0.0)), sub(e, K(e, 2.0), c), c);
	/* |z| < 0.5: 1 - erf(z), whose error is a small part of a result near 1 (the
	 * product above errs by a few ulps of it there) */
	LLVMValueRef mid = sub(e, K(e, 1.0), erf_small(e, z));
	LLVMValueRef res = sel(e, fcmp(e, LLVMRealOLT, a, K(e, 0.5)), mid, tail);
	return sel(e, isnan_(e, z), z, res);
}

/* ---- activations ----------------------------------------------------------- */

/* 1/(1+exp(-v)), as e/(1+e) with e = exp(v) for v < 0 so tiny results stay exact-ish. */
static LLVMValueRef sigmoid_core(Em *e, LLVMValueRef v)
{
	LLVMValueRef ex = em_exp(e, neg(e, fabs_(e, v)));
	LLVMValueRef r = fdiv(e, K(e, 1.0), add(e, K(e, 1.0), ex));
	return sel(e, fcmp(e, LLVMRealOLT, v, K(e, 0.0)), mul(e, ex, r), r);
}

static LLVMValueRef body_sigmoid(Em *e, LLVMValueRef *a)
{
	return sigmoid_core(e, a[0]);
}

static LLVMValueRef body_silu(Em *e, LLVMValueRef *a)
{
	return mul(e, a[0], sigmoid_core(e, a[0]));
}

#define FRAC_1_SQRT2 0.7071067811865476
#define SQRT_2_OVER_PI 0.7978845608028654

/* The tanh GELU as x * sigmoid(2u): 0.5x(1 + tanh(u)) with u = sqrt(2/pi)(x +
 * 0.044715x^3); this is 2u, computed as 2 sqrt(2/pi) x (0.044715x * x + 1). */
static LLVMValueRef gelu_tanh_2u(Em *e, LLVMValueRef x)
{
	LLVMValueRef inner = fma_(e, mul(e, K(e, 0.044715), x), x, K(e, 1.0));
	return mul(e, mul(e, K(e, 2.0 * SQRT_2_OVER_PI), x), inner);
}

static LLVMValueRef body_gelu(Em *e, LLVMValueRef *a)
{
	LLVMValueRef x = a[0];
	if (e->approx == GELU_TANH)
		return mul(e, x, sigmoid_core(e, gelu_tanh_2u(e, x)));
	/* x * Phi(x) = 0.5 x erfc(-x/sqrt2); (x/sqrt2)^2 = x^2/2 from the exact x^2 */
	LLVMValueRef z = mul(e, x, K(e, -FRAC_1_SQRT2)), zh, zl;
	sq2(e, x, &zh, &zl);
	zh = mul(e, zh, K(e, 0.5));
	zl = mul(e, zl, K(e, 0.5));
	if (!e->f64 && !em_nv_mode(e))
		return mul(e, mul(e, K(e, 0.5), x), erfc_t(e, z, zh, zl));
	return mul(e, mul(e, K(e, 0.5), x), erfc_any(e, z, zh, zl));
}

/* gelu (erf form) of an f32 x whose result is rounded to f16 or bf16 where it is
 * made: 0.5 x erfc(z), z = -x/sqrt2, in one piece with no interval selects. With a
 * = |z| and r = 1/(a + 2), erfc(a) = exp(-a^2) g(u) r, g a degree-6 polynomial in
 * u = 1.17647 (1 - 4r) + 0.17647, which maps t = (a - 2)/(a + 2) in [-1, 0.7] (a up
 * to 11.3, past which exp(-a^2) is 0 in f32) onto [-1, 1] (Chebyshev interpolant,
 * docs/math.md); erfc(z) = 2 - erfc(a) for z < 0. exp(-a^2) is one ex2.approx of
 * -a^2 log2 e on the GPU, whose rounded argument dominates the error: at most
 * 2^-15.4 relative (x < -9, results below 1e-18), 2^-16.5 for x in [-9, -4], 2^-18.6
 * in [-4, 0] and 2^-20.8 above, a hundredth of a bf16 ulp or less (host/bounds.c
 * counts 256 ulps of f32). 20 instructions where the f32 form takes about 58: an
 * f16/bf16 matmul's GELU epilogue is bound by them. The host computes the same with
 * the portable exp and a division. */
static const double gelu_half_g[7] = {1.0922334981603601e-3, 1.4350121634336688e-3,
	-1.3061529992384382e-2, -1.3645088825550948e-2, 0.2115137449806422,
	-0.6571896903363265, 1.1310565771963874};

static LLVMValueRef body_gelu_half(Em *e, LLVMValueRef *args)
{
	LLVMValueRef x = args[0];
	LLVMValueRef z = mul(e, x, K(e, -FRAC_1_SQRT2)), a = fabs_(e, z), z2 = mul(e, z, z);
	LLVMValueRef r, ex;
	if (e->m->gpu) {
		r = nvvm_f32(e, "llvm.nvvm.rcp.approx.ftz.f", add(e, a, K(e, 2.0)));
		ex = nvvm_f32(e, "llvm.nvvm.ex2.approx.f", mul(e, z2, K(e, -LOG2E)));
	} else {
		r = fdiv(e, K(e, 1.0), add(e, a, K(e, 2.0)));
		ex = em_exp(e, neg(e, z2));
	}
	const double al = 2 / 1.7, be = -(0.7 - 1) / 1.7;
	LLVMValueRef u = fma_(e, K(e, -4 * al), r, K(e, al + be));
	LLVMValueRef c = mul(e, mul(e, horner(e, u, gelu_half_g, 7), r), ex);
	LLVMValueRef ec = sel(e, fcmp(e, LLVMRealOLT, z, K(e, 0.0)), sub(e, K(e, 2.0), c), c);
	return mul(e, mul(e, K(e, 0.5), x), ec);
}

/* The sigmoid family of an f32 value whose result is rounded to f16 or bf16 where it
 * is made: with e = 2^(-|v| log2 e) in (0, 1] and r = 1/(1 + e), sigmoid(v) is r for
 * v >= 0 and e r below (so tiny results stay exact-ish, as sigmoid_core's); on the
 * GPU one ex2.approx and one rcp.approx, about 8 instructions where the f32 form's
 * exact exp and division take about 30 (an f16/bf16 matmul's SiLU or tanh-GELU
 * epilogue is bound by them); on the host the portable exp and a division. The
 * rounded argument of the exp costs about |v| ulps of f32, the approximations 3
 * more (host/bounds.c); a bf16 ulp is 65536 of them. */
static LLVMValueRef sigmoid_half(Em *e, LLVMValueRef v)
{
	LLVMValueRef ex, r, one = K(e, 1.0);
	if (e->m->gpu) {
		ex = nvvm_f32(e, "llvm.nvvm.ex2.approx.f", mul(e, fabs_(e, v), K(e, -LOG2E)));
		r = nvvm_f32(e, "llvm.nvvm.rcp.approx.ftz.f", add(e, one, ex));
	} else {
		ex = em_exp(e, neg(e, fabs_(e, v)));
		r = fdiv(e, one, add(e, one, ex));
	}
	return sel(e, fcmp(e, LLVMRealOLT, v, K(e, 0.0)), mul(e, ex, r), r);
}

static LLVMValueRef body_act_half(Em *e, LLVMValueRef *a)
{
	LLVMValueRef x = a[0];
	switch (e->op) {
	case OP_SIGMOID:
		return sigmoid_half(e, x);
	case OP_SILU:
		return mul(e, x, sigmoid_half(e, x));
	default:   /* gelu, tanh form */
		return mul(e, x, sigmoid_half(e, gelu_tanh_2u(e, x)));
	}
}

/* ---- pow, rem -------------------------------------------------------------- */

/* pow in f64 with C99 Annex F specials; f32 pow runs this on extended operands. */
static LLVMValueRef pow_f64(Em *e, LLVMValueRef x, LLVMValueRef y)
{
	LLVMValueRef ax = fabs_(e, x), lh, ll;
	log_dd(e, ax, &lh, &ll);
	LLVMValueRef ph = mul(e, y, lh);
	LLVMValueRef pl = fma_(e, y, lh, neg(e, ph));
	pl = fma_(e, y, ll, pl);
	LLVMValueRef fin = fcmp(e, LLVMRealOLT, fabs_(e, ph), K(e, HUGE_VAL));
	pl = sel(e, fin, pl, K(e, 0.0));
	LLVMValueRef E = em_exp(e, ph);
	LLVMValueRef r = sel(e, isinf_(e, E), E, fma_(e, E, pl, E));
	r = sel(e, fcmp(e, LLVMRealOEQ, E, K(e, 0.0)), E, r);
	LLVMValueRef yint = fcmp(e, LLVMRealOEQ, I1(e, "llvm.floor", y), y);
	LLVMValueRef hy = mul(e, y, K(e, 0.5));
	LLVMValueRef yodd = LLVMBuildAnd(e->b, yint, fcmp(e, LLVMRealONE, I1(e, "llvm.floor", hy), hy), "");
	LLVMValueRef xneg = LLVMBuildICmp(e->b, LLVMIntSLT, bits(e, x), KI(e, 0), "");
	r = sel(e, LLVMBuildAnd(e->b, xneg, yodd, ""), neg(e, r), r);
	LLVMValueRef xnegfin = LLVMBuildAnd(e->b, fcmp(e, LLVMRealOLT, x, K(e, 0.0)),
					    fcmp(e, LLVMRealOGT, x, K(e, -HUGE_VAL)), "");
	r = sel(e, LLVMBuildAnd(e->b, xnegfin, LLVMBuildNot(e->b, yint, ""), ""), K(e, NAN), r);
	r = sel(e, LLVMBuildAnd(e->b, fcmp(e, LLVMRealOEQ, ax, K(e, 1.0)), isinf_(e, y), ""), K(e, 1.0), r);
	LLVMValueRef one = LLVMBuildOr(e->b, fcmp(e, LLVMRealOEQ, y, K(e, 0.0)),
				       fcmp(e, LLVMRealOEQ, x, K(e, 1.0)), "");
	return sel(e, one, K(e, 1.0), r);
}

static LLVMValueRef pow_any(Em *e, LLVMValueRef *a)
{
	if (em_nv_mode(e))
		return em_nv(e, e->f64 ? "__nv_pow" : "__nv_powf", 2, a);
	if (e->f64)
		return pow_f64(e, a[0], a[1]);
	Em w = *e;
	w.t = LLVMDoubleTypeInContext(e->m->ctx);
	w.it = LLVMInt64TypeInContext(e->m->ctx);
	w.f64 = true;
	LLVMValueRef xd = LLVMBuildFPExt(e->b, a[0], w.t, "");
	LLVMValueRef yd = LLVMBuildFPExt(e->b, a[1], w.t, "");
	return LLVMBuildFPTrunc(e->b, pow_f64(&w, xd, yd), e->t, "");
}

/* x^y. The exponents models use most, 2 (variance) and 3 (GELU's tanh form), are
 * products: x*x rounds once, as pow does, and (x*x)*x twice, within one ulp, inside
 * pow's bound (docs/math.md); the specials agree with pow's (NaN, infinities, -0).
 * When y is a scalar the branch is uniform, and it spares every element the f64
 * log and exp of the general path. */
static LLVMValueRef body_pow(Em *e, LLVMValueRef *a)
{
	LLVMContextRef c = e->m->ctx;
	LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(e->b));
	LLVMBasicBlockRef small = LLVMAppendBasicBlockInContext(c, fn, "pow.small");
	LLVMBasicBlockRef any = LLVMAppendBasicBlockInContext(c, fn, "pow.any");
	LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(c, fn, "pow.join");
	LLVMValueRef two = fcmp(e, LLVMRealOEQ, a[1], K(e, 2.0));
	LLVMValueRef three = fcmp(e, LLVMRealOEQ, a[1], K(e, 3.0));
	LLVMBuildCondBr(e->b, LLVMBuildOr(e->b, two, three, ""), small, any);

	LLVMPositionBuilderAtEnd(e->b, small);
	LLVMValueRef xx = mul(e, a[0], a[0]);
	LLVMValueRef rs = sel(e, two, xx, mul(e, xx, a[0]));
	LLVMBuildBr(e->b, join);

	LLVMPositionBuilderAtEnd(e->b, any);
	LLVMValueRef ra = pow_any(e, a);
	LLVMBasicBlockRef any_end = LLVMGetInsertBlock(e->b);
	LLVMBuildBr(e->b, join);

	LLVMPositionBuilderAtEnd(e->b, join);
	LLVMValueRef r = LLVMBuildPhi(e->b, e->t, "");
	LLVMValueRef vals[2] = {rs, ra};
	LLVMBasicBlockRef from[2] = {small, any_end};
	LLVMAddIncoming(r, vals, from, 2);
	return r;
}

/* x - y*floor(x/y), with the sign of y (torch.remainder); rem(x, ±inf) keeps
 * x when the signs agree, else gives y, as fmod-then-fix-up would. */
static LLVMValueRef body_rem(Em *e, LLVMValueRef *a)
{
	LLVMValueRef x = a[0], y = a[1];
	LLVMValueRef q = I1(e, "llvm.floor", fdiv(e, x, y));
	LLVMValueRef r = fma_(e, neg(e, q), y, x);
	LLVMValueRef yinf = LLVMBuildAnd(e->b, isinf_(e, y), fcmp(e, LLVMRealOLT, fabs_(e, x), K(e, HUGE_VAL)), "");
	r = sel(e, yinf, x, r);
	LLVMValueRef rneg = fcmp(e, LLVMRealOLT, r, K(e, 0.0));
	LLVMValueRef yneg = fcmp(e, LLVMRealOLT, y, K(e, 0.0));
	LLVMValueRef fix = LLVMBuildAnd(e->b, fcmp(e, LLVMRealONE, r, K(e, 0.0)),
					LLVMBuildICmp(e->b, LLVMIntNE, rneg, yneg, ""), "");
	r = sel(e, fix, add(e, r, y), r);
	/* rounding can leave |r| == |y|: fold it back to zero */
	LLVMValueRef full = fcmp(e, LLVMRealOEQ, fabs_(e, r), fabs_(e, y));
	r = sel(e, LLVMBuildAnd(e->b, full, LLVMBuildNot(e->b, isinf_(e, y), ""), ""), K(e, 0.0), r);
	return sel(e, fcmp(e, LLVMRealOEQ, r, K(e, 0.0)), I2(e, "llvm.copysign", K(e, 0.0), y), r);
}

/* ---- the small ones (always inline) ----------------------------------------- */

static LLVMValueRef body_log1p_entry(Em *e, LLVMValueRef *a)
{
	if (em_nv_mode(e))
		return em_nv(e, e->f64 ? "__nv_log1p" : "__nv_log1pf", 1, a);
	return body_log1p(e, a);
}

static LLVMValueRef body_exp_entry(Em *e, LLVMValueRef *a) { return em_exp(e, a[0]); }
static LLVMValueRef body_log_entry(Em *e, LLVMValueRef *a) { return em_log(e, a[0]); }

static LLVMValueRef body_sin_entry(Em *e, LLVMValueRef *a)
{
	if (em_nv_mode(e))
		return em_nv(e, e->f64 ? "__nv_sin" : "__nv_sinf", 1, a);
	return body_sin(e, a);
}

static LLVMValueRef body_cos_entry(Em *e, LLVMValueRef *a)
{
	if (em_nv_mode(e))
		return em_nv(e, e->f64 ? "__nv_cos" : "__nv_cosf", 1, a);
	return body_cos(e, a);
}

static LLVMValueRef body_tanh_entry(Em *e, LLVMValueRef *a)
{
	if (em_nv_mode(e))
		return em_nv(e, e->f64 ? "__nv_tanh" : "__nv_tanhf", 1, a);
	return body_tanh(e, a);
}

static LLVMValueRef body_sqrt(Em *e, LLVMValueRef *a) { return I1(e, "llvm.sqrt", a[0]); }
static LLVMValueRef body_recip(Em *e, LLVMValueRef *a) { return fdiv(e, K(e, 1.0), a[0]); }
static LLVMValueRef body_floor(Em *e, LLVMValueRef *a) { return I1(e, "llvm.floor", a[0]); }
static LLVMValueRef body_ceil(Em *e, LLVMValueRef *a) { return I1(e, "llvm.ceil", a[0]); }
static LLVMValueRef body_round(Em *e, LLVMValueRef *a) { return I1(e, "llvm.rint", a[0]); }
static LLVMValueRef body_trunc(Em *e, LLVMValueRef *a) { return I1(e, "llvm.trunc", a[0]); }
static LLVMValueRef body_abs(Em *e, LLVMValueRef *a) { return fabs_(e, a[0]); }
static LLVMValueRef body_neg(Em *e, LLVMValueRef *a) { return neg(e, a[0]); }

static LLVMValueRef body_relu(Em *e, LLVMValueRef *a)
{
	return sel(e, fcmp(e, LLVMRealOLT, a[0], K(e, 0.0)), K(e, 0.0), a[0]);
}

/* 1, -1, or x itself for ±0 and NaN. */
static LLVMValueRef body_sign(Em *e, LLVMValueRef *a)
{
	LLVMValueRef x = a[0];
	LLVMValueRef r = sel(e, fcmp(e, LLVMRealOGT, x, K(e, 0.0)), K(e, 1.0), x);
	return sel(e, fcmp(e, LLVMRealOLT, x, K(e, 0.0)), K(e, -1.0), r);
}

static LLVMValueRef body_is_nan(Em *e, LLVMValueRef *a) { return isnan_(e, a[0]); }
static LLVMValueRef body_is_inf(Em *e, LLVMValueRef *a) { return isinf_(e, a[0]); }

/* ---- the table --------------------------------------------------------------- */

typedef struct {
	const char *name;     /* helper name; NULL: emitted inline */
	int arity;            /* 1 or 2; 0: not a math op */
	MathBody body;        /* portable lowering (checks libdevice mode itself) */
	bool to_i1;           /* result is i1, not the float type */
} MathEntry;

static const MathEntry math_table[OP_COUNT] = {
	[OP_EXP]        = {NULL,      1, body_exp_entry, false},
	[OP_LOG]        = {NULL,      1, body_log_entry, false},
	[OP_LOG1P]      = {"log1p",   1, body_log1p_entry, false},
	[OP_SQRT]       = {NULL,      1, body_sqrt, false},
	[OP_RECIP]      = {NULL,      1, body_recip, false},
	[OP_SIN]        = {"sin",     1, body_sin_entry, false},
	[OP_COS]        = {"cos",     1, body_cos_entry, false},
	[OP_TANH]       = {"tanh",    1, body_tanh_entry, false},
	[OP_ERF]        = {"erf",     1, body_erf, false},
	[OP_FLOOR]      = {NULL,      1, body_floor, false},
	[OP_CEIL]       = {NULL,      1, body_ceil, false},
	[OP_ROUND]      = {NULL,      1, body_round, false},
	[OP_TRUNC]      = {NULL,      1, body_trunc, false},
	[OP_ABS]        = {NULL,      1, body_abs, false},
	[OP_NEG]        = {NULL,      1, body_neg, false},
	[OP_SIGN]       = {NULL,      1, body_sign, false},
	[OP_RELU]       = {NULL,      1, body_relu, false},
	[OP_IS_NAN]     = {NULL,      1, body_is_nan, true},
	[OP_IS_INF]     = {NULL,      1, body_is_inf, true},
	[OP_SIGMOID]    = {"sigmoid", 1, body_sigmoid, false},
	[OP_SILU]       = {"silu",    1, body_silu, false},
	[OP_GELU]       = {"gelu",    1, body_gelu, false},
	[OP_POW]        = {"pow",     2, body_pow, false},
	[OP_POWF]       = {"pow",     2, body_pow, false},
	[OP_POW_SCALAR] = {"pow",     2, body_pow, false},
	[OP_REM]        = {"rem",     2, body_rem, false},
	[OP_REM_SCALAR] = {"rem",     2, body_rem, false},
};

bool cg_math_supports(OpKind op)
{
	return (unsigned)op < OP_COUNT && math_table[op].arity > 0;
}

static Em em_for(CgMath *m, LLVMValueRef x, GeluApprox approx)
{
	Em e = {.m = m, .b = m->b, .t = LLVMTypeOf(x), .approx = approx};
	LLVMTypeKind k = LLVMGetTypeKind(e.t);
	if (k == LLVMDoubleTypeKind)
		e.f64 = true;
	else if (k != LLVMFloatTypeKind)
		die("cg_math: operand must be float or double");
	e.it = e.f64 ? LLVMInt64TypeInContext(m->ctx) : LLVMInt32TypeInContext(m->ctx);
	return e;
}

static LLVMValueRef math_emit(CgMath *m, OpKind op, int arity, LLVMValueRef *args, GeluApprox approx)
{
	if (!cg_math_supports(op) || math_table[op].arity != arity)
		die("cg_math: op %d is not a %s math op", (int)op, arity == 1 ? "unary" : "binary");
	const MathEntry *me = &math_table[op];
	Em e = em_for(m, args[0], approx);
	if (arity == 2 && LLVMTypeOf(args[1]) != e.t)
		die("cg_math: operands of op %d differ in type", (int)op);
	if (!me->name)
		return me->body(&e, args);
	char name[32];
	snprintf(name, sizeof name, "%s%s", me->name, op == OP_GELU && approx == GELU_TANH ? ".tanh" : "");
	return em_helper(&e, name, arity, args, me->body);
}

LLVMValueRef cg_math_unary(CgMath *m, OpKind op, LLVMValueRef x, GeluApprox approx)
{
	return math_emit(m, op, 1, &x, approx);
}

/* exp of an f32 value whose result is stored as f16 or bf16: on the GPU one
 * ex2.approx (without ftz: subnormal results stay, as bf16 keeps them) of x·log2 e.
 * Its error, 2 ulps of ex2 and 2|x| ulps from rounding x·log2 e and log2 e, is
 * within 210 ulps of f32 for the x whose exp a half type holds, a 300th of a bf16
 * ulp (host/bounds.c counts it). The host and libdevice mode keep the full exp. */
LLVMValueRef cg_math_exp_half(CgMath *m, LLVMValueRef x)
{
	if (!m->gpu || m->libdevice || LLVMTypeOf(x) != LLVMFloatTypeInContext(m->ctx))
		return math_emit(m, OP_EXP, 1, &x, GELU_NONE);
	Em e = em_for(m, x, GELU_NONE);
	return nvvm_f32(&e, "llvm.nvvm.ex2.approx.f", mul(&e, x, K(&e, LOG2E)));
}

/* exp(a - b), a and b f32, the result rounded to a half type or tf32 where it is
 * used: on the GPU ex2.approx (no ftz) of fma(a, log2 e, -(b·log2 e)), the
 * subtraction folded into the fma; its error, 2 ulps of ex2 and about 2(|a| + |b|)
 * ulps of the roundings, is docs/math.md's. The host and libdevice mode keep the
 * full exp of a - b. */
LLVMValueRef cg_math_exp_diff_half(CgMath *m, LLVMValueRef a, LLVMValueRef b)
{
	if (!m->gpu || m->libdevice || LLVMTypeOf(a) != LLVMFloatTypeInContext(m->ctx))
		return cg_math_unary(m, OP_EXP, LLVMBuildFSub(m->b, a, b, ""), GELU_NONE);
	Em e = em_for(m, a, GELU_NONE);
	LLVMValueRef l2e = K(&e, LOG2E);
	return nvvm_f32(&e, "llvm.nvvm.ex2.approx.f", fma_(&e, a, l2e, neg(&e, mul(&e, b, l2e))));
}

/* gelu (erf form) of an f32 x whose result is stored as f16 or bf16 (body_gelu_half);
 * libdevice mode keeps the full form. */
LLVMValueRef cg_math_gelu_half(CgMath *m, LLVMValueRef x)
{
	if ((m->gpu && m->libdevice) || LLVMTypeOf(x) != LLVMFloatTypeInContext(m->ctx))
		return math_emit(m, OP_GELU, 1, &x, GELU_NONE);
	Em e = em_for(m, x, GELU_NONE);
	return em_helper(&e, "gelu.half", 1, &x, body_gelu_half);
}

LLVMValueRef cg_math_act_half(CgMath *m, OpKind op, LLVMValueRef x)
{
	GeluApprox ap = op == OP_GELU ? GELU_TANH : GELU_NONE;
	if ((m->gpu && m->libdevice) || LLVMTypeOf(x) != LLVMFloatTypeInContext(m->ctx))
		return math_emit(m, op, 1, &x, ap);
	Em e = em_for(m, x, ap);
	e.op = op;
	return em_helper(&e, op == OP_SIGMOID ? "sigmoid.half" : op == OP_SILU ? "silu.half" :
			 "gelu.tanh.half", 1, &x, body_act_half);
}

LLVMValueRef cg_math_binary(CgMath *m, OpKind op, LLVMValueRef x, LLVMValueRef y)
{
	LLVMValueRef a[2] = {x, y};
	return math_emit(m, op, 2, a, GELU_NONE);
}

/* ---- libdevice --------------------------------------------------------------- */

/* Keeps the first error LLVM reports while reading or linking libdevice,
 * instead of letting the default handler print it. */
static void math_diag_capture(LLVMDiagnosticInfoRef di, void *ctx)
{
	char *why = ctx;
	if (LLVMGetDiagInfoSeverity(di) != LLVMDSError || why[0])
		return;
	char *msg = LLVMGetDiagInfoDescription(di);
	snprintf(why, 256, "%s", msg);
	LLVMDisposeMessage(msg);
}

int cg_math_link_libdevice(LLVMModuleRef mod, const char *path, Diag *d)
{
	LLVMMemoryBufferRef buf;
	char *msg = NULL;
	if (LLVMCreateMemoryBufferWithContentsOfFile(path, &buf, &msg)) {
		diag_set(d, path, 0, 0, "cannot read libdevice: %s", msg ? msg : "unknown error");
		LLVMDisposeMessage(msg);
		return -1;
	}
	LLVMModuleRef lib = NULL;
	LLVMContextRef ctx = LLVMGetModuleContext(mod);
	LLVMDiagnosticHandler old = LLVMContextGetDiagnosticHandler(ctx);
	void *old_ctx = LLVMContextGetDiagnosticContext(ctx);
	char why[256] = "";
	LLVMContextSetDiagnosticHandler(ctx, math_diag_capture, why);
	LLVMBool bad = LLVMParseBitcodeInContext2(ctx, buf, &lib);
	LLVMDisposeMemoryBuffer(buf);
	if (bad) {
		LLVMContextSetDiagnosticHandler(ctx, old, old_ctx);
		diag_set(d, path, 0, 0, "not a valid LLVM bitcode file (libdevice expected)%s%s",
			 why[0] ? ": " : "", why);
		return -1;
	}
	LLVMSetTarget(lib, LLVMGetTarget(mod));
	LLVMSetDataLayout(lib, LLVMGetDataLayoutStr(mod));
	bad = LLVMLinkModules2(mod, lib);
	LLVMContextSetDiagnosticHandler(ctx, old, old_ctx);
	if (bad) {
		diag_set(d, path, 0, 0, "cannot link libdevice into the module%s%s", why[0] ? ": " : "", why);
		return -1;
	}
	for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
		size_t len;
		const char *name = LLVMGetValueName2(fn, &len);
		if (len > 5 && !strncmp(name, "__nv_", 5) && !LLVMIsDeclaration(fn))
			LLVMSetLinkage(fn, LLVMInternalLinkage);
	}
	return 0;
}

const char *cg_math_find_libdevice(void)
{
	static char found[512];
	const char *env[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
	for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) {
		if (!env[i] || !*env[i])
			continue;
		snprintf(found, sizeof found, "%s/nvvm/libdevice/libdevice.10.bc", env[i]);
		if (access(found, R_OK) == 0)
			return found;
	}
	/* the highest versioned install: glob sorts, so take the last match */
	glob_t g;
	const char *res = NULL;
	if (glob("/usr/local/cuda*/nvvm/libdevice/libdevice*.bc", 0, NULL, &g) == 0 && g.gl_pathc > 0) {
		snprintf(found, sizeof found, "%s", g.gl_pathv[g.gl_pathc - 1]);
		res = found;
	}
	globfree(&g);
	return res;
}
