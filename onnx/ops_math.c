/* ops_math.c: ONNX ops that are arithmetic composed from the builders
 * (builders.h; docs/onnx.md lists the mapping): the hyperbolic functions and Atan,
 * Asin, Acos; Shrink; MeanVarianceNormalization and LRN; the losses
 * (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss); the window functions
 * (Hann, Hamming, Blackman); QuantizeLinear, DequantizeLinear and
 * DynamicQuantizeLinear. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "builders.h"
#include "ops_math.h"

static const double PI = 3.14159265358979323846;

/* ---- elementwise ---------------------------------------------------------------------- */

/* Sinh, Cosh, Asinh, Acosh, Atanh from exp, log and sqrt (arg selects). */
HANDLER(h_hyperbolic)
{
	NEED(1);
	Val *x = in[0];
	if (!ir_dtype_is_float(x->dt))
		return imp_fail(m, "%s of %s is not supported", m->op_type, ir_dtype_name(x->dt));
	switch (h->arg) {
	case 0:   /* sinh = (e^x - e^-x) / 2 */
	case 1: { /* cosh = (e^x + e^-x) / 2 */
		Val *e = ob_un(m, OP_EXP, x), *f = ob_un(m, OP_EXP, ob_un(m, OP_NEG, x));
		OUT(ob_sc(m, OP_MUL_SCALAR, ob_bin(m, h->arg ? OP_ADD : OP_SUB, e, f), 0.5));
	}
	case 2: { /* asinh = sign(x) log(|x| + sqrt(x^2 + 1)): no cancellation for x < 0 */
		Val *a = ob_un(m, OP_ABS, x);
		Val *r = ob_un(m, OP_SQRT, ob_sc(m, OP_ADD_SCALAR, ob_bin(m, OP_MUL, a, a), 1));
		OUT(ob_bin(m, OP_MUL, ob_un(m, OP_SIGN, x), ob_un(m, OP_LOG, ob_bin(m, OP_ADD, a, r))));
	}
	case 3: { /* acosh = log(x + sqrt(x^2 - 1)) */
		Val *r = ob_un(m, OP_SQRT, ob_sc(m, OP_SUB_SCALAR, ob_bin(m, OP_MUL, x, x), 1));
		OUT(ob_un(m, OP_LOG, ob_bin(m, OP_ADD, x, r)));
	}
	default: { /* atanh = (log1p(x) - log1p(-x)) / 2 */
		Val *p = ob_un(m, OP_LOG1P, x), *q = ob_un(m, OP_LOG1P, ob_un(m, OP_NEG, x));
		OUT(ob_sc(m, OP_MUL_SCALAR, ob_bin(m, OP_SUB, p, q), 0.5));
	}
	}
}

/* Shrink: x + bias below -lambd, x - bias above lambd, 0 between. */
HANDLER(h_shrink)
{
	NEED(1);
	Val *x = in[0];
	double l = ob_af(m, "lambd", 0.5), b = ob_af(m, "bias", 0);
	Val *z = ob_kfull(m, x->dt, 0, NULL, 0);
	Val *lo = ob_where3(m, ob_sc(m, OP_LT_SCALAR, x, -l), ob_sc(m, OP_ADD_SCALAR, x, b), z);
	OUT(ob_where3(m, ob_sc(m, OP_GT_SCALAR, x, l), ob_sc(m, OP_SUB_SCALAR, x, b), lo));
}

/* ---- normalization ----------------------------------------------------------------- */

/* MeanVarianceNormalization: (x - mean) / (sqrt(var) + 1e-9) over axes. */
HANDLER(h_mvn)
{
	NEED(1);
	Val *x = in[0];
	if (ob_need_float(m, x))
		return -1;
	int64_t ax[IR_MAX_RANK] = {0, 2, 3};
	int na = ob_aints(m, "axes", ax, IR_MAX_RANK);
	if (na == -2)
		return -1;
	if (na < 0)
		na = 3;
	bool on[IR_MAX_RANK] = {false};
	for (int i = 0; i < na; i++) {
		if (ob_norm_axis(m, &ax[i], x->rank))
			return -1;
		on[ax[i]] = true;
	}
	Val *d = ob_bin(m, OP_SUB, x, ob_reduce_axes(m, OP_MEAN, x, on, true));
	Val *var = ob_reduce_axes(m, OP_MEAN, ob_bin(m, OP_MUL, d, d), on, true);
	OUT(ob_bin(m, OP_DIV, d, ob_sc(m, OP_ADD_SCALAR, ob_un(m, OP_SQRT, var), 1e-9)));
}

/* LRN: x / (bias + alpha / size * sum of squares over size channels)^beta, the
 * window sum as size shifted slices of the zero-padded squares. */
HANDLER(h_lrn)
{
	NEED(1);
	Val *x = in[0];
	int64_t size = ob_ai(m, "size", 0);
	if (x->rank < 3 || !ir_dtype_is_float(x->dt))
		return imp_fail(m, "LRN takes a float input of rank 3 or more");
	if (size < 1 || size > 64)
		return imp_fail(m, "not supported yet: LRN of size %lld (1 to 64 are)",
				(long long)size);
	double alpha = ob_af(m, "alpha", 1e-4), beta = ob_af(m, "beta", 0.75), bias = ob_af(m, "bias", 1);
	int64_t lo = (size - 1) / 2, hi = size - 1 - lo, c = x->dim[1];
	Val *sq = ob_zpad(m, ob_bin(m, OP_MUL, x, x), 1, lo, hi);
	Val *s = NULL;
	for (int64_t i = 0; i < size && sq; i++) {
		Val *t = ob_slice1(m, sq, 1, i, i + c);
		s = s ? ob_bin(m, OP_ADD, s, t) : t;
	}
	Val *den = ob_sc(m, OP_ADD_SCALAR, ob_sc(m, OP_MUL_SCALAR, s, alpha / (double)size), bias);
	OUT(ob_bin(m, OP_MUL, x, ob_sc(m, OP_POW_SCALAR, den, -beta)));
}

/* ---- losses ------------------------------------------------------------------------ */

/* NegativeLogLikelihoodLoss of log-probabilities x [N, C, d..] at targets t [N, d..]
 * with optional class weights w [C]: -x[n, t, d..] * w[t], 0 where t is
 * ignore_index; reduced to a sum, or a mean weighted by the picked w. */
static Val *nll(Imp *m, Val *x, Val *t, Val *w, const char *red)
{
	if (!x || !t)
		return NULL;
	if (x->rank < 2 || t->rank != x->rank - 1 || !ir_dtype_is_float(x->dt) ||
	    !ir_dtype_is_int(t->dt))
		return imp_fail(m, "input [N, C, d..] (float) and target [N, d..] (int) expected"),
		       NULL;
	for (int i = 0; i < t->rank; i++)
		if (t->dim[i] != x->dim[i ? i + 1 : 0])
			return imp_fail(m, "target dims do not match the input's"), NULL;
	bool none = !strcmp(red, "none"), sum = !strcmp(red, "sum");
	if (!none && !sum && strcmp(red, "mean"))
		return imp_fail(m, "reduction '%s' is not supported", red), NULL;
	int64_t c = x->dim[1];
	const Onnx__AttributeProto *iia = ob_attr(m, "ignore_index");
	Val *tt = ob_cast(m, t, DT_I64), *mask = NULL;
	if (iia) {
		mask = ob_sc(m, OP_EQ_SCALAR, tt, (double)iia->i);
		tt = ob_where3(m, mask, ob_kfull(m, DT_I64, 0, NULL, 0), tt);
	}
	/* the picked log-probability */
	int64_t d[IR_MAX_RANK];
	d[0] = x->dim[0];
	d[1] = 1;
	for (int i = 2; i < x->rank; i++)
		d[i] = x->dim[i];
	Val *gin[2] = {x, ob_reshape(m, tt, x->rank, d)};
	if (!gin[1])
		return NULL;
	Attrs at = imp_attrs(OP_GATHER);
	at.axis = 1;
	Val *pick = ob_reshape(m, imp_emit(m, OP_GATHER, gin, 2, &at), t->rank, t->dim);
	/* the weight of each target */
	Val *wt = NULL;
	if (w) {
		if (w->rank != 1 || w->dim[0] != c || w->dt != x->dt)
			return imp_fail(m, "weight must be [C] of the input's dtype"), NULL;
		int64_t q = ob_count(t);
		Val *win[2] = {w, ob_reshape(m, tt, 1, (int64_t[]){q})};
		if (!win[1])
			return NULL;
		Attrs a0 = imp_attrs(OP_GATHER);
		a0.axis = 0;
		wt = ob_reshape(m, imp_emit(m, OP_GATHER, win, 2, &a0), t->rank, t->dim);
		if (mask)
			wt = ob_where3(m, mask, ob_kfull(m, x->dt, 0, NULL, 0), wt);
	} else if (mask) {
		wt = ob_where3(m, mask, ob_kfull(m, x->dt, 0, NULL, 0), ob_kfull(m, x->dt, 0, NULL, 1));
	}
	Val *loss = ob_un(m, OP_NEG, wt ? ob_bin(m, OP_MUL, pick, wt) : pick);
	if (none || !loss)
		return loss;
	bool on[IR_MAX_RANK];
	for (int i = 0; i < IR_MAX_RANK; i++)
		on[i] = true;
	Val *s = ob_reduce_axes(m, OP_SUM, loss, on, false);
	if (sum)
		return s;
	if (!wt)
		return ob_sc(m, OP_DIV_SCALAR, s, (double)ob_count(t));
	return ob_bin(m, OP_DIV, s, ob_reduce_axes(m, OP_SUM, wt, on, false));
}

HANDLER(h_nllloss)
{
	NEED(2);
	char red[16];
	ob_astr(m, "reduction", red, sizeof red, "mean");
	OUT(nll(m, in[0], in[1], nin > 2 ? in[2] : NULL, red));
}

/* SoftmaxCrossEntropyLoss: log_softmax over axis 1 (max_dim, sub, exp, sum, log,
 * sub), then NegativeLogLikelihoodLoss; the second output is the log_softmax. */
HANDLER(h_sce_loss)
{
	if (ob_need_in(m, in, nin, 2))
		return -1;
	if (nout > 2)
		return imp_fail(m, "output 2 and after are not supported");
	Val *x = in[0];
	if (x->rank < 2 || !ir_dtype_is_float(x->dt))
		return imp_fail(m, "scores must be float [N, C, d..]");
	Val *sh = ob_bin(m, OP_SUB, x, ob_reduce(m, OP_MAX_DIM, x, 1));
	Val *lp = ob_bin(m, OP_SUB, sh, ob_un(m, OP_LOG, ob_reduce(m, OP_SUM, ob_un(m, OP_EXP, sh), 1)));
	char red[16];
	ob_astr(m, "reduction", red, sizeof red, "mean");
	out[0] = nll(m, lp, in[1], nin > 2 ? in[2] : NULL, red);
	if (nout > 1)
		out[1] = lp;
	return out[0] && (nout < 2 || out[1]) ? 0 : -1;
}

/* ---- Atan, Asin, Acos ---------------------------------------------------------------- */

/* atan on [-1, 1]: two half-angle steps (u = t / (1 + sqrt(1 + t^2)) halves the
 * angle) bring |u| under tan(pi/8), where 9 terms of the series are exact to
 * 1e-9; times 4. */
static Val *atan_unit(Imp *m, Val *t)
{
	for (int i = 0; i < 2; i++)
		t = ob_bin(m, OP_DIV, t, ob_sc(m, OP_ADD_SCALAR,
					 ob_un(m, OP_SQRT, ob_sc(m, OP_ADD_SCALAR, ob_bin(m, OP_MUL, t, t), 1)),
					 1));
	Val *u2 = ob_bin(m, OP_MUL, t, t);
	/* u (1 - u2/3 + u2^2/5 - ...): Horner from the 17th power down */
	Val *p = NULL;
	for (int k = 8; k >= 0; k--) {
		double c = (k % 2 ? -1.0 : 1.0) / (double)(2 * k + 1);
		p = p ? ob_sc(m, OP_ADD_SCALAR, ob_bin(m, OP_MUL, p, u2), c)
		      : ob_kfull(m, t ? t->dt : DT_F32, 0, NULL, c);
	}
	return ob_sc(m, OP_MUL_SCALAR, ob_bin(m, OP_MUL, t, p), 4);
}

/* atan(x) = atan_unit(x) for |x| <= 1, sign(x) pi/2 - atan_unit(1/x) beyond */
static Val *atan_full(Imp *m, Val *x)
{
	Val *big = ob_sc(m, OP_GT_SCALAR, ob_un(m, OP_ABS, x), 1);
	Val *in_ = ob_where3(m, big, ob_un(m, OP_RECIP, x), x);
	Val *a = atan_unit(m, in_);
	Val *far = ob_bin(m, OP_SUB, ob_sc(m, OP_MUL_SCALAR, ob_un(m, OP_SIGN, x), PI / 2), a);
	return ob_where3(m, big, far, a);
}

HANDLER(h_arc)
{
	NEED(1);
	Val *x = in[0];
	if (!ir_dtype_is_float(x->dt))
		return imp_fail(m, "%s of %s is not supported", m->op_type, ir_dtype_name(x->dt));
	if (h->arg == 0)
		OUT(atan_full(m, x));
	/* asin(x) = 2 atan(x / (1 + sqrt(1 - x^2))): the argument stays in [-1, 1] */
	Val *r = ob_un(m, OP_SQRT, ob_sc(m, OP_ADD_SCALAR, ob_un(m, OP_NEG, ob_bin(m, OP_MUL, x, x)), 1));
	Val *as = ob_sc(m, OP_MUL_SCALAR,
		     atan_unit(m, ob_bin(m, OP_DIV, x, ob_sc(m, OP_ADD_SCALAR, r, 1))), 2);
	if (h->arg == 1)
		OUT(as);
	/* acos = pi/2 - asin */
	OUT(ob_sc(m, OP_ADD_SCALAR, ob_un(m, OP_NEG, as), PI / 2));
}

/* ---- windows ------------------------------------------------------------------------- */

/* HannWindow, HammingWindow, BlackmanWindow: constants a0 - a1 cos(2 pi n / N)
 * + a2 cos(4 pi n / N), N = size (periodic) or size - 1. */
HANDLER(h_window)
{
	NEED(1);
	double sz;
	if (ob_scalar_of(m, in[0], "size", &sz))
		return -1;
	int64_t n = (int64_t)sz;
	if (n < 1 || n > SHAPE_CONST_MAX)
		return imp_fail(m, "window size %lld is not supported (1 to %d)", (long long)n,
				SHAPE_CONST_MAX);
	int dt = onnx_dtype((int)ob_ai(m, "output_datatype", 1));
	if (dt < 0)
		return imp_fail(m, "output_datatype %lld is not supported",
				(long long)ob_ai(m, "output_datatype", 1));
	double N = ob_ai(m, "periodic", 1) ? (double)n : (double)(n - 1);
	static const double a[3][3] = {{0.5, 0.5, 0}, {25.0 / 46, 21.0 / 46, 0}, {0.42, 0.5, 0.08}};
	const double *c = a[h->arg];
	Val *w = ob_kfull(m, (DType)dt, 1, (int64_t[]){n}, 0);
	for (int64_t i = 0; w && i < n; i++)
		host_set(&w->k, i, c[0] - c[1] * cos(2 * PI * (double)i / N) +
				   c[2] * cos(4 * PI * (double)i / N));
	OUT(w);
}

/* ---- quantization ---------------------------------------------------------------------- */

/* A scale or zero point: a scalar, or [C] along axis of x as [1.., C, ..1]. */
static Val *per_axis(Imp *m, Val *p, const Val *x, int64_t axis)
{
	if (!p || p->rank == 0 || (p->rank == 1 && p->dim[0] == 1))
		return p ? ob_reshape(m, p, 0, NULL) : NULL;
	if (p->rank != 1)
		return imp_fail(m, "not supported yet: a scale or zero point of rank %d (blocked "
				"quantization); a scalar or one per channel of axis are", p->rank),
		       NULL;
	if (ob_norm_axis(m, &axis, x->rank))
		return NULL;
	if (p->dim[0] != x->dim[axis])
		return imp_fail(m, "a scale or zero point of %lld values for axis %lld of %lld",
				(long long)p->dim[0], (long long)axis, (long long)x->dim[axis]), NULL;
	int64_t d[IR_MAX_RANK];
	for (int i = 0; i < x->rank; i++)
		d[i] = i == axis ? p->dim[0] : 1;
	return ob_reshape(m, p, x->rank, d);
}

/* round(x / scale) + zero point, clamped to the zero point's type */
HANDLER(h_quantize)
{
	NEED(2);
	Val *x = in[0];
	int64_t axis = ob_ai(m, "axis", 1);
	if (ob_ai(m, "block_size", 0))
		return imp_fail(m, "not supported yet: blocked quantization (block_size)");
	Val *zp = nin > 2 ? in[2] : NULL;
	DType out_t = zp ? zp->dt : DT_U8;
	if (!zp && ob_attr(m, "output_dtype")) {
		int t = onnx_dtype((int)ob_ai(m, "output_dtype", 2));
		out_t = t < 0 ? DT_COUNT : (DType)t;
	}
	double lo, hi;
	switch (out_t) {
	case DT_U8: lo = 0, hi = 255; break;
	case DT_I8: lo = -128, hi = 127; break;
	case DT_I16: lo = -32768, hi = 32767; break;
	case DT_I32: lo = 0, hi = 65535; break;   /* uint16, held in i32 */
	default:
		return imp_fail(m, "not supported yet: quantizing to %s (uint8, int8, int16 and "
				"uint16 are)", out_t == DT_COUNT ? "that type" : ir_dtype_name(out_t));
	}
	DType ft = ir_dtype_is_float(x->dt) ? x->dt : DT_F32;
	Val *s = per_axis(m, ob_cast(m, in[1], ft), x, axis);
	Val *q = ob_un(m, OP_ROUND, ob_bin(m, OP_DIV, ob_cast(m, x, ft), s));
	if (zp)
		q = ob_bin(m, OP_ADD, q, per_axis(m, ob_cast(m, zp, ft), x, axis));
	OUT(ob_cast(m, ob_clampv(m, q, lo, hi), out_t));
}

/* (x - zero point) * scale */
HANDLER(h_dequantize)
{
	NEED(2);
	Val *x = in[0];
	int64_t axis = ob_ai(m, "axis", 1);
	if (ob_ai(m, "block_size", 0))
		return imp_fail(m, "not supported yet: blocked quantization (block_size)");
	DType ft = in[1]->dt;
	if (!ir_dtype_is_float(ft))
		return imp_fail(m, "the scale must be a float tensor");
	Val *v = ob_cast(m, x, ft);
	if (nin > 2 && in[2])
		v = ob_bin(m, OP_SUB, v, per_axis(m, ob_cast(m, in[2], ft), x, axis));
	OUT(ob_bin(m, OP_MUL, v, per_axis(m, in[1], x, axis)));
}

/* DynamicQuantizeLinear: uint8 with scale (max(0, max x) - min(0, min x)) / 255 and
 * zero point round(-min / scale) clamped to [0, 255]. */
HANDLER(h_dyn_quantize)
{
	if (ob_need_in(m, in, nin, 1))
		return -1;
	if (nout > 3)
		return imp_fail(m, "output 3 and after are not supported");
	Val *x = in[0];
	if (x->dt != DT_F32)
		return imp_fail(m, "DynamicQuantizeLinear takes f32, not %s", ir_dtype_name(x->dt));
	bool on[IR_MAX_RANK];
	for (int i = 0; i < IR_MAX_RANK; i++)
		on[i] = true;
	Val *mx = ob_clampv(m, ob_reduce_axes(m, OP_MAX_DIM, x, on, false), 0, INFINITY);
	Val *mn = ob_clampv(m, ob_reduce_axes(m, OP_MIN_DIM, x, on, false), -INFINITY, 0);
	Val *s = ob_sc(m, OP_DIV_SCALAR, ob_bin(m, OP_SUB, mx, mn), 255);
	Val *zf = ob_clampv(m, ob_un(m, OP_ROUND, ob_bin(m, OP_DIV, ob_un(m, OP_NEG, mn), s)), 0, 255);
	Val *q = ob_clampv(m, ob_bin(m, OP_ADD, ob_un(m, OP_ROUND, ob_bin(m, OP_DIV, x, s)), zf), 0, 255);
	out[0] = ob_cast(m, q, DT_U8);
	if (nout > 1)
		out[1] = s;
	if (nout > 2)
		out[2] = ob_cast(m, zf, DT_U8);
	for (int i = 0; i < nout; i++)
		if (!out[i])
			return -1;
	return 0;
}
