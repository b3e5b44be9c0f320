/* bounds.c: the error bounds of the reference interpreter (docs/tolerances.md).
 *
 * Beside each value it computes, host/interp.c can carry a bound: how far a
 * correct kernel's result may lie from the reference value. bounds_op builds an
 * op's bounds from its operands' values and bounds and its own result, op by op,
 * in the same pass that computes the values; the model is derived and measured in
 * docs/tolerances.md, and `fusec run --check` (host/check.c) holds each output
 * element to it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp_impl.h"

/* ---- error bounds (docs/tolerances.md) ------------------------------------- */

/* Next to each value the interpreter can carry E >= 0 (f64, one per element): how
 * far the value a correct kernel computes may lie from the reference value, to
 * first order. E of a graph input is 0. Each op's E is what its inputs' errors can
 * do to its result (propagated: exact interval bounds for add, sub, mul, div, max,
 * min; the function evaluated at x - E and x + E for everything else, which is exact
 * for monotone functions and catches jumps of floor, round, rem, ...) plus its own
 * rounding (local): c units in the last place of the compute precision P (f32 for
 * f16, bf16 and f32; f64 for f64), c per op (op_ulps), plus the rounding to the
 * stored dtype T, once on the interpreter's side and once more on the kernel's when
 * T is narrower than P. The rule for fused intermediates (docs/tolerances.md): a
 * kernel rounds every f16/bf16 result to its dtype where it is made, registers or
 * not (codegen/eval.c), except a matmul's result in a tiled kernel's epilogue,
 * which stays f32 (codegen/matmul_epilogue.c); the reference rounds every tensor,
 * and the bound covers both (finish). A sum of n terms x_i adds u_P · acc(n),
 * where acc is the summation bound of the model (sum_bound). A non-finite
 * reference value gets E = 0 (it must be matched exactly); a finite one whose E
 * cannot be bounded (an interval that meets a pole or leaves a function's domain)
 * gets +inf, and `--check` calls its output `not checked`. Integer and bool values
 * get E = 0 unless a comparison, a float-to-int cast or an argmax may flip within
 * its inputs' errors.
 *
 * Part of E is tight (R <= E, carried beside it): the roundings to the stored
 * dtype (finish), which a correct kernel may really differ by, as a whole, where
 * its value lies on the other side of a rounding boundary or where it keeps in f32
 * what the reference rounds (a tiled matmul's result in its epilogue). The rest,
 * E - R, is wide: worst-case ulps of the kernel's arithmetic and sums already
 * bounded at BOUND_LAMBDA standard deviations, which a real error reaches rarely.
 * A sum treats the two differently (spread); elsewhere R goes where E goes. */

/* Summation model: lambda of the probabilistic term of the kernel's own rounding
 * errors (sum_bound) and of the tight errors the terms bring (spread). */
#define BOUND_LAMBDA 4.0

/* Sums of terms with errors: the wide and tight parts of each term's error. */
typedef struct {
	double l;     /* sum of e_i */
	double qw;    /* sum of (e_i - r_i)^2, the wide parts */
	double qt;    /* sum of r_i^2, the tight parts */
} Spread;

static void spread_add(Spread *sp, double e, double r)
{
	sp->l += e;
	sp->qw += (e - r) * (e - r);
	sp->qt += r * r;
}

/* The error that terms with errors e_i bring to a sum: sum e_i when they all push
 * one way; less when they are independent, as errors of different elements made by
 * different roundings are. A wide part is already a bound several standard
 * deviations wide: their root-sum-square bounds the sum's spread. A tight part r_i
 * is a rounding flip the kernel may really make, of about r_i itself (a bf16
 * matmul result the tiled kernel keeps in f32 while the reference rounds it flips
 * a quarter of the elements of the next op by an ulp; docs/tolerances.md, "Fused
 * intermediates"): as independent zero-mean variables with |delta_i| <= r_i their
 * sum has a standard deviation of at most sqrt(sum r_i^2), counted BOUND_LAMBDA
 * times as the kernel's own sum is. (Counted once, a bf16 matmul -> add -> matmul
 * at K = 1024 failed at 2.5; counting the wide parts 4 times too compounds layer
 * over layer: 4^9 looser at the end of a two-block BERT.) */
static double spread(const Spread *sp)
{
	double p = sqrt(sp->qw) + BOUND_LAMBDA * sqrt(sp->qt);
	return p < sp->l ? p : sp->l;
}

static double unit_round(DType t)
{
	switch (t) {
	case DT_F64: return 0x1p-53;
	case DT_F32: return 0x1p-24;
	case DT_F16: return 0x1p-11;
	case DT_BF16: return 0x1p-8;
	default: return 0;
	}
}

/* The smallest positive subnormal: an absolute floor for one rounding. */
static double tiny_of(DType t)
{
	switch (t) {
	case DT_F64: return 0x1p-1074;
	case DT_F32: return 0x1p-149;
	case DT_F16: return 0x1p-24;
	case DT_BF16: return 0x1p-133;
	default: return 0;
	}
}

static DType compute_dtype(DType t)
{
	return t == DT_F64 ? DT_F64 : DT_F32;
}

/* The kernel's own error, in P, of an op with result v computed with c ulps of P
 * (an ulp of P at v is taken as 2·u_P·|v|). In f64 the interpreter's libm is no
 * better than the kernel's: counted twice. */
static double kernel_err(DType t, double c, double v)
{
	if (!ir_dtype_is_float(t) || c == 0)
		return 0;
	DType p = compute_dtype(t);
	double e = c * (2 * unit_round(p) * fabs(v) + tiny_of(p));
	return t == DT_F64 ? 2 * e : e;
}

/* The bound of a result the interpreter computed as v (in f64) and stored as y (v
 * rounded to t), when a correct kernel's value before any store lies within pre of
 * v. The kernel rounds it to t where it is made (every fused intermediate, and
 * every store): anything between rn(v - pre) and rn(v + pre); or, for a matmul
 * read by the epilogue of a tiled kernel, keeps it in f32: pre + |v - y| from y
 * (docs/tolerances.md, "Fused intermediates"). The bound covers both. */
static double finish(DType t, double v, double y, double pre)
{
	if (!ir_dtype_is_float(t))
		return pre;
	if (!isfinite(y))
		return 0;
	if (isinf(pre) || isnan(pre))
		return INFINITY;
	double e = pre + fabs(v - y);
	if (t != compute_dtype(t)) {
		e = fmax(e, fabs(host_round(t, v + pre) - y));
		e = fmax(e, fabs(host_round(t, v - pre) - y));
	}
	return e;
}

/* The summation error, in units of u_P, of a sum of n terms with sum of magnitudes
 * m, sum of squares q and sum s, in any order (sequential, blocked, tree, split-K),
 * accumulated with round-to-nearest: addition k errs by delta_k·s_k, |delta_k| <= 1
 * (s_k its partial sum). A partial sum is a drift k·mu (mu = s/n) plus a walk of
 * about sqrt(k·q/n). With independent delta_k the two give, with a margin of
 * BOUND_LAMBDA standard deviations, sqrt(n·q) and |s|·sqrt(n/3). The delta_k are
 * not independent when the terms are nearly equal (0.1 added again and again
 * rounds the same way each time): then all n drift errors go one way,
 * (n + 1)/2·|s|; this term is weighted by how close the terms are, relative to the
 * spacing of the partial sums (weight 1 when their spread sigma is below
 * u·n·|mu|, falling as (u·n·|mu| / sigma)² above). Never more than the worst case
 * (n - 1)·m. */
static double sum_bound(DType p, int64_t n, double m, double q, double s)
{
	if (n <= 1)
		return 0;
	double dn = (double)n, mu = s / dn, var = fmax(q / dn - mu * mu, 0);
	double near = unit_round(p) * dn * fabs(mu);
	double same = var <= near * near ? 1 : near * near / var;
	double est = BOUND_LAMBDA * (sqrt(dn * q) + fabs(s) * sqrt(dn / 3)) +
		     same * (dn + 1) / 2 * fabs(s);
	double worst = (dn - 1) * m;
	return worst < est ? worst : est;
}

/* The error of a reduction of n terms: the kernel's (u_P·sum_bound) and the
 * interpreter's own f64 sum, whose worst case is (n - 1)·u_f64·m. */
static double reduce_err(DType t, int64_t n, double m, double q, double s)
{
	if (!ir_dtype_is_float(t))
		return 0;
	DType p = compute_dtype(t);
	double e = unit_round(p) * sum_bound(p, n, m, q, s);
	return e + unit_round(DT_F64) * (double)(n > 1 ? n - 1 : 0) * m;
}

/* m·e without 0·inf = NaN: an exact operand (e = 0) contributes nothing. */
static double scaled(double m, double e)
{
	return e > 0 ? fabs(m) * e : 0;
}

static double gelu_tanh_arg(double x)
{
	return sqrt(2 / pi) * (x + 0.044715 * x * x * x);
}

/* The kernel's error of one float elementwise op at operand a, in ulps of P: 0.5 for
 * a correctly rounded op, 1 for arithmetic (which the optimizer may contract into
 * an fma with its neighbour), 1.5 for a division (x·(1/s)), the measured maximum of
 * docs/math.md (portable and libdevice lowerings) rounded up for math functions, 0
 * for exact ops. */
static double op_ulps(const Op *op, DType vt, double a)
{
	switch (op->kind) {
	case OP_SQRT: case OP_RECIP: return 0.5;
	case OP_ADD: case OP_SUB: case OP_MUL: case OP_ADD_SCALAR: case OP_SUB_SCALAR:
	case OP_MUL_SCALAR: case OP_REM: case OP_REM_SCALAR:
		return 1;   /* 0.5, and as much again for a contraction into an fma */
	case OP_DIV: case OP_DIV_SCALAR:
		return 1.5; /* x·(1/s): two roundings */
	/* f32 exp on the GPU is ex2.approx (2^-22, about 2 ulp) on the reduced
	 * argument: 2 more ulps for exp and what is built on it */
	case OP_LOG: case OP_SIN: case OP_COS: return 2;
	case OP_LOG1P: return 3;
	case OP_EXP:
		/* an f16/bf16 result: one ex2.approx of x·log2 e (cg_math_exp_half),
		 * whose rounded argument costs 2|x| ulps; past |x| = 104 the result
		 * is 0 or inf either way */
		return vt == DT_F16 || vt == DT_BF16 ? 4 + 2 * fmin(fabs(a), 104) : 4;
	case OP_ERF: return 4;
	/* sigmoid and silu with an f16/bf16 result: one exp of -x·log2 e and one
	 * reciprocal, approximate on the GPU (cg_math_act_half): the rounded
	 * argument costs 2|x| ulps, as exp's */
	case OP_TANH: return 5;
	case OP_SIGMOID:
		return vt == DT_F16 || vt == DT_BF16 ? 5 + 2 * fmin(fabs(a), 104) : 5;
	case OP_SILU:
		return vt == DT_F16 || vt == DT_BF16 ? 6 + 2 * fmin(fabs(a), 104) : 6;
	case OP_POW: case OP_POWF: case OP_POW_SCALAR: return vt == DT_F64 ? 2 : 4;
	case OP_GELU:
		/* the tails are ill-conditioned inside the formula: an ulp of the
		 * argument of tanh (erfc) costs 2|u| (x²) ulps of the result */
		if (op->attr && op->attr->approx == GELU_TANH)
			return fmin(16 + 4 * fabs(gelu_tanh_arg(a)), 4096);
		/* an f16/bf16 result: the short form (cg_math_gelu_half), within
		 * 2^-15.4 of the value */
		if (vt == DT_F16 || vt == DT_BF16)
			return fmin(8 + a * a, 4096) + 256;
		return fmin(8 + a * a, 4096);
	default: return 0;
	}
}

/* What errors ea, eb of the operands do to a float elementwise result y. */
static double propagate_elem(const Op *op, DType vt, double a, double ea, double b, double eb,
			     double y)
{
	if (ea == 0 && eb == 0)
		return 0;
	double s = host_round(vt, interp_attr_scalar(op));
	switch (op->kind) {
	case OP_ADD: case OP_SUB: return ea + eb;
	case OP_ADD_SCALAR: case OP_SUB_SCALAR: case OP_NEG: case OP_ABS: case OP_RELU:
	case OP_CLAMP: case OP_CLAMP_MIN: case OP_CLAMP_MAX:
		return ea;
	case OP_MAX: case OP_MIN: return fmax(ea, eb);
	case OP_MUL: return scaled(a, eb) + scaled(b, ea) + ea * eb;
	case OP_MUL_SCALAR: return scaled(s, ea);
	case OP_DIV_SCALAR: return ea / fabs(s);
	case OP_DIV:
		if (eb >= fabs(b))
			return INFINITY;
		return (scaled(b, ea) + scaled(a, eb)) / (fabs(b) * (fabs(b) - eb));
	default: break;
	}
	/* everything else: the function at the corners of the operands' intervals */
	double e = 0;
	for (int i = -1; i <= 1; i += 2)
		for (int j = -1; j <= 1; j += 2) {
			if (j > 0 && eb == 0)
				continue;
			double v = interp_float_elem(op, vt, a + i * ea, b + j * eb);
			if (isnan(v) || isinf(v))
				return INFINITY;
			e = fmax(e, fabs(v - y));
		}
	return e;
}

/* A comparison (or a test against zero) that may come out either way. */
static bool may_flip(double a, double ea, double b, double eb)
{
	return (ea > 0 || eb > 0) && !isnan(a) && !isnan(b) && fabs(a - b) <= ea + eb;
}

static double bound_compare(const Op *op, DType vt, double a, double ea, double b, double eb)
{
	if (op->kind == OP_IS_NAN || op->kind == OP_IS_INF)
		return 0;
	if (ir_ops[op->kind].family == FAM_SCALAR || op->nin == 1)
		b = host_round(vt, interp_attr_scalar(op));   /* eb: the scalar's error */
	return may_flip(a, ea, b, eb) ? 1 : 0;
}

/* An integer or bool op on operands that carry errors (from a flipped comparison or
 * cast): Lipschitz ops pass them on, logic ops flip, the rest is unbounded. */
static double bound_int_elem(const Op *op, int64_t a, double ea, int64_t b, double eb)
{
	if (ea == 0 && eb == 0)
		return 0;
	switch (op->kind) {
	case OP_ADD: case OP_SUB: return ea + eb;
	case OP_NEG: case OP_ABS: case OP_RELU: case OP_ADD_SCALAR: case OP_SUB_SCALAR:
	case OP_CLAMP: case OP_CLAMP_MIN: case OP_CLAMP_MAX:
		return ea;
	case OP_MAX: case OP_MIN: return fmax(ea, eb);
	case OP_MUL: return scaled((double)a, eb) + scaled((double)b, ea) + ea * eb;
	case OP_AND: case OP_OR: case OP_XOR: case OP_NOT: return 1;
	default: return INFINITY;
	}
}

/* A cast of x (error ex) to the output's dtype; y is the reference result. */
static double bound_cast(DType from, DType to, double x, double ex, double y)
{
	bool ff = ir_dtype_is_float(from), tf = ir_dtype_is_float(to);
	if (tf && !isfinite(y))
		return 0;
	if (to == DT_BOOL)
		return ex > 0 && fabs(x) <= ex ? 1 : 0;
	if (tf && compute_dtype(to) != to && from != DT_F32)
		ex += unit_round(DT_F32) * fabs(x);   /* to f16/bf16 through f32: twice rounded */
	if (tf)
		return finish(to, x, y, ex);
	if (!ff || ex == 0 || isnan(x))
		return ex;
	double lo = (double)host_to_int(to, x - ex), hi = (double)host_to_int(to, x + ex);
	return fmax(fabs(hi - y), fabs(y - lo));
}

static double err_at(const Interp *ip, int tensor, int64_t off)
{
	return ((const double *)ip->err[tensor].data)[off];
}

/* The tight part of err_at (see the top of this section). */
static double tight_at(const Interp *ip, int tensor, int64_t off)
{
	const double *r = ip->tight[tensor].data;
	return r ? r[off] : 0;   /* none: no tight part (interp_tight_tensors) */
}

/* rt[i] = v, where rt holds tight parts (NULL: the tensor carries none). */
static void put(double *rt, int64_t i, double v)
{
	if (rt)
		rt[i] = v;
}

/* A bound and its tight part (rt NULL: not kept) for a result stored with finish.
 * Tight: the share r
 * of pre that came tight from the operands, and the rounding to an f16/bf16 dtype
 * where a correct kernel may really differ by it as a whole: where pre reaches
 * across a rounding boundary (a flip), and for a matmul result (kept: the tiled
 * kernels keep it in f32 for their epilogue) everywhere. Elsewhere the kernel rounds
 * v as the reference does, and the rounding is slack, not an error. */
static void finish_r(DType t, double v, double y, double pre, double r, bool kept, double *e,
		     double *rt)
{
	*e = finish(t, v, y, pre);
	if (!rt)
		return;
	*rt = 0;
	if (!isfinite(*e) || !ir_dtype_is_float(t))
		return;
	*rt = fmin(r, pre);
	bool flips = *e > pre + fabs(v - y);
	if (t != compute_dtype(t) && (kept || flips))
		*rt += *e - pre;
}

/* --precision's shadow: an op computed here in f32 whose kernel computes in the
 * operand's stored dtype converts its scalars to that dtype (f64 to f32, then
 * rounded: cg_scalar_as), not to f32. The difference of each, for the scalar,
 * min and max attributes. */
typedef struct {
	double s, lo, hi;   /* scalar, min, max */
	bool any;
} ScalarErr;

static ScalarErr scalar_err(const Interp *ip, const Op *op, DType vt)
{
	ScalarErr se = {0, 0, 0, false};
	DType sv = op->nin ? interp_stored(ip, op->in[0]) : vt;
	if (!op->attr || sv == vt || !ir_dtype_is_float(sv) || !ir_dtype_is_float(vt))
		return se;
	const Attrs *at = op->attr;
	double *dst[3] = {&se.s, &se.lo, &se.hi};
	double v[3] = {at->scalar, at->min, at->max};
	unsigned bit[3] = {A_SCALAR, A_MIN, A_MAX};
	for (int k = 0; k < 3; k++) {
		if (!(at->has & bit[k]))
			continue;
		double ref = host_round(vt, v[k]);
		double ker = host_round(sv, host_round(DT_F32, v[k]));
		*dst[k] = isfinite(ref) && isfinite(ker) ? fabs(ker - ref) : ref == ker ? 0 : INFINITY;
		se.any = se.any || *dst[k] > 0;
	}
	return se;
}

/* What the errors of a scalar op's operand (ea) and of its scalars together do to
 * its result y: clamp is 1-Lipschitz in each of x, min and max; the others, the
 * function at the corners of a ± ea and scalar ± es. */
static double propagate_scalars(const Op *op, DType vt, double a, double ea, double y,
				const ScalarErr *se)
{
	if (op->kind == OP_CLAMP || op->kind == OP_CLAMP_MIN || op->kind == OP_CLAMP_MAX)
		return fmax(ea, fmax(se->lo, se->hi));
	if (isinf(se->s))
		return INFINITY;
	Attrs at = *op->attr;
	Op o = *op;
	o.attr = &at;
	double e = 0;
	for (int i = -1; i <= 1; i += 2)
		for (int j = -1; j <= 1; j += 2) {
			at.scalar = host_round(vt, op->attr->scalar) + j * se->s;
			double v = interp_float_elem(&o, vt, a + i * ea, 0);
			if (isnan(v) || isinf(v))
				return INFINITY;
			e = fmax(e, fabs(v - y));
		}
	return e;
}

static void bound_elementwise(Interp *ip, const Op *op, const HostTensor *out, double *e,
			      double *rt)
{
	const HostTensor *x[3];
	int64_t st[3][IR_MAX_RANK];
	interp_operands(ip, op, x, st);
	DType vt = ir_op_value_dtype(ip->g, op);
	bool fl = ir_dtype_is_float(vt);
	OpFamily fam = ir_ops[op->kind].family;
	/* --precision's shadow: the kernel stores in sto what is computed here in
	 * out->dtype, and converts its scalars to the operand's stored dtype */
	DType sto = interp_stored(ip, op->out[0]);
	bool narrowed = sto != out->dtype;
	ScalarErr se = scalar_err(ip, op, vt);
	for (int64_t i = 0; i < out->n; i++) {
		int64_t off[3];
		double ex[3] = {0, 0, 0}, rx[3] = {0, 0, 0};
		for (int k = 0; k < op->nin; k++) {
			off[k] = interp_offset_of(out, i, st[k]);
			ex[k] = err_at(ip, op->in[k], off[k]);
			rx[k] = tight_at(ip, op->in[k], off[k]);
		}
		double y = host_get(out, i);
		put(rt, i, 0);
		if (op->kind == OP_WHERE) {
			bool m = host_get_i64(x[0], off[0]) != 0;
			e[i] = m ? ex[1] : ex[2];
			put(rt, i, m ? rx[1] : rx[2]);
			if (ex[0] > 0 && ir_dtype_is_float(out->dtype))
				e[i] = fabs(host_get(x[1], off[1]) - host_get(x[2], off[2])) +
				       fmax(ex[1], ex[2]);
			else if (ex[0] > 0)
				e[i] = INFINITY;
		} else if (op->kind == OP_MASK_FILL) {
			bool m = host_get_i64(x[1], off[1]) != 0;
			e[i] = m ? 0 : ex[0];
			put(rt, i, m ? 0 : rx[0]);
			if (ex[1] > 0)
				e[i] = fl ? fabs(host_get(x[0], off[0]) - y) + ex[0] : INFINITY;
		} else if (op->kind == OP_CAST) {
			double xv = host_get(x[0], off[0]);
			e[i] = bound_cast(interp_stored(ip, op->in[0]), sto, xv, ex[0], y);
			if (ir_dtype_is_float(x[0]->dtype) && ir_dtype_is_float(out->dtype) &&
			    isfinite(e[i]))
				put(rt, i, fmin(e[i], rx[0] + fmax(e[i] - ex[0], 0)));
		} else if (fam == FAM_COMPARE) {
			double a = host_get(x[0], off[0]), b = op->nin > 1 ? host_get(x[1], off[1]) : 0;
			e[i] = bound_compare(op, vt, a, ex[0], b, op->nin > 1 ? ex[1] : se.s);
		} else if (fl) {
			if (!isfinite(y)) {
				e[i] = 0;
				continue;
			}
			double a = host_get(x[0], off[0]), b = op->nin > 1 ? host_get(x[1], off[1]) : 0;
			double v = interp_float_elem(op, vt, a, b);
			double prop = propagate_elem(op, vt, a, ex[0], b, ex[1], y);
			double r = rx[0] > 0 || rx[1] > 0
				   ? propagate_elem(op, vt, a, rx[0], b, rx[1], y) : 0;
			if (se.any)
				prop = fmax(prop, propagate_scalars(op, vt, a, ex[0], y, &se));
			/* the kernel's dtype picks its exp (the shadow's is f32) */
			double pre = prop + kernel_err(out->dtype,
						       op_ulps(op, interp_stored(ip, op->in[0]), a), v);
			/* gelu's tail (x·Phi(x) for x << 0) errs by an ulp or so of x·u in
			 * absolute terms, measured on the f64 kernels */
			if (op->kind == OP_GELU)
				pre += 4 * unit_round(compute_dtype(vt)) * fabs(a);
			if (ir_dtype_is_float(out->dtype))
				finish_r(sto, v, y, pre, fmin(r, prop), narrowed, &e[i],
					 rt ? &rt[i] : NULL);
			else
				e[i] = pre;
		} else {
			int64_t a = host_get_i64(x[0], off[0]);
			int64_t b = op->nin > 1 ? host_get_i64(x[1], off[1]) : 0;
			e[i] = bound_int_elem(op, a, ex[0], b, ex[1]);
		}
		/* a select's result in the shadow: the kernel holds it in sto (a
		 * mask_fill's value rounded to st; the others' rounding is in ex) */
		if (narrowed && fam == FAM_SELECT && isfinite(y) && isfinite(e[i])) {
			double e0 = e[i];
			e[i] = finish(sto, y, y, e0);
			if (rt)
				rt[i] += e[i] - e0;
		}
	}
}

/* Whether some other element of a reduction may beat the extreme x[best]. */
static bool extreme_uncertain(const Interp *ip, const HostTensor *x, int src, int64_t base,
			      int64_t len, int64_t inner, int64_t best)
{
	double vb = host_get(x, base + best * inner), eb = err_at(ip, src, base + best * inner);
	for (int64_t r = 0; r < len; r++) {
		int64_t xi = base + r * inner;
		if (r != best && may_flip(host_get(x, xi), err_at(ip, src, xi), vb, eb))
			return true;
	}
	return false;
}

/* --precision's shadow (Interp.store): the share of a sum's tight errors that may
 * be one error shared by every term. The reference there does not round where
 * the kernels do, so an error made once and broadcast (the rounding of a
 * softmax's row maximum, subtracted from every logit) moves all the terms of a
 * later sum one way, which spread's root-sum-square counts sqrt(n) times too
 * small; elsewhere the reference rounds as the kernels do and no such error
 * exists. The smallest relative tight error c of the terms may be that shared
 * error: c·sum |t_i| is counted whole, the rest r_i - c·|t_i| as independent. */
static double shared_spread(const Interp *ip, const HostTensor *x, int src, int64_t base,
			    int64_t len, int64_t inner, const Spread *sp)
{
	double c = INFINITY, m = 0;
	for (int64_t r = 0; r < len; r++) {
		int64_t xi = base + r * inner;
		double v = fabs(host_get(x, xi)), t = tight_at(ip, src, xi);
		if (v > 0 && isfinite(v))
			c = fmin(c, t / v);
		m += v;
	}
	if (!(c > 0) || isinf(c))
		return spread(sp);
	double qt = 0;
	for (int64_t r = 0; r < len; r++) {
		int64_t xi = base + r * inner;
		double d = fmax(tight_at(ip, src, xi) - c * fabs(host_get(x, xi)), 0);
		qt += d * d;
	}
	double p = sqrt(sp->qw) + BOUND_LAMBDA * sqrt(qt) + c * m;
	return fmax(spread(sp), p < sp->l ? p : sp->l);
}

static void bound_reduce(Interp *ip, const Op *op, const HostTensor *out, double *e, double *rt)
{
	const HostTensor *x = &ip->val[op->in[0]];
	int src = op->in[0];
	int axis = op->attr->axis;
	int64_t outer, len, inner;
	interp_axis_split(x, axis, &outer, &len, &inner);
	bool fl = ir_dtype_is_float(x->dtype);
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < inner; j++) {
			int64_t oi = o * inner + j, base = o * len * inner + j;
			double y = host_get(out, oi), prop = 0, rmax = 0, m = 0, m2 = 0, s = 0;
			double wide = 1, pm = 1, pv = 1;
			Spread sp = {0, 0, 0};
			for (int64_t r = 0; r < len; r++) {
				int64_t xi = base + r * inner;
				double v = host_get(x, xi), ev = err_at(ip, src, xi);
				switch (op->kind) {
				case OP_SUM: case OP_MEAN:
					spread_add(&sp, ev, tight_at(ip, src, xi));
					m += fabs(v);
					m2 += v * v;
					s += v;
					break;
				case OP_PROD:
					wide *= fabs(v) + ev;
					pm *= fabs(v);
					pv *= v;
					break;
				default:
					prop = fmax(prop, ev);
					rmax = fmax(rmax, tight_at(ip, src, xi));
				}
			}
			put(rt, oi, 0);
			if (op->kind == OP_ARGMAX || op->kind == OP_ARGMIN ||
			    ((op->kind == OP_MAX_DIM || op->kind == OP_MIN_DIM) && !fl)) {
				int64_t best = host_get_i64(out, oi);
				if (op->kind == OP_MAX_DIM || op->kind == OP_MIN_DIM)
					e[oi] = prop;
				else
					e[oi] = fl && prop > 0 &&
						extreme_uncertain(ip, x, src, base, len, inner, best)
						? (double)len : 0;
				continue;
			}
			if (!fl || !isfinite(y)) {
				e[oi] = fl ? 0 : prop;
				continue;
			}
			double v = y, pre = prop, r = rmax;    /* max_dim, min_dim: exact */
			if (op->kind == OP_SUM || op->kind == OP_MEAN) {
				pre = (ip->store ? shared_spread(ip, x, src, base, len, inner, &sp)
						 : spread(&sp)) + reduce_err(out->dtype, len, m, m2, s);
				v = s;
				r = 0;   /* counted wide: spread's tight share is a bound now */
				if (op->kind == OP_MEAN) {
					v = s / (double)len;
					pre = pre / (double)len + kernel_err(out->dtype, 1, v);
				}
			} else if (op->kind == OP_PROD) {
				v = pv;
				pre = wide - pm + kernel_err(out->dtype, 0.5 * (double)len, v);
				r = 0;
			}
			DType st = interp_stored(ip, op->out[0]);
			finish_r(st, v, y, pre, r, st != out->dtype, &e[oi],
				 rt ? &rt[oi] : NULL);
		}
}

/* The error of an f32 matmul's (or conv's) products beyond f32's, for mag = sum |a b|
 * of an output element. --allow-tf32: both operands of every product rounded to
 * tf32 (10 mantissa bits, relative error 2^-11 each), (2 * 2^-11 + 2^-22) * mag.
 * --allow-3xtf32 (codegen/matmul_wgmma.c): each operand a tf32 part and a tf32 rest,
 * which leave 2^-22 of it (two roundings of 11 bits), and the rest x rest product
 * dropped: 3 * 2^-22 a product; the tensor cores sum a stage's 3 x 32 / 8 products
 * truncated, up to 24 additions of relative error 2^-23 each on at most mag:
 * 12 * 2^-22; together under 2^-18 * mag. */
static double mm_operand_err(const Interp *ip, const Op *op, double mag)
{
	if (!ip->tf32 || interp_stored(ip, op->in[0]) != DT_F32)
		return 0;
	return ip->tf32 == INTERP_TF32 ? (0x1p-10 + 0x1p-22) * mag : 0x1p-18 * mag;
}

static void bound_matmul(Interp *ip, const Op *op, const HostTensor *out, double *e, double *rt)
{
	const HostTensor *a = &ip->val[op->in[0]], *b = &ip->val[op->in[1]];
	MatmulShape sh;
	interp_matmul_shape(a, b, out, &sh);
	int64_t kk = sh.k, n = sh.n;
	bool fl = ir_dtype_is_float(out->dtype);
	for (int64_t oi = 0; oi < out->n; oi++) {
		int64_t a0, b0;
		interp_matmul_at(&sh, out, oi, &a0, &b0);
		double mag = 0, m2 = 0, s = 0;
		Spread sp = {0, 0, 0};
		for (int64_t p = 0; p < kk; p++) {
			int64_t ai = a0 + p, bi = b0 + p * n;
			double va = host_get(a, ai), vb = host_get(b, bi);
			double ea = err_at(ip, op->in[0], ai), eb = err_at(ip, op->in[1], bi);
			double t = scaled(va, eb) + scaled(vb, ea) + ea * eb;
			double tr = 0;
			if (t > 0) {
				double ra = tight_at(ip, op->in[0], ai);
				double rb = tight_at(ip, op->in[1], bi);
				tr = fmin(t, scaled(va, rb) + scaled(vb, ra) + ra * rb);
			}
			spread_add(&sp, t, tr);
			mag += fabs(va * vb);
			m2 += va * vb * va * vb;
			s += va * vb;
		}
		double prop = spread(&sp);
		double y = host_get(out, oi);
		put(rt, oi, 0);
		if (!fl || !isfinite(y)) {
			e[oi] = fl ? 0 : prop;
			continue;
		}
		/* each product rounds once (0 with fma), then the sum */
		double u = unit_round(compute_dtype(out->dtype));
		/* --allow-tf32, --allow-3xtf32 (mm_operand_err) */
		double tf = mm_operand_err(ip, op, mag);
		finish_r(interp_stored(ip, op->out[0]), s, y,
			 prop + tf + u * mag + reduce_err(out->dtype, kk, mag, m2, s), 0,
			 true, &e[oi], rt ? &rt[oi] : NULL);
	}
}

/* attention (ir/ops.def), row by row as run_attention computes it. A kernel computes
 * the scores s_j in f32 from the operands, p_j = exp(s_j - m) with a max m of its
 * own (any m: it cancels, as long as the numerator and the sum use the same one,
 * which a flash kernel's rescaling keeps), rounds p_j to the operands' dtype for the
 * second product and sums those same weights, and divides the sums: the result is
 * a weighted mean, and an error eps_j of weight j moves it by p_j eps_j (v_j - o) / l.
 * Per score, its error ds_j (the operands', the products' and the sum's, the
 * scale's rounding, the bias's), the rounding of s_j - m and exp's 4 ulps give
 * eps_j, summed as spread sums independent errors; the weights' rounding is bounded
 * as a whole; then the sums' own rounding and the errors of v weighted by p_j / l.
 * A score of -inf has p_j = 0 and no error. */
static void bound_attention(Interp *ip, const Op *op, const HostTensor *out, double *e,
			    double *rt)
{
	AttShape sh;
	interp_attention_shape(ip, op, out, &sh);
	const HostTensor *const *t = sh.t;
	int64_t (*st)[IR_MAX_RANK] = sh.st;
	int r = out->rank;
	int64_t ne = sh.e, d = sh.d, n = sh.n;
	double scale = op->attr->scalar;
	double u = unit_round(DT_F32), up = unit_round(interp_stored(ip, op->in[0]));
	if (ir_dtype_is_float(out->dtype) && out->dtype == DT_F64)
		u = up = unit_round(DT_F64);
	bool tf = ip->tf32 == INTERP_TF32 && interp_stored(ip, op->in[0]) == DT_F32;
	double se = fabs((double)(float)scale - scale);
	double *s = xmalloc((size_t)n * sizeof *s), *ds = xmalloc((size_t)n * sizeof *ds);
	double *p = xmalloc((size_t)n * sizeof *p);
	DType so = interp_stored(ip, op->out[0]);
	for (int64_t row = 0; row < out->n / ne; row++) {
		int64_t base[4], i = interp_attention_row(&sh, op, out, row, base);
		double mx = -INFINITY;
		for (int64_t j = 0; j < n; j++) {
			double dot = 0, mag = 0, m2 = 0;
			Spread sp = {0, 0, 0};
			for (int64_t q = 0; q < d; q++) {
				int64_t ai = base[0] + i * st[0][r - 2] + q * st[0][r - 1];
				int64_t bi = base[1] + q * st[1][r - 2] + j * st[1][r - 1];
				double va = host_get(t[0], ai), vb = host_get(t[1], bi);
				double ea = err_at(ip, op->in[0], ai), eb = err_at(ip, op->in[1], bi);
				double te = scaled(va, eb) + scaled(vb, ea) + ea * eb, tr = 0;
				if (te > 0) {
					double ra = tight_at(ip, op->in[0], ai);
					double rb = tight_at(ip, op->in[1], bi);
					tr = fmin(te, scaled(va, rb) + scaled(vb, ra) + ra * rb);
				}
				spread_add(&sp, te, tr);
				dot += va * vb;
				mag += fabs(va * vb);
				m2 += va * vb * va * vb;
			}
			double ed = spread(&sp) + u * mag + reduce_err(DT_F32, d, mag, m2, dot) +
				    (tf ? (0x1p-10 + 0x1p-22) * mag : 0);
			s[j] = scale * dot;
			ds[j] = fabs(scale) * ed + se * fabs(dot) + u * fabs(s[j]);
			if (op->nin == 4 && t[3]->dtype == DT_BOOL) {
				/* masked: the fill value, exactly */
				int64_t bi = base[3] + i * st[3][r - 2] + j * st[3][r - 1];
				if (host_get(t[3], bi) != 0) {
					s[j] = op->attr->min;
					ds[j] = 0;
				}
			} else if (op->nin == 4) {
				int64_t bi = base[3] + i * st[3][r - 2] + j * st[3][r - 1];
				s[j] += host_get(t[3], bi);
				ds[j] += err_at(ip, op->in[3], bi) + u * fabs(s[j]);
			}
			if (interp_att_masked(op, i, j)) {
				s[j] = -INFINITY;
				ds[j] = 0;
			}
			mx = fmax(mx, s[j]);
		}
		double l = 0, emax = 0;
		for (int64_t j = 0; j < n; j++) {
			p[j] = exp(s[j] - mx);
			l += p[j];
		}
		if (op->attr->zero_nan && isnan(l)) {
			/* the row's weights are NaN: zero_nan writes 0, exactly */
			for (int64_t c = 0; c < ne; c++) {
				put(rt, row * ne + c, 0);
				e[row * ne + c] = 0;
			}
			continue;
		}
		for (int64_t j = 0; j < n; j++) {
			if (p[j] == 0) {
				ds[j] = 0;
				continue;
			}
			/* eps_j of the scores and exp, kept in ds. The GPU's exp is
			 * ex2.approx of (s - m)·log2 e (4u, and u|s - m| from each of the
			 * two roundings and log2 e), and a weight is also scaled by the
			 * alphas of the key steps after it (as much again, and 4u a step
			 * of 64 keys) */
			double steps = (double)n / 64 + 1;
			ds[j] = expm1(ds[j] + 6 * u * (fabs(s[j]) + fabs(mx)) + 4 * u * steps) + 8 * u;
			emax = fmax(emax, ds[j] + up);
		}
		for (int64_t c = 0; c < ne; c++) {
			double o = 0, sv = 0;
			Spread vs = {0, 0, 0};
			for (int64_t j = 0; j < n; j++) {
				if (p[j] == 0)
					continue;
				int64_t vi = base[2] + j * st[2][r - 2] + c * st[2][r - 1];
				double vv = host_get(t[2], vi);
				double ev = err_at(ip, op->in[2], vi);
				o += p[j] * vv;
				sv += p[j] * fabs(vv);
				spread_add(&vs, p[j] * ev, ev > 0 ? p[j] * fmin(ev,
					   tight_at(ip, op->in[2], vi)) : 0);
			}
			o /= l, sv /= l;
			/* weights p_j (1 + eps_j) in both sums move the mean by sum p_j eps_j
			 * (v_j - o) / l: the scores' and exp's errors come from different
			 * roundings (spread sums them), the weights' rounding to the operands'
			 * dtype is bounded as a whole (nearly equal weights round alike) */
			Spread as = {0, 0, 0};
			double dev = 0;
			for (int64_t j = 0; j < n; j++) {
				if (p[j] == 0)
					continue;
				double dv = fabs(host_get(t[2], base[2] + j * st[2][r - 2] +
						     c * st[2][r - 1]) - o);
				spread_add(&as, p[j] * ds[j] * dv, 0);
				dev += p[j] * dv;
			}
			double a = (spread(&as) + up * dev) / l, ev = spread(&vs) / l;
			double pre = emax < 1 ? a / (1 - emax) : INFINITY;
			/* the sums in f32 (numerator and l) and the division */
			pre += ev + ((double)n + 2) * u * sv * (1 + emax) +
			       (2 * (double)n + 2) * u * fabs(o) + (tf ? (0x1p-10 + 0x1p-22) * sv : 0);
			int64_t oi = row * ne + c;
			put(rt, oi, 0);
			if (!ir_dtype_is_float(out->dtype) || !isfinite(host_get(out, oi))) {
				e[oi] = 0;
				continue;
			}
			finish_r(so, o, host_get(out, oi), pre, 0, true, &e[oi], rt ? &rt[oi] : NULL);
		}
	}
	free(s);
	free(ds);
	free(p);
}

static void bound_conv2d(Interp *ip, const Op *op, const HostTensor *out, double *e, double *rt)
{
	const HostTensor *x = &ip->val[op->in[0]], *w = &ip->val[op->in[1]];
	const Attrs *at = op->attr;
	bool last = at->layout == LAYOUT_NHWC;
	int64_t lc[4], per_group = w->dim[0] / at->groups, cg = w->dim[last ? 3 : 1];
	int64_t kh_n = w->dim[last ? 1 : 2], kw_n = w->dim[last ? 2 : 3];
	int64_t xh = x->dim[last ? 1 : 2], xw = x->dim[last ? 2 : 3];
	double u = unit_round(compute_dtype(out->dtype));
	for (int64_t i = 0; i < out->n; i++) {
		int64_t oc[4];
		interp_coords_of(out, i, oc);
		interp_layout_coords(at, oc, lc);
		int64_t *c = lc;   /* (n, channel, h, w) */
		int64_t c0 = c[1] / per_group * cg, nterm = 0;
		double mag = 0, m2 = 0, s = 0;
		Spread sp = {0, 0, 0};
		for (int64_t ch = 0; ch < cg; ch++)
			for (int64_t kh = 0; kh < kh_n; kh++) {
				int64_t ih = interp_window_pos(at, 0, c[2], kh, at->dilation[0], xh);
				for (int64_t kw = 0; kw < kw_n && ih >= 0; kw++) {
					int64_t iw = interp_window_pos(at, 1, c[3], kw, at->dilation[1], xw);
					if (iw < 0)
						continue;
					int64_t xi = interp_layout_index(at, x, c[0], c0 + ch, ih, iw);
					int64_t wi = interp_layout_index(at, w, c[1], ch, kh, kw);
					double vx = host_get(x, xi), vw = host_get(w, wi);
					double ex = err_at(ip, op->in[0], xi), ew = err_at(ip, op->in[1], wi);
					double rx = tight_at(ip, op->in[0], xi), rw = tight_at(ip, op->in[1], wi);
					double t = scaled(vx, ew) + scaled(vw, ex) + ex * ew;
					spread_add(&sp, t, fmin(t, scaled(vx, rw) + scaled(vw, rx) + rx * rw));
					mag += fabs(vx * vw);
					m2 += vx * vw * vx * vw;
					s += vx * vw;
					nterm++;
				}
			}
		/* --allow-tf32, --allow-3xtf32: as for matmul (a conv on the tiles
		 * is an implicit GEMM, codegen/matmul_conv.c) */
		double tf = mm_operand_err(ip, op, mag);
		if (op->nin > 2) {   /* the bias is one more term */
			double vb = host_get(&ip->val[op->in[2]], c[1]);
			spread_add(&sp, err_at(ip, op->in[2], c[1]), tight_at(ip, op->in[2], c[1]));
			mag += fabs(vb);
			m2 += vb * vb;
			s += vb;
			nterm++;
		}
		double y = host_get(out, i);
		DType st = interp_stored(ip, op->out[0]);
		finish_r(st, s, y,
			 spread(&sp) + tf + u * mag + reduce_err(out->dtype, nterm, mag, m2, s), 0,
			 st != out->dtype, &e[i], rt ? &rt[i] : NULL);
	}
}

static void bound_pool2d(Interp *ip, const Op *op, const HostTensor *out, double *e, double *rt)
{
	const HostTensor *x = &ip->val[op->in[0]];
	const Attrs *at = op->attr;
	bool is_max = op->kind == OP_MAX_POOL2D;
	int64_t c[4];
	for (int64_t i = 0; i < out->n; i++) {
		interp_coords_of(out, i, c);
		double prop = 0, rmax = 0, mag = 0, m2 = 0, s = 0;
		Spread sp = {0, 0, 0};
		int64_t nterm = 0;
		for (int64_t kh = 0; kh < at->kernel[0]; kh++)
			for (int64_t kw = 0; kw < at->kernel[1]; kw++) {
				int64_t xi = interp_pool_at(at, x, c, kh, kw);
				if (xi < 0)
					continue;
				double v = host_get(x, xi), ev = err_at(ip, op->in[0], xi);
				double rv = tight_at(ip, op->in[0], xi);
				prop = fmax(prop, ev);
				rmax = fmax(rmax, rv);
				spread_add(&sp, ev, rv);
				mag += fabs(v);
				m2 += v * v;
				s += v;
				nterm++;
			}
		double y = host_get(out, i);
		put(rt, i, 0);
		if (is_max || !isfinite(y)) {
			e[i] = isfinite(y) ? prop : 0;
			put(rt, i, isfinite(y) ? rmax : 0);
			continue;
		}
		double area = (double)at->kernel[0] * at->kernel[1];
		DType st = interp_stored(ip, op->out[0]);
		finish_r(st, s / area, y,
			 (spread(&sp) + reduce_err(out->dtype, nterm, mag, m2, s)) / area +
			 kernel_err(out->dtype, 1, s / area), 0, st != out->dtype, &e[i],
			 rt ? &rt[i] : NULL);
	}
}

static void bound_gather(Interp *ip, const Op *op, const HostTensor *out, double *e, double *rt)
{
	const HostTensor *x = &ip->val[op->in[0]], *idx = &ip->val[op->in[1]];
	int axis = op->attr->axis;
	int64_t xs[IR_MAX_RANK], c[IR_MAX_RANK];
	interp_contiguous_strides(x, xs);
	for (int64_t i = 0; i < out->n; i++) {
		put(rt, i, 0);
		if (err_at(ip, op->in[1], i) > 0) {
			e[i] = INFINITY;
			continue;
		}
		interp_coords_of(out, i, c);
		c[axis] = host_get_i64(idx, i);
		int64_t off = 0;
		for (int k = 0; k < x->rank; k++)
			off += c[k] * xs[k];
		e[i] = err_at(ip, op->in[0], off);
		put(rt, i, tight_at(ip, op->in[0], off));
	}
}

/* The tight parts of a view or cat's result, moved as its values are. */
static void move_tight(Interp *ip, const Op *op, HostTensor *rout)
{
	Interp ie = *ip;
	HostTensor *tmp = xcalloc((size_t)ip->g->ntensors + 1, sizeof *tmp);
	ie.val = tmp;
	for (int k = 0; k < op->nin; k++) {
		int t = op->in[k];
		tmp[t] = ip->tight[t];
		const HostTensor *v = &ip->val[t];
		Diag d;
		/* zeros (host_alloc zero-fills); without the memory, the whole bound
		 * counts as tight, which only widens it */
		if (!tmp[t].data && host_alloc(&tmp[t], DT_F64, v->rank, v->dim, &d)) {
			memcpy(rout->data, ((const Interp *)ip)->err[op->out[0]].data,
			       (size_t)rout->n * sizeof(double));
			for (int j = 0; j < k; j++)
				if (!ip->tight[op->in[j]].data)
					host_free(&tmp[op->in[j]]);
			free(tmp);
			return;
		}
	}
	if (op->kind == OP_CAT)
		interp_run_cat(&ie, op, rout);
	else
		interp_run_view(&ie, op, rout);
	for (int k = 0; k < op->nin; k++)
		if (!ip->tight[op->in[k]].data && tmp[op->in[k]].data)
			host_free(&tmp[op->in[k]]);
	free(tmp);
}

void interp_tight_tensors(const Graph *g, const DType *store, bool *has)
{
	/* graph inputs are exact, but for constants converted by --precision */
	for (int t = 0; t < g->ntensors; t++)
		has[t] = store && g->tensors[t].producer < 0 && store[t] != g->tensors[t].dtype;
	for (int i = 0; i < g->nops; i++) {
		const Op *op = &g->ops[i];
		if (op->kind == OP_SYNC)
			continue;
		DType dt = store ? store[op->out[0]] : g->tensors[op->out[0]].dtype;
		bool h = dt == DT_F16 || dt == DT_BF16;
		for (int k = 0; k < op->nin; k++)
			h = h || has[op->in[k]];
		has[op->out[0]] = h;
	}
}

void bounds_op(Interp *ip, const Op *op, const HostTensor *out, HostTensor *eout,
	       HostTensor *rout)
{
	double *e = eout->data, *rt = rout->data;   /* rt NULL: no tight part kept */
	switch (ir_ops[op->kind].family) {
	case FAM_BINARY: case FAM_SCALAR: case FAM_UNARY: case FAM_COMPARE:
	case FAM_SELECT: case FAM_CAST:
		bound_elementwise(ip, op, out, e, rt);
		return;
	case FAM_VIEW: case FAM_JOIN:
		if (op->kind == OP_GATHER) {
			bound_gather(ip, op, out, e, rt);
		} else {
			/* errors move with the data: the same view or cat, on the errors
			 * (and on the tight parts, an operand without them as zeros) */
			Interp ie = *ip;
			ie.val = ip->err;
			if (op->kind == OP_CAT)
				interp_run_cat(&ie, op, eout);
			else
				interp_run_view(&ie, op, eout);
			if (rt)
				move_tight(ip, op, rout);
		}
		return;
	case FAM_REDUCE: bound_reduce(ip, op, out, e, rt); return;
	case FAM_MATMUL:
		if (op->kind == OP_ATTENTION)
			bound_attention(ip, op, out, e, rt);
		else
			bound_matmul(ip, op, out, e, rt);
		return;
	case FAM_MODULE:
		if (op->kind == OP_CONV2D)
			bound_conv2d(ip, op, out, e, rt);
		else
			bound_pool2d(ip, op, out, e, rt);
		return;
	case FAM_CONTROL: return;
	}
	die("bad op family");
}
