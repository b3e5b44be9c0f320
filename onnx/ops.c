/* ops.c: the table of ONNX op handlers, and the handlers of the common ops, each
 * decomposing its op into fusec's primitive ops (docs/onnx.md lists the mapping);
 * the other handlers live in ops_index.c, ops_math.c and ops_resize.c. Handlers
 * build with the builders of builders.c; every builder goes through imp_emit, so
 * an op whose operands are constants is folded at import time. Operands ONNX
 * passes as tensors but fusec takes as attributes (shapes, axes, slice bounds,
 * pads) must be constants after folding; a computed one is an error naming it.
 * Anything an op allows that fusec cannot express yet (asymmetric padding,
 * ceil_mode, a second output) is an error, never a guess. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "ops.h"
#include "ops_index.h"
#include "ops_math.h"
#include "ops_resize.h"

/* ---- elementwise ------------------------------------------------------------- */

H(h_binary)
{
	NEED(2);
	if (m->opset < 7 && ob_ai(m, "broadcast", 0) && ob_attr(m, "axis"))
		return imp_fail(m, "legacy broadcasting with an axis (opset < 7) is not supported");
	OUT(ob_bin(m, h->kind, in[0], in[1]));
}

H(h_pow)
{
	NEED(2);
	Val *x = in[0], *y = in[1];
	if (y->is_const && y->k.n == 1 && y->rank <= x->rank && !x->is_const) {
		double e = host_get(&y->k, 0);
		if (e == 1)
			OUT(x);
		if (e == 2)
			OUT(ob_bin(m, OP_MUL, x, x));
		if (e == 0.5 && ir_dtype_is_float(x->dt))
			OUT(ob_un(m, OP_SQRT, x));
		OUT(ob_sc(m, OP_POW_SCALAR, x, e));
	}
	if (ir_dtype_is_float(x->dt))
		OUT(ob_bin(m, OP_POWF, x, ob_cast(m, y, x->dt)));
	OUT(ob_bin(m, OP_POW, x, ob_cast(m, y, x->dt)));
}

H(h_variadic)
{
	if (nin < 1 || ob_one_output(m, nout))
		return imp_fail(m, "needs at least one input");
	if (!in[0])
		return imp_fail(m, "input 0 is missing");
	Val *acc = in[0];
	for (int i = 1; i < nin && acc; i++) {
		if (!in[i])
			return imp_fail(m, "input %d is missing", i);
		acc = ob_bin(m, h->kind, acc, in[i]);
	}
	if (acc && h->arg)  /* Mean */
		acc = ob_sc(m, OP_DIV_SCALAR, acc, nin);
	OUT(acc);
}

H(h_unary)
{
	NEED(1);
	OUT(ob_un(m, h->kind, in[0]));
}

H(h_identity)
{
	if (ob_need_in(m, in, nin, 1))
		return -1;
	if (nout > 1 && !h->arg)
		return ob_one_output(m, nout);
	if (h->arg && nin > 2 && in[2]) {  /* Dropout: random unless inference or ratio 0 */
		double t = 0, ratio = 0.5;
		if (ob_scalar_of(m, in[2], "training_mode", &t))
			return -1;
		if (t != 0 && in[1] && ob_scalar_of(m, in[1], "ratio", &ratio))
			return -1;
		if (t != 0 && ratio != 0)
			return imp_fail(m, "Dropout in training mode with a ratio above 0 (random) "
				       "is not supported");
	}
	out[0] = in[0];
	if (nout > 1)  /* Dropout's mask: every element kept */
		out[1] = ob_kfull(m, DT_BOOL, in[0]->rank, in[0]->dim, 1);
	return nout > 1 && !out[1] ? -1 : 0;
}

H(h_mod)
{
	NEED(2);
	Val *a = in[0], *b = in[1];
	if (!ob_ai(m, "fmod", 0))
		OUT(ob_bin(m, OP_REM, a, b));
	/* C fmod: a - trunc(a / b) * b (integer division truncates already) */
	Val *q = ob_bin(m, OP_DIV, a, b);
	if (ir_dtype_is_float(a->dt))
		q = ob_un(m, OP_TRUNC, q);
	OUT(ob_bin(m, OP_SUB, a, ob_bin(m, OP_MUL, q, b)));
}

H(h_tan)
{
	NEED(1);
	OUT(ob_bin(m, OP_DIV, ob_un(m, OP_SIN, in[0]), ob_un(m, OP_COS, in[0])));
}

H(h_isinf)
{
	NEED(1);
	bool pos = ob_ai(m, "detect_positive", 1), neg = ob_ai(m, "detect_negative", 1);
	if (pos && neg)
		OUT(ob_un(m, OP_IS_INF, in[0]));
	OUT(ob_sc(m, OP_EQ_SCALAR, in[0], pos ? INFINITY : -INFINITY));
}

/* ---- activations ------------------------------------------------------------- */

static Val *clamp1(Imp *m, OpKind k, Val *x, double v);

static Val *hard_sigmoid(Imp *m, Val *x, double alpha, double beta)
{
	return ob_clampv(m, ob_sc(m, OP_ADD_SCALAR, ob_sc(m, OP_MUL_SCALAR, x, alpha), beta), 0, 1);
}

static Val *zero_like(Imp *m, Val *x)
{
	int64_t one[IR_MAX_RANK] = {1, 1, 1, 1, 1, 1, 1, 1};
	return ob_kfull(m, x->dt, x->rank, one, 0);
}

H(h_act)
{
	NEED(1);
	Val *x = in[0];
	if (ob_need_float(m, x))
		return -1;
	double alpha, beta;
	Val *neg = NULL;
	switch (h->arg) {
	case 0: /* HardSigmoid */
		OUT(hard_sigmoid(m, x, ob_af(m, "alpha", 0.2), ob_af(m, "beta", 0.5)));
	case 1: /* HardSwish */
		OUT(ob_bin(m, OP_MUL, x, hard_sigmoid(m, x, 1.0 / 6, 0.5)));
	case 2: /* LeakyRelu */
		alpha = ob_af(m, "alpha", 0.01);
		OUT(ob_where3(m, ob_sc(m, OP_LT_SCALAR, x, 0), ob_sc(m, OP_MUL_SCALAR, x, alpha), x));
	case 3: /* Elu */
		alpha = ob_af(m, "alpha", 1.0);
		neg = ob_sc(m, OP_MUL_SCALAR, ob_sc(m, OP_SUB_SCALAR, ob_un(m, OP_EXP, x), 1), alpha);
		OUT(ob_where3(m, ob_sc(m, OP_LT_SCALAR, x, 0), neg, x));
	case 4: /* Selu */
		alpha = ob_af(m, "alpha", 1.67326319217681884765625);
		beta = ob_af(m, "gamma", 1.05070102214813232421875);
		neg = ob_sc(m, OP_MUL_SCALAR, ob_sc(m, OP_SUB_SCALAR, ob_un(m, OP_EXP, x), 1), alpha);
		OUT(ob_sc(m, OP_MUL_SCALAR, ob_where3(m, ob_sc(m, OP_LE_SCALAR, x, 0), neg, x), beta));
	case 5: /* Softplus: log(1 + exp(x)) */
		OUT(ob_un(m, OP_LOG1P, ob_un(m, OP_EXP, x)));
	case 6: /* Softsign */
		OUT(ob_bin(m, OP_DIV, x, ob_sc(m, OP_ADD_SCALAR, ob_un(m, OP_ABS, x), 1)));
	case 7: /* Mish: x tanh(softplus(x)) */
		OUT(ob_bin(m, OP_MUL, x, ob_un(m, OP_TANH, ob_un(m, OP_LOG1P, ob_un(m, OP_EXP, x)))));
	case 8: /* ThresholdedRelu */
		alpha = ob_af(m, "alpha", 1.0);
		OUT(ob_where3(m, ob_sc(m, OP_GT_SCALAR, x, alpha), x, zero_like(m, x)));
	case 9: { /* Gelu */
		char ap[16];
		ob_astr(m, "approximate", ap, sizeof ap, "none");
		if (strcmp(ap, "tanh") && strcmp(ap, "none"))
			return imp_fail(m, "approximate '%s' is not 'none' or 'tanh'", ap);
		OUT(ob_gelu(m, x, strcmp(ap, "tanh") ? GELU_NONE : GELU_TANH));
	}
	case 10: /* Celu: max(0,x) + min(0, alpha (exp(x/alpha) - 1)) */
		alpha = ob_af(m, "alpha", 1.0);
		neg = ob_sc(m, OP_MUL_SCALAR,
			 ob_sc(m, OP_SUB_SCALAR, ob_un(m, OP_EXP, ob_sc(m, OP_DIV_SCALAR, x, alpha)), 1),
			 alpha);
		OUT(ob_bin(m, OP_ADD, ob_un(m, OP_RELU, x), clamp1(m, OP_CLAMP_MAX, neg, 0)));
	}
	return imp_fail(m, "internal: activation %d", h->arg);
}

static Val *clamp1(Imp *m, OpKind k, Val *x, double v)
{
	if (!x)
		return NULL;
	Attrs at = imp_attrs(k);
	if (k == OP_CLAMP_MIN)
		at.min = v;
	else
		at.max = v;
	return imp_emit(m, k, &x, 1, &at);
}

H(h_prelu)
{
	NEED(2);
	Val *x = in[0];
	OUT(ob_where3(m, ob_sc(m, OP_LT_SCALAR, x, 0), ob_bin(m, OP_MUL, x, in[1]), x));
}

H(h_clip)
{
	if (ob_need_in(m, in, nin, 1) || ob_one_output(m, nout))
		return -1;
	Val *x = in[0];
	Val *lo = nin > 1 ? in[1] : NULL, *hi = nin > 2 ? in[2] : NULL;
	if (ob_attr(m, "min") || ob_attr(m, "max"))
		return imp_fail(m, "Clip with min/max attributes (opset < 11) is not supported");
	if (lo && !lo->is_const)
		x = ob_bin(m, OP_MAX, x, lo), lo = NULL;
	if (hi && !hi->is_const)
		x = ob_bin(m, OP_MIN, x, hi), hi = NULL;
	double a = 0, b = 0;
	if ((lo && ob_scalar_of(m, lo, "min", &a)) || (hi && ob_scalar_of(m, hi, "max", &b)))
		return -1;
	if (lo && hi && a <= b)
		OUT(ob_clampv(m, x, a, b));
	if (lo)
		x = clamp1(m, OP_CLAMP_MIN, x, a);
	if (hi)
		x = clamp1(m, OP_CLAMP_MAX, x, b);
	OUT(x);
}

H(h_cast)
{
	NEED(1);
	if (h->arg) {  /* CastLike */
		if (ob_need_in(m, in, nin, 2))
			return -1;
		OUT(ob_cast(m, in[0], in[1]->dt));
	}
	int64_t to = ob_ai(m, "to", -1);
	int t = onnx_dtype((int)to);
	if (t < 0)
		return imp_fail(m, "cast to %s is not supported", onnx_elem_name((int)to));
	bool wide = to == ONNX__TENSOR_PROTO__DATA_TYPE__UINT16 ||
		    to == ONNX__TENSOR_PROTO__DATA_TYPE__UINT32;
	if (wide && in[0]->dt != DT_U8 && in[0]->dt != DT_BOOL)
		return imp_fail(m, "cast from %s to %s is not supported yet (fusec holds %s in a "
				"wider signed type, where negative values would not wrap)",
				ir_dtype_name(in[0]->dt), onnx_elem_name((int)to),
				onnx_elem_name((int)to));
	OUT(ob_cast(m, in[0], (DType)t));
}

/* ---- shapes ------------------------------------------------------------------ */

H(h_reshape)
{
	NEED(2);
	Val *x = in[0];
	int64_t s[IR_MAX_RANK];
	int n = ob_ints_of(m, in[1], "the shape", s, IR_MAX_RANK);
	if (n < 0)
		return -1;
	bool allowzero = ob_ai(m, "allowzero", 0);
	for (int i = 0; i < n; i++) {
		if (s[i] == 0 && !allowzero) {
			if (i >= x->rank)
				return imp_fail(m, "shape entry %d is 0 but the input has rank %d", i,
						x->rank);
			s[i] = x->dim[i];
		} else if (s[i] == 0 || s[i] < -1) {
			return imp_fail(m, "shape entry %d is %lld (empty tensors are not supported)",
					i, (long long)s[i]);
		}
	}
	int minus = -1;
	int64_t known = 1;
	for (int i = 0; i < n; i++)
		if (s[i] == -1)
			minus = i;
		else if (__builtin_mul_overflow(known, s[i], &known))
			return imp_fail(m, "the shape's sizes multiply past 64 bits");
	if (minus >= 0 && known > 0)
		s[minus] = ob_count(x) / known;
	/* a matrix regrouped above its last dim (GPT-2's view after addmm) stays flat,
	 * so the elementwise ops after the view can still be the matmul's epilogue */
	Val *f = x->flat ? x->flat : x->rank == 2 && !x->is_const ? x : NULL;
	if (f && n >= 2 && s[n - 1] == f->dim[1] && ob_count(x) == ob_count(f) &&
	    !(n == 2 && s[0] == f->dim[0]))
		OUT(imp_flat(m, f, n, s));
	OUT(ob_reshape(m, x, n, s));
}

H(h_flatten)
{
	NEED(1);
	Val *x = in[0];
	int64_t axis = ob_ai(m, "axis", 1);
	if (axis < 0)
		axis += x->rank;
	if (axis < 0 || axis > x->rank)
		return imp_fail(m, "axis %lld is out of range", (long long)axis);
	int64_t d[2] = {1, 1};
	for (int i = 0; i < x->rank; i++)
		if (__builtin_mul_overflow(d[i >= axis], x->dim[i], &d[i >= axis]))
			return imp_fail(m, "the flattened dims multiply past 64 bits");
	OUT(ob_reshape(m, x, 2, d));
}

/* Axes from the attribute (older opsets) or the second input. -1 absent. */
static int axes_of(Imp *m, Val **in, int nin, int which, int64_t *ax, int max)
{
	int n = ob_aints(m, "axes", ax, max);
	if (n == -2)
		return -2;
	if (n >= 0)
		return n;
	if (nin > which && in[which])
		return ob_ints_of(m, in[which], "axes", ax, max) < 0 ? -2 : (int)in[which]->k.n;
	return -1;
}

H(h_squeeze)
{
	NEED(1);
	Val *x = in[0];
	int64_t ax[IR_MAX_RANK];
	int n = axes_of(m, in, nin, 1, ax, IR_MAX_RANK);
	if (n == -2)
		return -1;
	bool drop[IR_MAX_RANK] = {false};
	for (int i = 0; i < n; i++) {
		if (ob_norm_axis(m, &ax[i], x->rank))
			return -1;
		if (x->dim[ax[i]] != 1)
			return imp_fail(m, "cannot squeeze axis %lld of size %lld", (long long)ax[i],
					(long long)x->dim[ax[i]]);
		drop[ax[i]] = true;
	}
	int64_t d[IR_MAX_RANK];
	int r = 0;
	for (int i = 0; i < x->rank; i++)
		if (!(n < 0 ? x->dim[i] == 1 : drop[i]))
			d[r++] = x->dim[i];
	OUT(ob_reshape(m, x, r, d));
}

H(h_unsqueeze)
{
	NEED(1);
	Val *x = in[0];
	int64_t ax[IR_MAX_RANK];
	int n = axes_of(m, in, nin, 1, ax, IR_MAX_RANK);
	if (n == -2)
		return -1;
	if (n < 0)
		return imp_fail(m, "axes are missing");
	int r = x->rank + n;
	if (r > IR_MAX_RANK)
		return imp_fail(m, "result rank %d exceeds %d", r, IR_MAX_RANK);
	bool ins[IR_MAX_RANK] = {false};
	for (int i = 0; i < n; i++) {
		if (ob_norm_axis(m, &ax[i], r))
			return -1;
		if (ins[ax[i]])
			return imp_fail(m, "axis %lld repeats", (long long)ax[i]);
		ins[ax[i]] = true;
	}
	int64_t d[IR_MAX_RANK];
	for (int i = 0, k = 0; i < r; i++)
		d[i] = ins[i] ? 1 : x->dim[k++];
	OUT(ob_reshape(m, x, r, d));
}

H(h_transpose)
{
	NEED(1);
	Val *x = in[0];
	int64_t p[IR_MAX_RANK];
	int n = ob_aints(m, "perm", p, IR_MAX_RANK);
	if (n == -2)
		return -1;
	int axes[IR_MAX_RANK];
	if (n < 0) {
		for (int i = 0; i < x->rank; i++)
			axes[i] = x->rank - 1 - i;
	} else {
		if (n != x->rank)
			return imp_fail(m, "perm has %d entries for rank %d", n, x->rank);
		for (int i = 0; i < n; i++) {
			if (ob_norm_axis(m, &p[i], x->rank))
				return -1;
			axes[i] = (int)p[i];
		}
	}
	OUT(ob_permute(m, x, axes));
}

/* The ONNX broadcast of two shapes, or -1 (error set). */
static int broadcast_shape(Imp *m, int ra, const int64_t *a, int rb, const int64_t *b,
			   int *r, int64_t *out)
{
	*r = ra > rb ? ra : rb;
	for (int i = 0; i < *r; i++) {
		int64_t x = i - (*r - ra) >= 0 ? a[i - (*r - ra)] : 1;
		int64_t y = i - (*r - rb) >= 0 ? b[i - (*r - rb)] : 1;
		if (x != y && x != 1 && y != 1)
			return imp_fail(m, "dims %lld and %lld do not broadcast", (long long)x,
					(long long)y);
		out[i] = x == 1 ? y : x;
	}
	return 0;
}

H(h_expand)
{
	NEED(2);
	Val *x = in[0];
	int64_t s[IR_MAX_RANK], d[IR_MAX_RANK];
	int n = ob_ints_of(m, in[1], "the shape", s, IR_MAX_RANK), r;
	if (n < 0 || broadcast_shape(m, x->rank, x->dim, n, s, &r, d))
		return -1;
	OUT(ob_expand(m, x, r, d));
}

H(h_concat)
{
	if (nin < 1 || ob_one_output(m, nout))
		return imp_fail(m, "needs at least one input");
	int64_t axis = ob_ai(m, "axis", 0);
	Val *v[IR_MAX_IN];
	int n = 0;
	for (int i = 0; i < nin; i++) {
		if (!in[i])
			continue;
		v[n++] = in[i];
	}
	if (!n || ob_norm_axis(m, &axis, v[0]->rank))
		return -1;
	int k = 0;  /* empty constants (a shape's empty prefix, say) add nothing */
	for (int i = 0; i < n; i++)
		if (!(v[i]->is_const && v[i]->k.n == 0 && v[i]->rank == v[0]->rank))
			v[k++] = v[i];
	if (!k)
		OUT(v[0]);
	n = k;
	OUT(ob_cat(m, v, n, (int)axis));
}

H(h_split)
{
	if (ob_need_in(m, in, nin, 1))
		return -1;
	Val *x = in[0];
	int64_t axis = ob_ai(m, "axis", 0);
	if (ob_norm_axis(m, &axis, x->rank))
		return -1;
	int64_t sz[64];
	int n = ob_aints(m, "split", sz, 64);
	if (n == -2)
		return -1;
	if (n < 0 && nin > 1 && in[1] && (n = ob_ints_of(m, in[1], "split", sz, 64)) < 0)
		return -1;
	int64_t total = x->dim[axis];
	if (n < 0) {
		int64_t parts = ob_ai(m, "num_outputs", nout);
		if (parts != nout || parts < 1)
			return imp_fail(m, "num_outputs %lld and %d outputs differ", (long long)parts,
					nout);
		int64_t each = (total + parts - 1) / parts;
		for (int i = 0; i < nout; i++) {
			int64_t left = total - each * i;
			sz[i] = left < each ? left : each;
		}
		n = nout;
	}
	if (n != nout)
		return imp_fail(m, "%d split sizes for %d outputs", n, nout);
	int64_t at = 0;
	for (int i = 0; i < n; i++) {
		if (sz[i] < 1 || at + sz[i] > total)
			return imp_fail(m, "split sizes do not fit dim %lld of size %lld",
					(long long)axis, (long long)total);
		out[i] = ob_slice1(m, x, (int)axis, at, at + sz[i]);
		if (!out[i])
			return -1;
		at += sz[i];
	}
	if (at != total)
		return imp_fail(m, "split sizes sum to %lld, the dim is %lld", (long long)at,
				(long long)total);
	return 0;
}

H(h_slice)
{
	int64_t st[IR_MAX_RANK], en[IR_MAX_RANK], ax[IR_MAX_RANK], sp[IR_MAX_RANK];
	int n;
	if (m->opset < 10) {  /* starts, ends and axes are attributes */
		NEED(1);
		n = ob_aints(m, "starts", st, IR_MAX_RANK);
		if (n < 0 || ob_aints(m, "ends", en, IR_MAX_RANK) != n)
			return n == -2 ? -1 : imp_fail(m, "starts and ends are missing or differ");
		for (int i = 0; i < n; i++)
			ax[i] = i, sp[i] = 1;
		int na = ob_aints(m, "axes", ax, IR_MAX_RANK);
		if (na >= 0 && na != n)
			return imp_fail(m, "axes and starts differ in length");
	} else {
		NEED(3);
		n = ob_ints_of(m, in[1], "starts", st, IR_MAX_RANK);
		if (n < 0 || ob_ints_of(m, in[2], "ends", en, IR_MAX_RANK) != n)
			return n < 0 ? -1 : imp_fail(m, "starts and ends differ in length");
		for (int i = 0; i < n; i++)
			ax[i] = i, sp[i] = 1;
		if (nin > 3 && in[3] && ob_ints_of(m, in[3], "axes", ax, IR_MAX_RANK) != n)
			return imp_fail(m, "axes and starts differ in length");
		if (nin > 4 && in[4] && ob_ints_of(m, in[4], "steps", sp, IR_MAX_RANK) != n)
			return imp_fail(m, "steps and starts differ in length");
	}
	Val *x = in[0];
	Val *v = x;
	for (int i = 0; i < n && v; i++) {
		if (ob_norm_axis(m, &ax[i], x->rank))
			return -1;
		int64_t d = x->dim[ax[i]], s = st[i], e = en[i], k = sp[i];
		if (k == 0)
			return imp_fail(m, "step 0");
		if (s < 0)
			s += d;
		if (e < 0)
			e += d;
		if (k > 0) {
			s = s < 0 ? 0 : s > d ? d : s;
			e = e < 0 ? 0 : e > d ? d : e;
		} else {
			s = s < 0 ? -1 : s > d - 1 ? d - 1 : s;
			e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
		}
		int64_t len = k > 0 ? (e - s + k - 1) / k : (s - e + (-k) - 1) / (-k);
		if (len <= 0 && v->is_const) {  /* an empty constant: a shape's empty prefix */
			int64_t dim[IR_MAX_RANK];
			memcpy(dim, v->dim, sizeof dim);
			dim[ax[i]] = 0;
			v = ob_kfull(m, v->dt, v->rank, dim, 0);
			continue;
		}
		if (len <= 0)
			return imp_fail(m, "the slice of axis %lld is empty (not supported)",
					(long long)ax[i]);
		if (k == 1) {
			v = ob_slice1(m, v, (int)ax[i], s, e);
			continue;
		}
		int64_t *idx = ob_index_table(m, len);
		if (!idx)
			return -1;
		for (int64_t j = 0; j < len; j++)
			idx[j] = s + j * k;
		v = ob_take(m, v, (int)ax[i], idx, len);
		free(idx);
	}
	OUT(v);
}

/* Indices made non-negative: constant ones now, computed ones with a where. */
static Val *fix_index(Imp *m, Val *idx, int64_t size)
{
	if (!idx || !ir_dtype_is_signed(idx->dt))
		return idx;
	/* a model read for every size: a size that may be a dim_param's is counted in
	 * the graph (the sum of that many ones), not written as a number */
	for (int k = 0; !idx->is_const && m->every && k < m->every->nsym; k++)
		if (m->every->probe[k] > IR_MAX_RANK && size % m->every->probe[k] == 0) {
			int64_t one = 1;
			m->keep++;
			Val *n = ob_reduce(m, OP_SUM, ob_expand(m, ob_kfull(m, idx->dt, 1, &one, 1), 1,
								 &size), 0);
			m->keep--;
			return ob_where3(m, ob_sc(m, OP_LT_SCALAR, idx, 0), ob_bin(m, OP_ADD, idx, n), idx);
		}
	return ob_where3(m, ob_sc(m, OP_LT_SCALAR, idx, 0), ob_sc(m, OP_ADD_SCALAR, idx, (double)size),
		      idx);
}

H(h_gather)
{
	NEED(2);
	Val *x = in[0], *idx = in[1];
	int64_t axis = ob_ai(m, "axis", 0);
	if (ob_norm_axis(m, &axis, x->rank))
		return -1;
	if (idx->dt != DT_I64 && idx->dt != DT_I32)
		return imp_fail(m, "indices must be int32 or int64, got %s", ir_dtype_name(idx->dt));
	int r = x->rank - 1 + idx->rank;
	if (r > IR_MAX_RANK)
		return imp_fail(m, "result rank %d exceeds %d", r, IR_MAX_RANK);
	int64_t k = ob_count(idx);
	idx = fix_index(m, idx, x->dim[axis]);
	int64_t d[IR_MAX_RANK];
	int n = 0;
	for (int i = 0; i < axis; i++)
		d[n++] = x->dim[i];
	for (int i = 0; idx && i < idx->rank; i++)
		d[n++] = idx->dim[i];
	for (int i = (int)axis + 1; i < x->rank; i++)
		d[n++] = x->dim[i];
	/* constant indices i, i + 1, ..., i + k - 1 (torch's q, k, v = qkv[0], qkv[1],
	 * qkv[2] in nn.MultiheadAttention): a slice, a view that launches nothing where
	 * the kernels reading it read through it (passes/views.c) */
	if (idx && idx->is_const && k >= 1 && k == idx->k.n) {
		int64_t i0 = host_get_i64(&idx->k, 0);
		bool run = i0 >= 0 && i0 + k <= x->dim[axis];
		for (int64_t j = 1; run && j < k; j++)
			run = host_get_i64(&idx->k, j) == i0 + j;
		if (run)
			OUT(ob_reshape(m, ob_slice1(m, x, (int)axis, i0, i0 + k), n, d));
	}
	int64_t flat[IR_MAX_RANK], full[IR_MAX_RANK];
	for (int i = 0; i < x->rank; i++) {
		flat[i] = i == axis ? k : 1;
		full[i] = i == axis ? k : x->dim[i];
	}
	Val *ix = ob_expand(m, ob_reshape(m, idx, x->rank, flat), x->rank, full);
	if (!ix)
		return -1;
	Val *gin[2] = {x, ix};
	Attrs at = imp_attrs(OP_GATHER);
	at.axis = (int)axis;
	Val *g = imp_emit(m, OP_GATHER, gin, 2, &at);
	if (!g)
		return -1;
	OUT(ob_reshape(m, g, n, d));
}

H(h_gather_elements)
{
	NEED(2);
	Val *x = in[0], *idx = in[1];
	int64_t axis = ob_ai(m, "axis", 0);
	if (ob_norm_axis(m, &axis, x->rank))
		return -1;
	idx = fix_index(m, idx, x->dim[axis]);
	if (!idx)
		return -1;
	Val *gin[2] = {x, idx};
	Attrs at = imp_attrs(OP_GATHER);
	at.axis = (int)axis;
	OUT(imp_emit(m, OP_GATHER, gin, 2, &at));
}

H(h_where)
{
	NEED(3);
	OUT(ob_where3(m, in[0], in[1], in[2]));
}

H(h_tile)
{
	NEED(2);
	Val *x = in[0];
	int64_t rep[IR_MAX_RANK];
	int n = ob_ints_of(m, in[1], "repeats", rep, IR_MAX_RANK);
	if (n < 0)
		return -1;
	if (n != x->rank)
		return imp_fail(m, "%d repeats for rank %d", n, x->rank);
	/* a unit dim repeated is a broadcast: one expand for all of them (as
	 * exporters write grouped-query attention's repeat of k and v, which
	 * passes/attention.c then reads in place), a cat of copies for the rest */
	int64_t to[IR_MAX_RANK];
	bool unit = false, cat[IR_MAX_RANK];
	for (int i = 0; i < n; i++) {
		if (rep[i] < 1)
			return imp_fail(m, "repeat %lld is not supported", (long long)rep[i]);
		unit |= x->dim[i] == 1 && rep[i] > 1;
		cat[i] = x->dim[i] != 1 && rep[i] > 1;
		to[i] = x->dim[i] == 1 ? rep[i] : x->dim[i];
	}
	if (unit && !(x = ob_expand(m, x, n, to)))
		return -1;
	for (int i = 0; i < n && x; i++) {
		if (!cat[i])
			continue;
		if (rep[i] > IR_MAX_IN)
			return imp_fail(m, "repeat %lld is not supported", (long long)rep[i]);
		Val *copies[IR_MAX_IN];
		for (int k = 0; k < rep[i]; k++)
			copies[k] = x;
		x = ob_cat(m, copies, (int)rep[i], i);
	}
	OUT(x);
}

H(h_trilu)
{
	NEED(1);
	Val *x = in[0];
	if (x->rank < 2)
		return imp_fail(m, "needs rank 2 or more");
	double kd = 0;
	if (nin > 1 && in[1] && ob_scalar_of(m, in[1], "k", &kd))
		return -1;
	int64_t k = (int64_t)kd;
	bool upper = ob_ai(m, "upper", 1);
	int64_t d[IR_MAX_RANK];
	for (int i = 0; i < x->rank; i++)
		d[i] = i < x->rank - 2 ? 1 : x->dim[i];
	Val *mask = ob_kfull(m, DT_BOOL, x->rank, d, 0);
	if (!mask)
		return -1;
	int64_t rows = d[x->rank - 2], cols = d[x->rank - 1];
	for (int64_t r = 0; r < rows; r++)
		for (int64_t c = 0; c < cols; c++) {
			bool keep = upper ? c - r >= k : c - r <= k;
			((uint8_t *)mask->k.data)[r * cols + c] = !keep;
		}
	Val *min[2] = {x, mask};
	Attrs at = imp_attrs(OP_MASK_FILL);
	at.scalar = 0;
	OUT(imp_emit(m, OP_MASK_FILL, min, 2, &at));
}

H(h_pad)
{
	NEED(1);
	Val *x = in[0];
	char mode[16];
	ob_astr(m, "mode", mode, sizeof mode, "constant");
	bool edge = !strcmp(mode, "edge"), reflect = !strcmp(mode, "reflect");
	if (strcmp(mode, "constant") && !edge && !reflect)
		return imp_fail(m, "pad mode '%s' is not supported yet", mode);
	int64_t p[2 * IR_MAX_RANK];
	double value = 0;
	int n;
	if (m->opset < 11) {
		n = ob_aints(m, "pads", p, 2 * IR_MAX_RANK);
		if (n < 0)
			return n == -2 ? -1 : imp_fail(m, "pads are missing");
		value = ob_af(m, "value", 0);
	} else {
		NEED(2);
		n = ob_ints_of(m, in[1], "pads", p, 2 * IR_MAX_RANK);
		if (n < 0)
			return -1;
		if (nin > 2 && in[2] && ob_scalar_of(m, in[2], "constant_value", &value))
			return -1;
	}
	int64_t ax[IR_MAX_RANK];
	int na = x->rank;
	for (int i = 0; i < na; i++)
		ax[i] = i;
	if (nin > 3 && in[3] && (na = ob_ints_of(m, in[3], "axes", ax, IR_MAX_RANK)) < 0)
		return -1;
	if (n != 2 * na)
		return imp_fail(m, "%d pads for %d axes", n, na);
	for (int i = 0; i < na && x; i++) {
		if (ob_norm_axis(m, &ax[i], x->rank))
			return -1;
		if (p[i] < 0 || p[i + na] < 0)
			return imp_fail(m, "negative pads are not supported yet");
		if (p[i] > (1 << 20) || p[i + na] > (1 << 20))
			return imp_fail(m, "pads over 2^20 are not supported");
		if (edge || reflect) {
			/* gather with clamped (edge) or mirrored (reflect) indices */
			int a = (int)ax[i];
			int64_t dlen = x->dim[a], n2 = dlen + p[i] + p[i + na];
			if (reflect && (p[i] >= dlen || p[i + na] >= dlen))
				return imp_fail(m, "reflect pads of %lld and %lld need a dim larger "
						"than both (is %lld): not supported", (long long)p[i],
						(long long)p[i + na], (long long)dlen);
			if (!p[i] && !p[i + na])
				continue;
			int64_t *idx = ob_index_table(m, n2);
			if (!idx)
				return -1;
			for (int64_t j = 0; j < n2; j++) {
				int64_t s0 = j - p[i];
				if (edge)
					idx[j] = s0 < 0 ? 0 : s0 >= dlen ? dlen - 1 : s0;
				else
					idx[j] = s0 < 0 ? -s0 : s0 >= dlen ? 2 * (dlen - 1) - s0 : s0;
			}
			x = ob_take(m, x, a, idx, n2);
			free(idx);
			continue;
		}
		x = ob_pad_axis(m, x, (int)ax[i], p[i], p[i + na], value);
	}
	OUT(x);
}

/* DepthToSpace (arg 0) and SpaceToDepth (arg 1): reshape, permute, reshape. */
H(h_space_depth)
{
	NEED(1);
	Val *x = in[0];
	int64_t b = ob_ai(m, "blocksize", 0);
	if (x->rank != 4 || b < 1 || b > (1 << 16))
		return imp_fail(m, "needs a rank-4 input and a positive blocksize");
	int64_t n = x->dim[0], c = x->dim[1], hh = x->dim[2], w = x->dim[3];
	char mode[8];
	ob_astr(m, "mode", mode, sizeof mode, "DCR");
	if (h->arg == 0) {
		if (c % (b * b))
			return imp_fail(m, "channels %lld are not divisible by blocksize^2",
					(long long)c);
		bool crd = !strcmp(mode, "CRD");
		int64_t d6[6] = {n, b, b, c / (b * b), hh, w};
		static const int dcr[6] = {0, 3, 4, 1, 5, 2}, crdp[6] = {0, 1, 4, 2, 5, 3};
		if (crd) {
			d6[1] = c / (b * b);
			d6[2] = b;
			d6[3] = b;
		}
		int64_t d4[4] = {n, c / (b * b), hh * b, w * b};
		OUT(ob_reshape(m, ob_permute(m, ob_reshape(m, x, 6, d6), crd ? crdp : dcr), 4, d4));
	}
	if (hh % b || w % b)
		return imp_fail(m, "spatial dims are not divisible by blocksize");
	int64_t d6[6] = {n, c, hh / b, b, w / b, b};
	static const int p[6] = {0, 3, 5, 1, 2, 4};
	int64_t d4[4] = {n, c * b * b, hh / b, w / b};
	OUT(ob_reshape(m, ob_permute(m, ob_reshape(m, x, 6, d6), p), 4, d4));
}

/* ---- constants and shape queries ------------------------------------------------ */

H(h_constant)
{
	if (ob_one_output(m, nout))
		return -1;
	const Onnx__NodeProto *n = m->n;
	if (n->n_attribute != 1)
		return imp_fail(m, "needs exactly one value attribute");
	const Onnx__AttributeProto *a = n->attribute[0];
	HostTensor k;
	Diag d;
	const char *nm = a->name ? a->name : "";
	if (!strcmp(nm, "value") && a->t) {
		char msg[400];
		if (onnx_tensor(a->t, m->dir, &k, msg, sizeof msg))
			return imp_fail(m, "value: %s", msg);
		OUT(imp_const(m, &k));
	}
	if (!strcmp(nm, "value_float") || !strcmp(nm, "value_int")) {
		bool f = nm[6] == 'f';
		if (host_alloc(&k, f ? DT_F32 : DT_I64, 0, NULL, &d))
			return imp_fail(m, "%s", d.msg);
		if (f)
			host_set(&k, 0, a->f);
		else
			host_set_i64(&k, 0, a->i);
		OUT(imp_const(m, &k));
	}
	/* the list the name says (a value_floats attribute may carry ints instead) */
	bool fl = !strcmp(nm, "value_floats");
	int64_t one = (int64_t)(fl ? a->n_floats : a->n_ints);
	if (fl || !strcmp(nm, "value_ints")) {
		bool f = fl;
		if (one < 1)
			return imp_fail(m, "%s holds no %s (empty constants are not supported)", nm,
					f ? "floats" : "ints");
		if (host_alloc(&k, f ? DT_F32 : DT_I64, 1, &one, &d))
			return imp_fail(m, "%s", d.msg);
		for (int64_t i = 0; i < one; i++)
			if (f)
				host_set(&k, i, a->floats[i]);
			else
				host_set_i64(&k, i, a->ints[i]);
		OUT(imp_const(m, &k));
	}
	return imp_fail(m, "attribute '%.40s' is not supported", nm);
}

H(h_shape)
{
	NEED(1);
	Val *x = in[0];
	int64_t s = ob_ai(m, "start", 0), e = ob_ai(m, "end", x->rank);
	if (s < 0)
		s += x->rank;
	if (e < 0)
		e += x->rank;
	s = s < 0 ? 0 : s > x->rank ? x->rank : s;
	e = e < 0 ? 0 : e > x->rank ? x->rank : e;
	if (e <= s)
		return imp_fail(m, "the shape slice is empty (not supported)");
	OUT(ob_kints(m, x->dim + s, (int)(e - s)));
}

H(h_size)
{
	NEED(1);
	Val *v = ob_kfull(m, DT_I64, 0, NULL, 0);
	if (v)
		host_set_i64(&v->k, 0, ob_count(in[0]));
	OUT(v);
}

H(h_constant_of_shape)
{
	NEED(1);
	int64_t s[IR_MAX_RANK];
	int n = ob_ints_of(m, in[0], "the shape", s, IR_MAX_RANK);
	if (n < 0)
		return -1;
	int64_t total = 1;
	for (int i = 0; i < n; i++) {
		if (s[i] < 1)
			return imp_fail(m, "dim %lld is not supported (empty tensors)", (long long)s[i]);
		if (__builtin_mul_overflow(total, s[i], &total) || total > (1 << 28))
			return imp_fail(m, "the constant is too large");
	}
	const Onnx__AttributeProto *a = ob_attr(m, "value");
	DType t = DT_F32;
	double v = 0;
	if (a && a->t) {
		HostTensor k;
		char msg[400];
		if (onnx_tensor(a->t, m->dir, &k, msg, sizeof msg))
			return imp_fail(m, "value: %s", msg);
		if (k.n != 1) {
			host_free(&k);
			return imp_fail(m, "value holds %lld elements, not one", (long long)k.n);
		}
		t = k.dtype;
		v = host_get(&k, 0);
		if (t == DT_I64)
			v = (double)host_get_i64(&k, 0);
		host_free(&k);
	}
	OUT(ob_kfull(m, t, n, s, v));
}

H(h_range)
{
	NEED(3);
	for (int i = 0; i < 3; i++)
		if (!in[i]->is_const || in[i]->k.n != 1)
			return imp_fail(m, "start, limit and delta must be constant scalars: computed "
					"ones are not supported");
	DType t = in[0]->dt;
	double s = host_get(&in[0]->k, 0), l = host_get(&in[1]->k, 0), dl = host_get(&in[2]->k, 0);
	if (dl == 0)
		return imp_fail(m, "delta is 0");
	double cnt = ceil((l - s) / dl);
	if (!(cnt >= 1) || cnt > (1 << 28))
		return imp_fail(m, "the range has %g elements (empty or too large)", cnt);
	int64_t n = (int64_t)cnt;
	/* a model read for every size: a range as long as a dim_param's probe is the
	 * head of the range as long as its largest size, cut in the graph (a slice,
	 * which every.c makes that size) */
	int64_t len = n;
	for (int k = 0; m->every && k < m->every->nsym; k++) {
		if (n != m->every->probe[k] || m->every->hi[k] <= n)
			continue;
		if (m->every->hi[k] > (1 << 20))
			return imp_fail(m, "a range as long as dim_param '%.60s' is made as long as its "
					"largest size, which must be at most 2^20: give it a range "
					"(--dims %.60s=LO..HI)", m->every->name[k], m->every->name[k]);
		len = m->every->hi[k];
	}
	Val *v = ob_kfull(m, t, 1, &len, 0);
	if (!v)
		return -1;
	for (int64_t i = 0; i < n; i++) {
		if (ir_dtype_is_int(t)) {
			/* exact (i · delta alone may pass int64 while the sum does not) */
			__int128 e = (__int128)host_get_i64(&in[0]->k, 0) +
				     (__int128)i * host_get_i64(&in[2]->k, 0);
			if (e > INT64_MAX || e < INT64_MIN)
				return imp_fail(m, "the range's values overflow int64");
			host_set_i64(&v->k, i, (int64_t)e);
		} else
			host_set(&v->k, i, s + (double)i * dl);
	}
	for (int64_t i = n; i < len; i++)   /* the rest of a range cut in the graph */
		host_set(&v->k, i, host_get(&v->k, n - 1) + (double)(i - n + 1) * dl);
	if (len == n)
		OUT(v);
	m->keep++;
	Val *cut = ob_slice1(m, v, 0, 0, n);
	m->keep--;
	OUT(cut);
}

/* ---- reductions ---------------------------------------------------------------- */

enum { RED_PLAIN, RED_L1, RED_L2, RED_SUMSQ, RED_LOGSUM, RED_LOGSUMEXP };

H(h_reduce)
{
	NEED(1);
	Val *x = in[0];
	int64_t ax[IR_MAX_RANK];
	int n = axes_of(m, in, nin, 1, ax, IR_MAX_RANK);
	if (n == -2)
		return -1;
	bool keep = ob_ai(m, "keepdims", 1);
	bool on[IR_MAX_RANK] = {false};
	if (n <= 0) {
		if (ob_ai(m, "noop_with_empty_axes", 0))
			OUT(x);
		for (int i = 0; i < x->rank; i++)
			on[i] = true;
	}
	for (int i = 0; i < n; i++) {
		if (ob_norm_axis(m, &ax[i], x->rank))
			return -1;
		on[ax[i]] = true;
	}
	switch (h->arg) {
	case RED_L1: x = ob_un(m, OP_ABS, x); break;
	case RED_L2:
	case RED_SUMSQ: x = ob_bin(m, OP_MUL, x, x); break;
	case RED_LOGSUMEXP: x = ob_un(m, OP_EXP, x); break;
	}
	if (!x)
		return -1;
	Val *r = ob_reduce_axes(m, h->kind, x, on, keep);
	if (h->arg == RED_L2)
		r = ob_un(m, OP_SQRT, r);
	if (h->arg == RED_LOGSUM || h->arg == RED_LOGSUMEXP)
		r = ob_un(m, OP_LOG, r);
	OUT(r);
}

H(h_argreduce)
{
	NEED(1);
	Val *x = in[0];
	int64_t axis = ob_ai(m, "axis", 0);
	if (ob_norm_axis(m, &axis, x->rank))
		return -1;
	Val *r;
	if (ob_ai(m, "select_last_index", 0)) {
		/* the first extreme of the reversed axis, counted from the end */
		int64_t n = x->dim[axis];
		int64_t *rev = ob_index_table(m, n);
		if (!rev)
			return -1;
		for (int64_t i = 0; i < n; i++)
			rev[i] = n - 1 - i;
		r = ob_take(m, x, (int)axis, rev, n);
		free(rev);
		r = ob_un(m, OP_NEG, ob_sc(m, OP_SUB_SCALAR, ob_reduce(m, h->kind, r, (int)axis),
				     (double)(n - 1)));
	} else {
		r = ob_reduce(m, h->kind, x, (int)axis);
	}
	if (r && !ob_ai(m, "keepdims", 1)) {
		bool on[IR_MAX_RANK] = {false};
		on[axis] = true;
		int64_t d[IR_MAX_RANK];
		int k = 0;
		for (int i = 0; i < x->rank; i++)
			if (!on[i])
				d[k++] = r->dim[i];
		r = ob_reshape(m, r, k, d);
	}
	OUT(r);
}

/* ---- matmul ---------------------------------------------------------------------- */

H(h_matmul)
{
	NEED(2);
	OUT(ob_matmul(m, in[0], in[1]));
}

H(h_gemm)
{
	NEED(2);
	Val *a = in[0], *b = in[1];
	if (a->rank != 2 || b->rank != 2)
		return imp_fail(m, "A and B must have rank 2");
	static const int swap[2] = {1, 0};
	if (ob_ai(m, "transA", 0))
		a = ob_permute(m, a, swap);
	if (ob_ai(m, "transB", 0))
		b = ob_permute(m, b, swap);
	Val *y = ob_matmul(m, a, b);
	double alpha = ob_af(m, "alpha", 1.0), beta = ob_af(m, "beta", 1.0);
	if (y && alpha != 1)
		y = ob_sc(m, OP_MUL_SCALAR, y, alpha);
	if (y && nin > 2 && in[2] && beta != 0) {
		Val *c = in[2];
		if (beta != 1)
			c = ob_sc(m, OP_MUL_SCALAR, c, beta);
		y = ob_bin(m, OP_ADD, y, c);
	}
	OUT(y);
}

/* ---- convolution and pooling ------------------------------------------------------ */

typedef struct {
	int nsp;                        /* spatial dims: 1, 2 (or 3 for pools) */
	int64_t kernel[3], stride[3], dil[3], lo[3], hi[3];
	int64_t extra[3];               /* of hi: added by ceil_mode */
} Window;

/* kernel_shape, strides, dilations, pads and auto_pad for nsp spatial dims of x. */
static bool pool_dilations;   /* set by h_pool around window(): MaxPool takes them */

static int window(Imp *m, const Val *x, const int64_t *kdim, Window *w, bool pool)
{
	int nsp = x->rank - 2;
	w->nsp = nsp;
	int64_t k[6], s[6], dl[6], p[6];
	int nk = ob_aints(m, "kernel_shape", k, 6);
	if (nk == -2)
		return -1;
	if (nk < 0 && kdim)
		for (int i = 0; i < nsp; i++)
			k[i] = kdim[i];
	else if (nk != nsp)
		return imp_fail(m, "kernel_shape has %d entries for %d spatial dims", nk, nsp);
	int ns = ob_aints(m, "strides", s, 6), nd = ob_aints(m, "dilations", dl, 6),
	    np = ob_aints(m, "pads", p, 6);
	if (ns == -2 || nd == -2 || np == -2)
		return -1;
	if ((ns >= 0 && ns != nsp) || (nd >= 0 && nd != nsp) || (np >= 0 && np != 2 * nsp))
		return imp_fail(m, "strides, dilations or pads do not match %d spatial dims", nsp);
	char ap[24];
	ob_astr(m, "auto_pad", ap, sizeof ap, "NOTSET");
	for (int i = 0; i < nsp; i++) {
		w->kernel[i] = k[i];
		w->stride[i] = ns >= 0 ? s[i] : 1;
		w->dil[i] = nd >= 0 ? dl[i] : 1;
		if (w->stride[i] < 1 || w->dil[i] < 1 || w->kernel[i] < 1 ||
		    w->kernel[i] > (1 << 20) || w->stride[i] > (1 << 20) || w->dil[i] > (1 << 20))
			return imp_fail(m, "kernel, strides and dilations must be positive (and "
					"below 2^20)");
		if (pool && w->dil[i] != 1 && !pool_dilations)
			return imp_fail(m, "AveragePool with dilations is not supported yet");
		int64_t lo = 0, hi = 0;
		if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
			int64_t in = x->dim[2 + i], o = (in + w->stride[i] - 1) / w->stride[i];
			int64_t tot = (o - 1) * w->stride[i] + w->dil[i] * (w->kernel[i] - 1) + 1 - in;
			if (tot < 0)
				tot = 0;
			lo = ap[5] == 'U' ? tot / 2 : tot - tot / 2;
			hi = tot - lo;
		} else if (!strcmp(ap, "NOTSET")) {
			lo = np >= 0 ? p[i] : 0;
			hi = np >= 0 ? p[i + nsp] : 0;
		} else if (strcmp(ap, "VALID")) {
			return imp_fail(m, "auto_pad '%s' is not supported", ap);
		}
		if (lo < 0 || hi < 0 || lo > (1 << 20) || hi > (1 << 20))
			return imp_fail(m, "pads %lld, %lld are not supported", (long long)lo,
					(long long)hi);
		if (ob_ai(m, "ceil_mode", 0)) {
			/* ceil_mode: extra padding at the end where the last window starts
			 * inside the input (or its front padding) */
			int64_t span = w->dil[i] * (w->kernel[i] - 1) + 1;
			int64_t len = x->dim[2 + i] + lo + hi - span;
			if (len >= 0 && len % w->stride[i]) {
				int64_t extra = w->stride[i] - len % w->stride[i];
				int64_t o = len / w->stride[i] + 1;
				if (o * w->stride[i] < x->dim[2 + i] + lo) {
					hi += extra;
					w->extra[i] = extra;
				}
			}
		}
		w->lo[i] = lo;
		w->hi[i] = hi;
	}
	if (nsp == 1) {
		w->kernel[1] = 1, w->stride[1] = 1, w->dil[1] = 1, w->lo[1] = w->hi[1] = 0;
	}
	return 0;
}

/* 1-D spatial tensors go through the 2-D ops as [N, C, L, 1]. */
static Val *to2d(Imp *m, Val *x)
{
	if (!x || x->rank != 3)
		return x;
	int64_t d[4] = {x->dim[0], x->dim[1], x->dim[2], 1};
	return ob_reshape(m, x, 4, d);
}

static Val *from2d(Imp *m, Val *y, int rank)
{
	if (!y || rank != 3)
		return y;
	int64_t d[3] = {y->dim[0], y->dim[1], y->dim[2]};
	return ob_reshape(m, y, 3, d);
}

/* Padding the op can do itself (symmetric, and for pools at most half the kernel)
 * goes into pad[]; the rest becomes explicit padding of x with value. */
static Val *split_padding(Imp *m, Val *x, const Window *w, bool pool, double value, int *pad)
{
	for (int i = 0; i < 2 && x; i++) {
		int64_t lo = w->lo[i], hi = w->hi[i];
		int64_t own = lo < hi ? lo : hi;
		if (pool && own > w->kernel[i] / 2)
			own = w->kernel[i] / 2;
		pad[i] = (int)own;
		x = ob_pad_axis(m, x, 2 + i, lo - own, hi - own, value);
	}
	return x;
}

H(h_conv)
{
	NEED(2);
	Val *x = in[0], *w = in[1];
	if (x->rank != 4 && x->rank != 3)
		return imp_fail(m, "convolution of rank-%d inputs is not supported (1-D and 2-D "
				"are)", x->rank);
	if (w->rank != x->rank)
		return imp_fail(m, "weight rank %d differs from input rank %d", w->rank, x->rank);
	Window wi = {0};
	if (window(m, x, w->dim + 2, &wi, false))
		return -1;
	Attrs at = imp_attrs(OP_CONV2D);
	for (int i = 0; i < 2; i++) {
		at.stride[i] = (int)wi.stride[i];
		at.dilation[i] = (int)wi.dil[i];
	}
	int64_t g = ob_ai(m, "group", 1);
	if (g < 1 || g > (1 << 20))
		return imp_fail(m, "group %lld is not supported", (long long)g);
	at.groups = (int)g;
	Val *x2 = split_padding(m, to2d(m, x), &wi, false, 0, at.padding);
	Val *cin[3] = {x2, to2d(m, ob_const_as(m, w, x)), nin > 2 ? ob_const_as(m, in[2], x) : NULL};
	if (!cin[0] || !cin[1])
		return -1;
	Val *y = imp_emit(m, OP_CONV2D, cin, cin[2] ? 3 : 2, &at);
	OUT(from2d(m, y, x->rank));
}

/* Every stride-th element along axis, o of them from start, through views only:
 * a slice, a reshape that splits the axis into [groups, stride], the first of each
 * group and a reshape back; when the last group would run past the end, it is
 * sliced on its own and joined. No constant is built, so the cost is a few ops
 * whatever the shape and the stride. */
static Val *pick_strided(Imp *m, Val *x, int axis, int64_t start, int64_t stride, int64_t o)
{
	if (!x || stride == 1 || o == 1)
		return x ? ob_slice1(m, x, axis, start, start + (stride == 1 ? o : 1)) : NULL;
	if (x->rank + 1 > IR_MAX_RANK) {
		imp_fail(m, "a strided view of a rank-%d tensor is not supported (rank %d at "
			 "most)", x->rank, IR_MAX_RANK - 1);
		return NULL;
	}
	/* start + (o - 1) * stride < x->dim[axis]: whole groups while they fit */
	int64_t groups = start + o * stride <= x->dim[axis] ? o : o - 1;
	Val *v = ob_slice1(m, x, axis, start, start + groups * stride);
	if (!v)
		return NULL;
	int64_t split[IR_MAX_RANK], back[IR_MAX_RANK];
	int r = 0;
	for (int i = 0; i < v->rank; i++) {
		back[i] = i == axis ? groups : v->dim[i];
		split[r++] = i == axis ? groups : v->dim[i];
		if (i == axis)
			split[r++] = stride;
	}
	v = ob_reshape(m, ob_slice1(m, ob_reshape(m, v, r, split), axis + 1, 0, 1), x->rank, back);
	if (groups == o || !v)
		return v;
	int64_t last = start + groups * stride;
	Val *parts[2] = {v, ob_slice1(m, x, axis, last, last + 1)};
	return parts[1] ? ob_cat(m, parts, 2, axis) : NULL;
}

/* Max pooling as the max of kernel-many strided views of x padded with -inf (x:
 * [N, C, H, W], w over its two spatial dims): for dilations, and for the Indices
 * output. Indices follow the view that wins (the first in row-major order of the
 * kernel, on ties) as a scalar offset per window position, added at the end to one
 * constant: the flat index of each window's origin. A window whose winner is -inf
 * (all padding, or only -inf values) gets index -1, as onnxruntime gives. */
enum { VIEW_MAX_POSITIONS = 256, VIEW_MAX_INDEX_ELEMENTS = 1 << 22 };

static Val *view_max(Imp *m, Val *x, const Window *w, int storage_order, Val **indices)
{
	/* a few views and a max per window position; Indices add one constant of the
	 * output's size. x constant folds each view: bounded by the same caps. */
	int64_t positions = w->kernel[0] * w->kernel[1];
	if (positions > VIEW_MAX_POSITIONS ||
	    (indices && ob_count(x) > VIEW_MAX_INDEX_ELEMENTS) ||
	    (x->is_const && ob_count(x) > VIEW_MAX_INDEX_ELEMENTS / positions)) {
		imp_fail(m, "not supported yet: MaxPool with dilations or Indices over a %lldx%lld "
			 "window of a %lld-element input (at most %d positions; Indices at most "
			 "%d elements; a constant input, folded once per position, at most %d "
			 "elements in all)", (long long)w->kernel[0], (long long)w->kernel[1],
			 (long long)ob_count(x), VIEW_MAX_POSITIONS, VIEW_MAX_INDEX_ELEMENTS,
			 VIEW_MAX_INDEX_ELEMENTS);
		return NULL;
	}
	int64_t H = x->dim[2], W = x->dim[3];
	for (int i = 0; i < 2 && x; i++)
		x = ob_pad_axis(m, x, 2 + i, w->lo[i], w->hi[i], -INFINITY);
	if (!x)
		return NULL;
	int64_t o[2];
	for (int i = 0; i < 2; i++) {
		/* the dilated window must fit the padded input: at least one output */
		int64_t span = w->dil[i] * (w->kernel[i] - 1) + 1;
		if (span > x->dim[2 + i]) {
			imp_fail(m, "pooling window spans %lld along axis %d, more than the "
					"padded input's %lld", (long long)span, 2 + i,
					(long long)x->dim[2 + i]);
			return NULL;
		}
		o[i] = (x->dim[2 + i] - span) / w->stride[i] + 1;
	}
	Val *acc = NULL, *acc_off = NULL;
	for (int64_t a = 0; a < w->kernel[0]; a++)
		for (int64_t b = 0; b < w->kernel[1]; b++) {
			int64_t dh = a * w->dil[0], dw = b * w->dil[1];
			Val *v = pick_strided(m, x, 2, dh, w->stride[0], o[0]);
			v = pick_strided(m, v, 3, dw, w->stride[1], o[1]);
			Val *off = NULL;
			if (indices)  /* this position's offset from the window's origin */
				off = ob_kfull(m, DT_I64, 0, NULL,
					    (double)(storage_order ? dw * H + dh : dh * W + dw));
			if (!v || (indices && !off))
				return NULL;
			if (!acc) {
				acc = v;
				acc_off = off;
				continue;
			}
			if (indices)
				acc_off = ob_where3(m, ob_bin(m, OP_GT, v, acc), off, acc_off);
			acc = ob_bin(m, OP_MAX, acc, v);
			if (!acc || (indices && !acc_off))
				return NULL;
		}
	if (!indices)
		return acc;
	/* the flat input index of each window's origin (it may lie in the padding) */
	int64_t od[4] = {acc->dim[0], acc->dim[1], o[0], o[1]};
	if (od[0] * od[1] * o[0] > VIEW_MAX_INDEX_ELEMENTS / o[1]) {
		imp_fail(m, "not supported yet: MaxPool Indices of more than %d elements",
			 VIEW_MAX_INDEX_ELEMENTS);
		return NULL;
	}
	HostTensor t;
	Diag d;
	if (ob_made_fits(m, 4, od))
		return NULL;
	if (host_alloc(&t, DT_I64, 4, od, &d)) {
		imp_fail(m, "%s", d.msg);
		return NULL;
	}
	for (int64_t i = 0; i < t.n; i++) {
		int64_t img = i / (o[0] * o[1]);
		int64_t h = i / o[1] % o[0] * w->stride[0] - w->lo[0];
		int64_t c = i % o[1] * w->stride[1] - w->lo[1];
		((int64_t *)t.data)[i] = img * H * W + (storage_order ? c * H + h : h * W + c);
	}
	Val *at = ob_bin(m, OP_ADD, imp_const(m, &t), acc_off);
	Val *none = ob_bin(m, OP_EQ, acc, ob_kfull(m, acc->dt, 0, NULL, -INFINITY));
	*indices = ob_where3(m, none, ob_kfull(m, DT_I64, 0, NULL, -1), at);
	return *indices ? acc : NULL;
}

/* One 2-D pool of x ([N, C, H, W]) over the window w (its first two dims). */
static Val *pool2d(Imp *m, OpKind k, Val *x, const Window *w, bool include)
{
	if (!x)
		return NULL;
	if (w->dil[0] != 1 || w->dil[1] != 1)
		return view_max(m, x, w, 0, NULL);
	Attrs at = imp_attrs(k);
	for (int i = 0; i < 2; i++) {
		at.kernel[i] = (int)w->kernel[i];
		at.stride[i] = (int)w->stride[i];
	}
	double fill = k == OP_MAX_POOL2D ? -INFINITY : 0;
	Val *x2 = split_padding(m, x, w, true, fill, at.padding);
	if (!x2)
		return NULL;
	Val *y = imp_emit(m, k, &x2, 1, &at);
	bool padded = w->lo[0] || w->lo[1] || w->hi[0] || w->hi[1];
	if (y && k == OP_AVG_POOL2D && padded) {
		/* divide by the share of each window that lies inside the input (or, with
		 * count_include_pad, inside the input and its pads, not the ceil_mode
		 * extension) */
		int64_t d[4] = {1, 1, x->dim[2], x->dim[3]};
		Val *ones = ob_kfull(m, x->dt, 4, d, 1);
		int pad[2];
		Window w2 = *w;
		if (include) {
			for (int i = 0; i < 2; i++) {
				ones = ob_pad_axis(m, ones, 2 + i, w->lo[i], w->hi[i] - w->extra[i], 1);
				w2.lo[i] = 0;
				w2.hi[i] = w->extra[i];
			}
		}
		ones = split_padding(m, ones, &w2, true, 0, pad);
		Attrs a2 = at;
		a2.padding[0] = pad[0];
		a2.padding[1] = pad[1];
		Val *share = ones ? imp_emit(m, k, &ones, 1, &a2) : NULL;
		y = share ? ob_bin(m, OP_DIV, y, share) : NULL;
	}
	return y;
}

/* The window of spatial dims a and b of w (b < 0: a 1-wide one). */
static Window sub_window(const Window *w, int a, int b)
{
	Window s = {.nsp = 2};
	int from[2] = {a, b};
	for (int i = 0; i < 2; i++) {
		int j = from[i];
		s.kernel[i] = j >= 0 ? w->kernel[j] : 1;
		s.stride[i] = j >= 0 ? w->stride[j] : 1;
		s.dil[i] = j >= 0 ? w->dil[j] : 1;
		s.lo[i] = j >= 0 ? w->lo[j] : 0;
		s.hi[i] = j >= 0 ? w->hi[j] : 0;
		s.extra[i] = j >= 0 ? w->extra[j] : 0;
	}
	return s;
}

H(h_pool)
{
	if (ob_need_in(m, in, nin, 1))
		return -1;
	if (nout > 2 || (nout > 1 && h->kind != OP_MAX_POOL2D))
		return imp_fail(m, "output %d is not supported", nout > 2 ? 2 : 1);
	Val *x = in[0];
	if (nout > 1 && x->rank != 4)
		return imp_fail(m, "the Indices output of MaxPool is supported for 2-D pooling "
				"only (rank-4 inputs), not rank %d", x->rank);
	if (x->rank < 3 || x->rank > 5)
		return imp_fail(m, "pooling of rank-%d inputs is not supported (1-D, 2-D and 3-D "
				"are)", x->rank);
	OpKind k = h->kind;
	DType dt = x->dt;
	if (!ir_dtype_is_float(dt)) {
		if (k != OP_MAX_POOL2D || dt == DT_I64 || dt == DT_BOOL)
			return imp_fail(m, "pooling %s is not supported", ir_dtype_name(dt));
		x = ob_cast(m, x, DT_F64);   /* exact for every int up to 32 bits */
	}
	Window wi = {0};
	pool_dilations = k == OP_MAX_POOL2D;
	int rc = window(m, x, NULL, &wi, true);
	pool_dilations = false;
	if (rc)
		return -1;
	bool include = ob_ai(m, "count_include_pad", 0);
	if (nout > 1) {  /* MaxPool's Indices */
		Val *ind = NULL;
		Val *y = view_max(m, x, &wi, (int)ob_ai(m, "storage_order", 0), &ind);
		if (!y)
			return -1;
		out[0] = ob_cast(m, y, dt);
		out[1] = ind;
		return out[0] ? 0 : -1;
	}
	if (x->rank < 5) {
		Val *y = from2d(m, pool2d(m, k, to2d(m, x), &wi, include), x->rank);
		OUT(ob_cast(m, y, dt));
	}
	/* 3-D: separable, as max and mean over a box are (so are the shares of a
	 * padded box): first H and W on [N, C*D, H, W], then D on [N, C, D, H'*W'] */
	int64_t d4[4] = {x->dim[0], x->dim[1] * x->dim[2], x->dim[3], x->dim[4]};
	Window hw = sub_window(&wi, 1, 2), dd = sub_window(&wi, 0, -1);
	Val *y = pool2d(m, k, ob_reshape(m, x, 4, d4), &hw, include);
	if (!y)
		return -1;
	int64_t oh = y->dim[2], ow = y->dim[3];
	int64_t e4[4] = {x->dim[0], x->dim[1], x->dim[2], oh * ow};
	y = pool2d(m, k, ob_reshape(m, y, 4, e4), &dd, include);
	if (!y)
		return -1;
	int64_t d5[5] = {x->dim[0], x->dim[1], y->dim[2], oh, ow};
	OUT(ob_cast(m, ob_reshape(m, y, 5, d5), dt));
}

H(h_global_pool)
{
	NEED(1);
	Val *x = in[0];
	bool on[IR_MAX_RANK] = {false};
	for (int i = 2; i < x->rank; i++)
		on[i] = true;
	OUT(ob_reduce_axes(m, h->kind, x, on, true));
}

/* ---- normalization and softmax ------------------------------------------------------ */

/* Per-channel [C] parameter as [1, C, 1, ...] for an input of rank r. */
static Val *channel(Imp *m, Val *p, int r)
{
	if (!p || p->rank != 1)
		return p;
	int64_t d[IR_MAX_RANK];
	for (int i = 0; i < r; i++)
		d[i] = i == 1 ? p->dim[0] : 1;
	return ob_reshape(m, p, r, d);
}

static Val *normalize(Imp *m, Val *x, const bool *on, double eps, Val **mean_out,
		      Val **inv_out);

H(h_batchnorm)
{
	if (ob_need_in(m, in, nin, 5))
		return -1;
	if (nin > 5)
		return imp_fail(m, "too many inputs");
	Val *x = in[0];
	if (ob_need_float(m, x))
		return -1;
	double eps = ob_af(m, "epsilon", 1e-5);
	bool training = m->opset >= 14 ? ob_ai(m, "training_mode", 0) : nout > 1;
	if (nout > 3)
		return imp_fail(m, "outputs 3 and after (saved mean and variance, opset < 14) are "
				"not supported");
	if (training) {
		/* the batch's statistics over every axis but the channel's; running
		 * statistics: input * momentum + batch's * (1 - momentum), with the
		 * population variance (docs/onnx.md) */
		double mom = ob_af(m, "momentum", 0.9);
		bool on[IR_MAX_RANK] = {false};
		for (int i = 0; i < x->rank; i++)
			on[i] = i != 1;
		Val *mu = NULL, *inv = NULL;
		Val *y = normalize(m, x, on, eps, &mu, &inv);
		y = ob_bin(m, OP_ADD, ob_bin(m, OP_MUL, y, channel(m, in[1], x->rank)),
			channel(m, in[2], x->rank));
		out[0] = y;
		if (!y)
			return -1;
		for (int k = 1; k < nout; k++) {
			Val *stat = mu;
			if (k == 2) {  /* var = mean((x - mu)^2), again: exact, not 1/inv^2 - eps */
				Val *d = ob_bin(m, OP_SUB, x, mu);
				stat = ob_reduce_axes(m, OP_MEAN, d ? ob_bin(m, OP_MUL, d, d) : NULL, on,
						   true);
			}
			stat = stat ? ob_reshape(m, stat, 1, &x->dim[1]) : NULL;
			out[k] = ob_bin(m, OP_ADD, ob_sc(m, OP_MUL_SCALAR, in[2 + k], mom),
				     ob_sc(m, OP_MUL_SCALAR, stat, 1 - mom));
			if (!out[k])
				return -1;
		}
		return 0;
	}
	if (nout > 1)
		return imp_fail(m, "the running mean and variance outputs need training_mode=1");
	/* y = x * s + t, s = scale / sqrt(var + eps), t = B - mean * s: constants fold */
	Val *s = ob_bin(m, OP_DIV, in[1], ob_un(m, OP_SQRT, ob_sc(m, OP_ADD_SCALAR, in[4], eps)));
	Val *t = ob_bin(m, OP_SUB, in[2], ob_bin(m, OP_MUL, in[3], s));
	OUT(ob_bin(m, OP_ADD, ob_bin(m, OP_MUL, x, channel(m, s, x->rank)), channel(m, t, x->rank)));
}

/* (x - mean) / sqrt(var + eps) over the axes marked in on (kept as 1s). */
static Val *normalize(Imp *m, Val *x, const bool *on, double eps, Val **mean_out,
		      Val **inv_out)
{
	Val *mu = ob_reduce_axes(m, OP_MEAN, x, on, true);
	Val *d = ob_bin(m, OP_SUB, x, mu);
	Val *var = ob_reduce_axes(m, OP_MEAN, d ? ob_bin(m, OP_MUL, d, d) : NULL, on, true);
	Val *inv = ob_un(m, OP_RECIP, ob_un(m, OP_SQRT, ob_sc(m, OP_ADD_SCALAR, var, eps)));
	if (mean_out)
		*mean_out = mu;
	if (inv_out)
		*inv_out = inv;
	return ob_bin(m, OP_MUL, d, inv);
}

H(h_layernorm)
{
	if (ob_need_in(m, in, nin, 2))
		return -1;
	if (nout > 3)
		return imp_fail(m, "too many outputs");
	Val *x = in[0];
	if (ob_need_float(m, x))
		return -1;
	int64_t axis = ob_ai(m, "axis", -1);
	if (ob_norm_axis(m, &axis, x->rank))
		return -1;
	bool on[IR_MAX_RANK] = {false};
	for (int i = (int)axis; i < x->rank; i++)
		on[i] = true;
	Val *mu, *inv;
	Val *y = normalize(m, x, on, ob_af(m, "epsilon", 1e-5), &mu, &inv);
	y = ob_bin(m, OP_MUL, y, in[1]);
	if (nin > 2 && in[2])
		y = ob_bin(m, OP_ADD, y, in[2]);
	out[0] = y;
	if (nout > 1)
		out[1] = mu;
	if (nout > 2)
		out[2] = inv;
	return y ? 0 : -1;
}

H(h_instancenorm)
{
	NEED(3);
	Val *x = in[0];
	if (ob_need_float(m, x))
		return -1;
	bool on[IR_MAX_RANK] = {false};
	for (int i = 2; i < x->rank; i++)
		on[i] = true;
	Val *y = normalize(m, x, on, ob_af(m, "epsilon", 1e-5), NULL, NULL);
	y = ob_bin(m, OP_MUL, y, channel(m, in[1], x->rank));
	OUT(ob_bin(m, OP_ADD, y, channel(m, in[2], x->rank)));
}

H(h_softmax)
{
	NEED(1);
	Val *x = in[0];
	if (ob_need_float(m, x))
		return -1;
	int64_t axis = ob_ai(m, "axis", m->opset >= 13 ? -1 : 1);
	if (ob_norm_axis(m, &axis, x->rank))
		return -1;
	Val *v = x;
	int ax = (int)axis;
	if (m->opset < 13 && axis != x->rank - 1) {
		/* old semantics: over the flattened dims from axis on */
		int64_t d[2] = {1, 1};
		for (int i = 0; i < x->rank; i++)
			if (__builtin_mul_overflow(d[i >= axis], x->dim[i], &d[i >= axis]))
				return imp_fail(m, "the flattened dims multiply past 64 bits");
		v = ob_reshape(m, x, 2, d);
		ax = 1;
	}
	Val *mx = ob_reduce(m, OP_MAX_DIM, v, ax);
	Val *sh = ob_bin(m, OP_SUB, v, mx);
	Val *e = ob_un(m, OP_EXP, sh);
	Val *s = ob_reduce(m, OP_SUM, e, ax);
	Val *y;
	if (h->arg == 1)      /* LogSoftmax */
		y = ob_bin(m, OP_SUB, sh, ob_un(m, OP_LOG, s));
	else
		y = ob_bin(m, OP_DIV, e, s);
	if (y && v != x)
		y = ob_reshape(m, y, x->rank, x->dim);
	OUT(y);
}

/* ---- the table ------------------------------------------------------------------------ */

static const OnnxHandler handlers[] = {
	{"Abs", h_unary, OP_ABS, 0},
	{"Acos", h_arc, OP_COUNT, 2},
	{"Acosh", h_hyperbolic, OP_COUNT, 3},
	{"Add", h_binary, OP_ADD, 0},
	{"And", h_binary, OP_AND, 0},
	{"ArgMax", h_argreduce, OP_ARGMAX, 0},
	{"ArgMin", h_argreduce, OP_ARGMIN, 0},
	{"Asin", h_arc, OP_COUNT, 1},
	{"Asinh", h_hyperbolic, OP_COUNT, 2},
	{"Atan", h_arc, OP_COUNT, 0},
	{"Atanh", h_hyperbolic, OP_COUNT, 4},
	{"AveragePool", h_pool, OP_AVG_POOL2D, 0},
	{"BatchNormalization", h_batchnorm, OP_COUNT, 0},
	{"BlackmanWindow", h_window, OP_COUNT, 2},
	{"Cast", h_cast, OP_CAST, 0},
	{"CastLike", h_cast, OP_CAST, 1},
	{"Ceil", h_unary, OP_CEIL, 0},
	{"Celu", h_act, OP_COUNT, 10},
	{"Clip", h_clip, OP_CLAMP, 0},
	{"Concat", h_concat, OP_CAT, 0},
	{"Constant", h_constant, OP_COUNT, 0},
	{"ConstantOfShape", h_constant_of_shape, OP_COUNT, 0},
	{"Conv", h_conv, OP_CONV2D, 0},
	{"ConvTranspose", h_conv_transpose, OP_CONV2D, 0},
	{"Cos", h_unary, OP_COS, 0},
	{"Cosh", h_hyperbolic, OP_COUNT, 1},
	{"CumSum", h_cumsum, OP_ADD, 0},
	{"DepthToSpace", h_space_depth, OP_PERMUTE, 0},
	{"DequantizeLinear", h_dequantize, OP_MUL, 0},
	{"Div", h_binary, OP_DIV, 0},
	{"Dropout", h_identity, OP_COUNT, 1},
	{"DynamicQuantizeLinear", h_dyn_quantize, OP_ROUND, 0},
	{"Einsum", h_einsum, OP_MATMUL, 0},
	{"Elu", h_act, OP_COUNT, 3},
	{"Equal", h_binary, OP_EQ, 0},
	{"Erf", h_unary, OP_ERF, 0},
	{"Exp", h_unary, OP_EXP, 0},
	{"Expand", h_expand, OP_EXPAND, 0},
	{"EyeLike", h_eyelike, OP_COUNT, 0},
	{"Flatten", h_flatten, OP_RESHAPE, 0},
	{"Floor", h_unary, OP_FLOOR, 0},
	{"Gather", h_gather, OP_GATHER, 0},
	{"GatherElements", h_gather_elements, OP_GATHER, 0},
	{"GatherND", h_gathernd, OP_GATHER, 0},
	{"Gelu", h_act, OP_GELU, 9},
	{"Gemm", h_gemm, OP_MATMUL, 0},
	{"GlobalAveragePool", h_global_pool, OP_MEAN, 0},
	{"GlobalMaxPool", h_global_pool, OP_MAX_DIM, 0},
	{"Greater", h_binary, OP_GT, 0},
	{"GreaterOrEqual", h_binary, OP_GE, 0},
	{"HammingWindow", h_window, OP_COUNT, 1},
	{"HannWindow", h_window, OP_COUNT, 0},
	{"HardSigmoid", h_act, OP_COUNT, 0},
	{"HardSwish", h_act, OP_COUNT, 1},
	{"Hardmax", h_hardmax, OP_ARGMAX, 0},
	{"Identity", h_identity, OP_COUNT, 0},
	{"InstanceNormalization", h_instancenorm, OP_COUNT, 0},
	{"IsInf", h_isinf, OP_IS_INF, 0},
	{"IsNaN", h_unary, OP_IS_NAN, 0},
	{"LRN", h_lrn, OP_COUNT, 0},
	{"LayerNormalization", h_layernorm, OP_COUNT, 0},
	{"LeakyRelu", h_act, OP_COUNT, 2},
	{"Less", h_binary, OP_LT, 0},
	{"LessOrEqual", h_binary, OP_LE, 0},
	{"Log", h_unary, OP_LOG, 0},
	{"LogSoftmax", h_softmax, OP_COUNT, 1},
	{"MatMul", h_matmul, OP_MATMUL, 0},
	{"Max", h_variadic, OP_MAX, 0},
	{"MaxPool", h_pool, OP_MAX_POOL2D, 0},
	{"Mean", h_variadic, OP_ADD, 1},
	{"MeanVarianceNormalization", h_mvn, OP_MEAN, 0},
	{"Min", h_variadic, OP_MIN, 0},
	{"Mish", h_act, OP_COUNT, 7},
	{"Mod", h_mod, OP_REM, 0},
	{"Mul", h_binary, OP_MUL, 0},
	{"Neg", h_unary, OP_NEG, 0},
	{"NegativeLogLikelihoodLoss", h_nllloss, OP_GATHER, 0},
	{"Not", h_unary, OP_NOT, 0},
	{"OneHot", h_onehot, OP_EQ, 0},
	{"Or", h_binary, OP_OR, 0},
	{"PRelu", h_prelu, OP_COUNT, 0},
	{"Pad", h_pad, OP_CAT, 0},
	{"Pow", h_pow, OP_POW, 0},
	{"QuantizeLinear", h_quantize, OP_ROUND, 0},
	{"Range", h_range, OP_COUNT, 0},
	{"Reciprocal", h_unary, OP_RECIP, 0},
	{"ReduceL1", h_reduce, OP_SUM, RED_L1},
	{"ReduceL2", h_reduce, OP_SUM, RED_L2},
	{"ReduceLogSum", h_reduce, OP_SUM, RED_LOGSUM},
	{"ReduceLogSumExp", h_reduce, OP_SUM, RED_LOGSUMEXP},
	{"ReduceMax", h_reduce, OP_MAX_DIM, 0},
	{"ReduceMean", h_reduce, OP_MEAN, 0},
	{"ReduceMin", h_reduce, OP_MIN_DIM, 0},
	{"ReduceProd", h_reduce, OP_PROD, 0},
	{"ReduceSum", h_reduce, OP_SUM, 0},
	{"ReduceSumSquare", h_reduce, OP_SUM, RED_SUMSQ},
	{"Relu", h_unary, OP_RELU, 0},
	{"Reshape", h_reshape, OP_RESHAPE, 0},
	{"Resize", h_resize, OP_GATHER, 0},
	{"Round", h_unary, OP_ROUND, 0},
	{"Scatter", h_scatter_elements, OP_WHERE, 0},
	{"ScatterElements", h_scatter_elements, OP_WHERE, 0},
	{"ScatterND", h_scatternd, OP_WHERE, 0},
	{"Selu", h_act, OP_COUNT, 4},
	{"Shape", h_shape, OP_COUNT, 0},
	{"Shrink", h_shrink, OP_WHERE, 0},
	{"Sigmoid", h_unary, OP_SIGMOID, 0},
	{"Sign", h_unary, OP_SIGN, 0},
	{"Sin", h_unary, OP_SIN, 0},
	{"Sinh", h_hyperbolic, OP_COUNT, 0},
	{"Size", h_size, OP_COUNT, 0},
	{"Slice", h_slice, OP_SLICE, 0},
	{"Softmax", h_softmax, OP_COUNT, 0},
	{"SoftmaxCrossEntropyLoss", h_sce_loss, OP_GATHER, 0},
	{"Softplus", h_act, OP_COUNT, 5},
	{"Softsign", h_act, OP_COUNT, 6},
	{"SpaceToDepth", h_space_depth, OP_PERMUTE, 1},
	{"Split", h_split, OP_SLICE, 0},
	{"Sqrt", h_unary, OP_SQRT, 0},
	{"Squeeze", h_squeeze, OP_RESHAPE, 0},
	{"Sub", h_binary, OP_SUB, 0},
	{"Sum", h_variadic, OP_ADD, 0},
	{"Tan", h_tan, OP_COUNT, 0},
	{"Tanh", h_unary, OP_TANH, 0},
	{"ThresholdedRelu", h_act, OP_COUNT, 8},
	{"Tile", h_tile, OP_CAT, 0},
	{"Transpose", h_transpose, OP_PERMUTE, 0},
	{"Trilu", h_trilu, OP_MASK_FILL, 0},
	{"Unsqueeze", h_unsqueeze, OP_RESHAPE, 0},
	{"Upsample", h_upsample, OP_GATHER, 0},
	{"Where", h_where, OP_WHERE, 0},
	{"Xor", h_binary, OP_XOR, 0},
};

const OnnxHandler *onnx_handler(const char *op_type)
{
	size_t lo = 0, hi = sizeof handlers / sizeof handlers[0];
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(handlers[mid].name, op_type);
		if (!c)
			return &handlers[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

bool onnx_op_mapped(const char *op_type)
{
	return op_type && onnx_handler(op_type);
}

int onnx_handler_count(void)
{
	return (int)(sizeof handlers / sizeof handlers[0]);
}

const char *onnx_handler_name(int i)
{
	return handlers[i].name;
}
