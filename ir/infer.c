/* infer.c: dtype and shape inference for every op of the table (SPEC §1, §1.1).
 *
 * ir_infer checks the op's arity and required attributes, then dispatches on the
 * op's ShapeRule (ops.def) to one function per rule. No rule promotes: binary ops
 * need equal dtypes and equal ranks, and each dim pair must be equal or contain a 1.
 * The result is built in a local InferShape and copied to the output tensor only on
 * success, so a failed inference leaves the tensor untouched. A final check rejects
 * any result whose element count does not fit in int64. Messages carry no position:
 * the reader prefixes "op 'NAME' (ops[I]): ".
 *
 * Decisions beyond the SPEC table:
 * - Axis values (axis, permute axes, swap_dims dims) accept -rank..rank-1 and are
 *   rewritten to 0..rank-1 in attr. conv2d and pool options left at 0 are rewritten
 *   to their defaults (stride 1, or the kernel for pools; dilation 1; groups 1).
 * - mask_fill: the bool mask must broadcast into x; the result has x's shape and
 *   dtype (as torch's in-place masked_fill), so a fill never grows its input.
 * - where: mask, a and b broadcast pairwise; the result takes the largest dim.
 * - Reductions, argmax/argmin and matmul reject bool; matmul accepts ints.
 * - conv2d and the pools are float only, as burn's module ops. */
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir.h"

typedef struct {
	DType dtype;
	int rank;
	int64_t dim[IR_MAX_RANK];  /* entries past rank are unused */
} InferShape;

typedef struct {
	const Graph *g;            /* holds the operand tensors */
	const Op *op;
	Attrs *attr;               /* never NULL here: a zeroed one stands in */
	char *msg;                 /* where an error message goes */
	size_t msgsize;
	InferShape out;            /* the result being built */
} Infer;

static IrShapeText tensor_text(const Tensor *t)
{
	return ir_shape_text(t->rank, t->dim);
}

static IrShapeText pair_text(const int v[2])
{
	int64_t d[2] = {v[0], v[1]};
	return ir_shape_text(2, d);
}

static int fail(Infer *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(Infer *c, const char *fmt, ...)
{
	if (c->msgsize) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->msg, c->msgsize, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static const Tensor *input(const Infer *c, int i)
{
	return &c->g->tensors[c->op->in[i]];
}

static void copy_shape(Infer *c, const Tensor *t, DType dtype)
{
	c->out.dtype = dtype;
	c->out.rank = t->rank;
	memcpy(c->out.dim, t->dim, sizeof t->dim);
}

/* ---- dtype classes --------------------------------------------------------- */

typedef enum { NEED_NUMERIC, NEED_FLOAT, NEED_SIGNED, NEED_BOOL } DTypeClass;

static int need(Infer *c, DType t, DTypeClass k)
{
	static const char *what[] = {"numeric", "float", "signed", "bool"};
	bool ok = false;
	switch (k) {
	case NEED_NUMERIC: ok = t != DT_BOOL; break;
	case NEED_FLOAT: ok = ir_dtype_is_float(t); break;
	case NEED_SIGNED: ok = ir_dtype_is_signed(t); break;
	case NEED_BOOL: ok = t == DT_BOOL; break;
	}
	if (ok)
		return 0;
	return fail(c, "op needs a %s tensor, got %s", what[k], ir_dtype_name(t));
}

static int same_dtype(Infer *c, const Tensor *a, const Tensor *b)
{
	if (a->dtype == b->dtype)
		return 0;
	return fail(c, "dtypes %s and %s differ", ir_dtype_name(a->dtype),
		    ir_dtype_name(b->dtype));
}

static int same_rank(Infer *c, int ra, int rb)
{
	if (ra == rb)
		return 0;
	return fail(c, "ranks %d and %d differ", ra, rb);
}

static int norm_axis(Infer *c, int *axis, int rank)
{
	if (*axis < -rank || *axis >= rank)
		return fail(c, "axis %d is out of range for rank %d", *axis, rank);
	if (*axis < 0)
		*axis += rank;
	return 0;
}

/* ---- broadcasting ---------------------------------------------------------- */

static bool dims_broadcast(const Tensor *a, const Tensor *b)
{
	for (int i = 0; i < a->rank; i++)
		if (a->dim[i] != b->dim[i] && a->dim[i] != 1 && b->dim[i] != 1)
			return false;
	return true;
}

/* Place lo's dims lo[0..k) at increasing positions below `end` of a shape of hi's
 * rank (1 elsewhere) so that the result broadcasts with hi: the last dim goes as far
 * right as it can, so the first placement tried is numpy's (leading 1s). */
static bool place_dims(const int64_t *lo, int k, const int64_t *hi, int end, int64_t *dim)
{
	if (k == 0) {
		for (int i = 0; i < end; i++)
			dim[i] = 1;
		return true;
	}
	for (int p = end - 1; p >= k - 1; p--) {
		if (lo[k - 1] != hi[p] && lo[k - 1] != 1 && hi[p] != 1)
			continue;
		for (int i = p + 1; i < end; i++)
			dim[i] = 1;
		dim[p] = lo[k - 1];
		if (place_dims(lo, k - 1, hi, p, dim))
			return true;
	}
	return false;
}

static int check_broadcast(Infer *c, const Tensor *a, const Tensor *b)
{
	if (a->rank != b->rank) {
		/* burn broadcasts only tensors of one rank: say how to get there, with a
		 * reshape that broadcasts ([8] against [8,64] becomes [8,1], not [1,8]) */
		const Tensor *lo = a->rank < b->rank ? a : b, *hi = lo == a ? b : a;
		int64_t dim[IR_MAX_RANK];
		if (!place_dims(lo->dim, lo->rank, hi->dim, hi->rank, dim))
			return fail(c, "ranks %d and %d differ (%s and %s); operands broadcast only "
				    "at the same rank, and no reshape of the %s operand to rank %d "
				    "broadcasts with %s", a->rank, b->rank, tensor_text(a).s,
				    tensor_text(b).s, ir_shape_text(lo->rank, lo->dim).s, hi->rank,
				    ir_shape_text(hi->rank, hi->dim).s);
		return fail(c, "ranks %d and %d differ (%s and %s); operands broadcast only at "
			    "the same rank: reshape the %s operand to %s first", a->rank, b->rank,
			    tensor_text(a).s, tensor_text(b).s, ir_shape_text(lo->rank, lo->dim).s,
			    ir_shape_text(hi->rank, dim).s);
	}
	if (!dims_broadcast(a, b))
		return fail(c, "shapes %s and %s do not broadcast", tensor_text(a).s,
			    tensor_text(b).s);
	return 0;
}

/* Widen c->out (rank already set) by t: each dim becomes the larger one. */
static void widen(Infer *c, const Tensor *t)
{
	for (int i = 0; i < t->rank; i++)
		if (t->dim[i] > c->out.dim[i])
			c->out.dim[i] = t->dim[i];
}

static int rule_binary(Infer *c, DTypeClass k, bool to_bool)
{
	const Tensor *a = input(c, 0), *b = input(c, 1);
	if (same_dtype(c, a, b) || need(c, a->dtype, k) || check_broadcast(c, a, b))
		return -1;
	copy_shape(c, a, to_bool ? DT_BOOL : a->dtype);
	widen(c, b);
	return 0;
}

static int rule_compare(Infer *c)
{
	const Tensor *a = input(c, 0), *b = input(c, 1);
	if (same_dtype(c, a, b) || check_broadcast(c, a, b))
		return -1;
	copy_shape(c, a, DT_BOOL);
	widen(c, b);
	return 0;
}

static int rule_unary(Infer *c, DTypeClass k, DType result)
{
	const Tensor *x = input(c, 0);
	if (need(c, x->dtype, k))
		return -1;
	copy_shape(c, x, result == DT_COUNT ? x->dtype : result);
	return 0;
}

static int rule_where(Infer *c)
{
	const Tensor *m = input(c, 0), *a = input(c, 1), *b = input(c, 2);
	if (m->dtype != DT_BOOL)
		return fail(c, "mask must be bool, got %s", ir_dtype_name(m->dtype));
	if (same_dtype(c, a, b) || check_broadcast(c, a, b) || check_broadcast(c, m, a) ||
	    check_broadcast(c, m, b))
		return -1;
	copy_shape(c, a, a->dtype);
	widen(c, b);
	widen(c, m);
	return 0;
}

static int rule_mask_fill(Infer *c)
{
	const Tensor *x = input(c, 0), *m = input(c, 1);
	if (m->dtype != DT_BOOL)
		return fail(c, "mask must be bool, got %s", ir_dtype_name(m->dtype));
	if (same_rank(c, x->rank, m->rank))
		return -1;
	for (int i = 0; i < x->rank; i++)
		if (m->dim[i] != x->dim[i] && m->dim[i] != 1)
			return fail(c, "mask %s does not broadcast to %s", tensor_text(m).s,
				    tensor_text(x).s);
	copy_shape(c, x, x->dtype);
	return 0;
}

static int rule_cast(Infer *c)
{
	if ((unsigned)c->attr->dtype >= DT_COUNT)
		return fail(c, "unknown cast dtype %d", (int)c->attr->dtype);
	copy_shape(c, input(c, 0), c->attr->dtype);
	return 0;
}

/* ---- views ----------------------------------------------------------------- */

static int rule_reshape(Infer *c)
{
	const Tensor *x = input(c, 0);
	Attrs *at = c->attr;
	if (at->n < 0 || at->n > IR_MAX_RANK)
		return fail(c, "reshape to rank %d; the most is %d", at->n, IR_MAX_RANK);
	int64_t total = 1, known = 1;
	for (int i = 0; i < x->rank; i++)
		total *= x->dim[i];
	int infer_at = -1;
	for (int i = 0; i < at->n; i++) {
		int64_t d = at->shape[i];
		if (d == -1) {
			if (infer_at >= 0)
				return fail(c, "reshape shape %s has more than one -1",
					    ir_shape_text(at->n, at->shape).s);
			infer_at = i;
		} else if (d < 1) {
			return fail(c, "reshape shape %s has an invalid dim %lld",
				    ir_shape_text(at->n, at->shape).s, (long long)d);
		} else if (__builtin_mul_overflow(known, d, &known) || known > total) {
			return fail(c, "cannot reshape %s into %s", tensor_text(x).s,
				    ir_shape_text(at->n, at->shape).s);
		}
	}
	if (infer_at < 0 ? known != total : total % known != 0)
		return fail(c, "cannot reshape %s into %s", tensor_text(x).s,
			    ir_shape_text(at->n, at->shape).s);
	c->out.dtype = x->dtype;
	c->out.rank = at->n;
	for (int i = 0; i < at->n; i++)
		c->out.dim[i] = i == infer_at ? total / known : at->shape[i];
	return 0;
}

static int rule_permute(Infer *c)
{
	const Tensor *x = input(c, 0);
	Attrs *at = c->attr;
	if (at->n != x->rank)
		return fail(c, "permute needs %d axes, got %d", x->rank, at->n);
	bool seen[IR_MAX_RANK] = {false};
	for (int i = 0; i < at->n; i++) {
		if (norm_axis(c, &at->axes[i], x->rank))
			return -1;
		if (seen[at->axes[i]])
			return fail(c, "axes repeat axis %d; they must be a permutation",
				    at->axes[i]);
		seen[at->axes[i]] = true;
	}
	c->out.dtype = x->dtype;
	c->out.rank = x->rank;
	for (int i = 0; i < x->rank; i++)
		c->out.dim[i] = x->dim[at->axes[i]];
	return 0;
}

static int rule_swap_dims(Infer *c)
{
	const Tensor *x = input(c, 0);
	Attrs *at = c->attr;
	if (norm_axis(c, &at->axes[0], x->rank) || norm_axis(c, &at->axes[1], x->rank))
		return -1;
	copy_shape(c, x, x->dtype);
	c->out.dim[at->axes[0]] = x->dim[at->axes[1]];
	c->out.dim[at->axes[1]] = x->dim[at->axes[0]];
	return 0;
}

static int rule_expand(Infer *c)
{
	const Tensor *x = input(c, 0);
	Attrs *at = c->attr;
	IrShapeText to = ir_shape_text(at->n, at->shape);
	if (at->n != x->rank)
		return fail(c, "cannot expand %s to %s: ranks %d and %d differ",
			    tensor_text(x).s, to.s, x->rank, at->n);
	for (int i = 0; i < at->n; i++) {
		if (at->shape[i] < 1)
			return fail(c, "expand shape %s has an invalid dim %lld", to.s,
				    (long long)at->shape[i]);
		if (x->dim[i] != at->shape[i] && x->dim[i] != 1)
			return fail(c, "cannot expand %s to %s", tensor_text(x).s, to.s);
	}
	c->out.dtype = x->dtype;
	c->out.rank = at->n;
	memcpy(c->out.dim, at->shape, sizeof at->shape);
	return 0;
}

static int rule_slice(Infer *c)
{
	const Tensor *x = input(c, 0);
	Attrs *at = c->attr;
	if (at->n < 0 || at->n > x->rank)
		return fail(c, "slice has %d ranges for rank %d", at->n, x->rank);
	copy_shape(c, x, x->dtype);
	for (int i = 0; i < at->n; i++) {
		int64_t s = at->range[i][0], e = at->range[i][1];
		if (s < 0 || e > x->dim[i])
			return fail(c, "slice range [%lld,%lld] is out of bounds for dim %d of size %lld",
				    (long long)s, (long long)e, i, (long long)x->dim[i]);
		if (s >= e)
			return fail(c, "slice range [%lld,%lld] of dim %d is empty", (long long)s,
				    (long long)e, i);
		c->out.dim[i] = e - s;
	}
	return 0;
}

/* ---- reductions, matmul, joins --------------------------------------------- */

static int rule_reduce(Infer *c, bool arg)
{
	const Tensor *x = input(c, 0);
	if (need(c, x->dtype, NEED_NUMERIC) || norm_axis(c, &c->attr->axis, x->rank))
		return -1;
	copy_shape(c, x, arg ? DT_I64 : x->dtype);
	c->out.dim[c->attr->axis] = 1;
	return 0;
}

static int rule_matmul(Infer *c)
{
	const Tensor *a = input(c, 0), *b = input(c, 1);
	if (same_dtype(c, a, b) || need(c, a->dtype, NEED_NUMERIC))
		return -1;
	if (a->rank < 2 || b->rank < 2)
		return fail(c, "matmul needs rank 2 or more, got %s x %s", tensor_text(a).s,
			    tensor_text(b).s);
	if (same_rank(c, a->rank, b->rank))
		return -1;
	int r = a->rank;
	for (int i = 0; i < r - 2; i++)
		if (a->dim[i] != b->dim[i] && a->dim[i] != 1 && b->dim[i] != 1)
			return fail(c, "matmul batch dims do not broadcast: %s x %s",
				    tensor_text(a).s, tensor_text(b).s);
	if (a->dim[r - 1] != b->dim[r - 2])
		return fail(c, "matmul inner dims differ: %s x %s", tensor_text(a).s,
			    tensor_text(b).s);
	copy_shape(c, a, a->dtype);
	for (int i = 0; i < r - 2; i++)
		if (b->dim[i] > c->out.dim[i])
			c->out.dim[i] = b->dim[i];
	c->out.dim[r - 1] = b->dim[r - 1];
	return 0;
}

/* attention(q [..., M, D], kt [..., D, N], v [..., N, E], bias [..., M, N]) ->
 * [..., M, E]: one float dtype, one rank, batch dims broadcast (as matmul's), the
 * bias broadcast to the scores' shape. */
static int rule_attention(Infer *c)
{
	const Tensor *q = input(c, 0), *kt = input(c, 1), *v = input(c, 2);
	if (need(c, q->dtype, NEED_FLOAT))
		return -1;
	/* a bool fourth operand is a mask, whose scores become `min` */
	bool mask = c->op->nin == 4 && input(c, 3)->dtype == DT_BOOL;
	for (int k = 1; k < c->op->nin; k++)
		if ((!(mask && k == 3) && same_dtype(c, q, input(c, k))) ||
		    same_rank(c, q->rank, input(c, k)->rank))
			return -1;
	if (mask && !(c->attr->has & A_MIN))
		return fail(c, "attention with a bool mask needs attribute 'min' (the score where "
			    "the mask is true)");
	int r = q->rank;
	if (r < 2)
		return fail(c, "attention needs rank 2 or more, got %s", tensor_text(q).s);
	if (kt->dim[r - 2] != q->dim[r - 1] || v->dim[r - 2] != kt->dim[r - 1])
		return fail(c, "attention dims differ: q %s, kt %s, v %s (want [..., M, D], "
			    "[..., D, N], [..., N, E])", tensor_text(q).s, tensor_text(kt).s,
			    tensor_text(v).s);
	copy_shape(c, q, q->dtype);
	/* kt's and v's batch dims broadcast, or group: a dim of b that divides q's a
	 * has each of its b heads read by a / b heads of q in a row (grouped-query
	 * attention: q's head h reads head h / (a / b)) */
	for (int k = 1; k < 3; k++)
		for (int i = 0; i < r - 2; i++) {
			int64_t a = c->out.dim[i], b = input(c, k)->dim[i];
			if (a != b && a != 1 && b != 1 && a % b != 0)
				return fail(c, "attention batch dims neither broadcast nor group: q %s, "
					    "kt %s, v %s", tensor_text(q).s, tensor_text(kt).s,
					    tensor_text(v).s);
			if (b > a)
				c->out.dim[i] = b;
		}
	if (c->op->nin == 4) {
		const Tensor *bias = input(c, 3);
		for (int i = 0; i < r; i++) {
			int64_t want = i == r - 2 ? q->dim[r - 2] : i == r - 1 ? kt->dim[r - 1] :
				       c->out.dim[i];
			if (bias->dim[i] != 1 && bias->dim[i] != want)
				return fail(c, "attention %s %s does not broadcast to the scores",
					    mask ? "mask" : "bias", tensor_text(bias).s);
		}
	}
	c->out.dim[r - 1] = v->dim[r - 1];
	return 0;
}

static int rule_cat(Infer *c)
{
	const Tensor *first = input(c, 0);
	if (norm_axis(c, &c->attr->axis, first->rank))
		return -1;
	int axis = c->attr->axis;
	copy_shape(c, first, first->dtype);
	for (int k = 1; k < c->op->nin; k++) {
		const Tensor *t = input(c, k);
		if (same_dtype(c, first, t) || same_rank(c, first->rank, t->rank))
			return -1;
		for (int i = 0; i < t->rank; i++)
			if (i != axis && t->dim[i] != first->dim[i])
				return fail(c, "shapes %s and %s differ outside axis %d",
					    tensor_text(first).s, tensor_text(t).s, axis);
		if (__builtin_add_overflow(c->out.dim[axis], t->dim[axis], &c->out.dim[axis]))
			return fail(c, "cat size along axis %d overflows int64", axis);
	}
	return 0;
}

static int rule_gather(Infer *c)
{
	const Tensor *x = input(c, 0), *idx = input(c, 1);
	if (idx->dtype != DT_I32 && idx->dtype != DT_I64)
		return fail(c, "index must be i32 or i64, got %s", ir_dtype_name(idx->dtype));
	if (same_rank(c, x->rank, idx->rank) || norm_axis(c, &c->attr->axis, x->rank))
		return -1;
	for (int i = 0; i < x->rank; i++)
		if (i != c->attr->axis && idx->dim[i] > x->dim[i])
			return fail(c, "index %s does not fit %s outside axis %d",
				    tensor_text(idx).s, tensor_text(x).s, c->attr->axis);
	copy_shape(c, idx, x->dtype);
	return 0;
}

/* ---- module ops ------------------------------------------------------------ */

static void default_pair(int v[2], int def)
{
	for (int i = 0; i < 2; i++)
		if (v[i] == 0)
			v[i] = def;
}

static int positive_pair(Infer *c, const char *what, const int v[2])
{
	if (v[0] >= 1 && v[1] >= 1)
		return 0;
	return fail(c, "%s %s must be positive", what, pair_text(v).s);
}

/* One spatial output size: (in + 2 pad - dil (k - 1) - 1) / stride + 1, or -1 when
 * the window does not fit (or the arithmetic overflows). */
static int64_t window_out(int64_t in, int pad, int dil, int64_t k, int stride)
{
	int64_t span, num;
	if (__builtin_mul_overflow((int64_t)dil, k - 1, &span) ||
	    __builtin_add_overflow(in, 2 * (int64_t)pad, &num) ||
	    __builtin_sub_overflow(num, span, &num) || num < 1)
		return -1;
	return (num - 1) / stride + 1;
}

/* The axes of a conv's or pool's tensors in its layout: channels, then the two
 * spatial axes (x and the result); a weight's are [OC][C/g][KH][KW] or, channels
 * last, [OC][KH][KW][C/g]. */
typedef struct {
	int c, h, w;
} Axes;

static Axes layout_axes(const Attrs *at)
{
	return at->layout == LAYOUT_NHWC ? (Axes){3, 1, 2} : (Axes){1, 2, 3};
}

static int rule_conv2d(Infer *c)
{
	const Tensor *x = input(c, 0), *w = input(c, 1);
	const Tensor *bias = c->op->nin > 2 ? input(c, 2) : NULL;
	Attrs *at = c->attr;
	if (need(c, x->dtype, NEED_FLOAT) || same_dtype(c, x, w) ||
	    (bias && same_dtype(c, x, bias)))
		return -1;
	if (x->rank != 4)
		return fail(c, "input must have rank 4, got %s", tensor_text(x).s);
	if (w->rank != 4)
		return fail(c, "weight must have rank 4, got %s", tensor_text(w).s);
	default_pair(at->stride, 1);
	default_pair(at->dilation, 1);
	if (at->groups == 0)
		at->groups = 1;
	if (positive_pair(c, "stride", at->stride) || positive_pair(c, "dilation", at->dilation))
		return -1;
	if (at->padding[0] < 0 || at->padding[1] < 0)
		return fail(c, "padding %s must not be negative", pair_text(at->padding).s);
	if (at->groups < 1)
		return fail(c, "groups must be positive, got %d", at->groups);
	Axes a = layout_axes(at);
	/* the weight: per-group channels at wc, the window at wh, ww */
	int wc = a.c == 1 ? 1 : 3, wh = a.c == 1 ? 2 : 1, ww = wh + 1;
	int64_t ch = x->dim[a.c], och = w->dim[0], g = at->groups;
	if (ch % g)
		return fail(c, "input channels %lld are not divisible by groups %lld",
			    (long long)ch, (long long)g);
	if (och % g)
		return fail(c, "output channels %lld are not divisible by groups %lld",
			    (long long)och, (long long)g);
	if (w->dim[wc] != ch / g)
		return fail(c, "weight %s needs %lld channels per group (input %s, groups %lld%s)",
			    tensor_text(w).s, (long long)(ch / g), tensor_text(x).s,
			    (long long)g, a.c == 1 ? "" : ", layout nhwc");
	if (bias && (bias->rank != 1 || bias->dim[0] != och))
		return fail(c, "bias must be [%lld], got %s", (long long)och,
			    tensor_text(bias).s);
	/* the window's size, from the weight, as the pools hold theirs: part of the op's
	 * relative form, so that a kernel knows it (codegen unrolls the window) */
	if (w->dim[wh] > 0 && w->dim[wh] <= INT32_MAX && w->dim[ww] > 0 &&
	    w->dim[ww] <= INT32_MAX) {
		at->kernel[0] = (int)w->dim[wh];
		at->kernel[1] = (int)w->dim[ww];
	}
	int64_t ho = window_out(x->dim[a.h], at->padding[0], at->dilation[0], w->dim[wh],
				at->stride[0]);
	int64_t wo = window_out(x->dim[a.w], at->padding[1], at->dilation[1], w->dim[ww],
				at->stride[1]);
	if (ho < 1 || wo < 1)
		return fail(c, "input %s is too small for weight %s with padding %s and dilation %s",
			    tensor_text(x).s, tensor_text(w).s, pair_text(at->padding).s,
			    pair_text(at->dilation).s);
	c->out.dtype = x->dtype;
	c->out.rank = 4;
	c->out.dim[0] = x->dim[0];
	c->out.dim[a.c] = och;
	c->out.dim[a.h] = ho;
	c->out.dim[a.w] = wo;
	return 0;
}

static int rule_pool2d(Infer *c)
{
	const Tensor *x = input(c, 0);
	Attrs *at = c->attr;
	if (need(c, x->dtype, NEED_FLOAT))
		return -1;
	if (x->rank != 4)
		return fail(c, "input must have rank 4, got %s", tensor_text(x).s);
	if (positive_pair(c, "kernel", at->kernel))
		return -1;
	for (int i = 0; i < 2; i++)
		if (at->stride[i] == 0)
			at->stride[i] = at->kernel[i];
	if (positive_pair(c, "stride", at->stride))
		return -1;
	if (at->padding[0] < 0 || at->padding[1] < 0)
		return fail(c, "padding %s must not be negative", pair_text(at->padding).s);
	if (at->padding[0] > at->kernel[0] / 2 || at->padding[1] > at->kernel[1] / 2)
		return fail(c, "padding %s is more than half of kernel %s",
			    pair_text(at->padding).s, pair_text(at->kernel).s);
	Axes a = layout_axes(at);
	int64_t ho = window_out(x->dim[a.h], at->padding[0], 1, at->kernel[0], at->stride[0]);
	int64_t wo = window_out(x->dim[a.w], at->padding[1], 1, at->kernel[1], at->stride[1]);
	if (ho < 1 || wo < 1)
		return fail(c, "input %s is too small for kernel %s with padding %s",
			    tensor_text(x).s, pair_text(at->kernel).s, pair_text(at->padding).s);
	copy_shape(c, x, x->dtype);
	c->out.dim[a.h] = ho;
	c->out.dim[a.w] = wo;
	return 0;
}

/* ---- entry ----------------------------------------------------------------- */

static int check_arity(Infer *c, const OpInfo *info)
{
	int n = c->op->nin;
	if (n >= info->nin_min && (info->nin_max < 0 || n <= info->nin_max))
		return 0;
	if (info->nin_max < 0)
		return fail(c, "needs at least %d input%s, got %d", info->nin_min,
			    info->nin_min == 1 ? "" : "s", n);
	if (info->nin_min == info->nin_max)
		return fail(c, "needs %d input%s, got %d", info->nin_min,
			    info->nin_min == 1 ? "" : "s", n);
	return fail(c, "needs %d to %d inputs, got %d", info->nin_min, info->nin_max, n);
}

static int dispatch(Infer *c, ShapeRule rule)
{
	switch (rule) {
	case SR_NONE: case SR_COUNT_: return 0;
	case SR_BINARY: return rule_binary(c, NEED_NUMERIC, false);
	case SR_BINARY_FLOAT: return rule_binary(c, NEED_FLOAT, false);
	case SR_BINARY_BOOL: return rule_binary(c, NEED_BOOL, false);
	case SR_UNARY: return rule_unary(c, NEED_NUMERIC, DT_COUNT);
	case SR_UNARY_SIGNED: return rule_unary(c, NEED_SIGNED, DT_COUNT);
	case SR_UNARY_NUMERIC: return rule_unary(c, NEED_NUMERIC, DT_COUNT);
	case SR_UNARY_FLOAT: return rule_unary(c, NEED_FLOAT, DT_COUNT);
	case SR_UNARY_FLOAT_TO_BOOL: return rule_unary(c, NEED_FLOAT, DT_BOOL);
	case SR_UNARY_BOOL: return rule_unary(c, NEED_BOOL, DT_COUNT);
	case SR_COMPARE: return rule_compare(c);
	case SR_COMPARE_SCALAR: copy_shape(c, input(c, 0), DT_BOOL); return 0;
	case SR_WHERE: return rule_where(c);
	case SR_MASK_FILL: return rule_mask_fill(c);
	case SR_CAST: return rule_cast(c);
	case SR_RESHAPE: return rule_reshape(c);
	case SR_PERMUTE: return rule_permute(c);
	case SR_SWAP_DIMS: return rule_swap_dims(c);
	case SR_EXPAND: return rule_expand(c);
	case SR_SLICE: return rule_slice(c);
	case SR_REDUCE: return rule_reduce(c, false);
	case SR_ARG_REDUCE: return rule_reduce(c, true);
	case SR_MATMUL: return rule_matmul(c);
	case SR_ATTENTION: return rule_attention(c);
	case SR_CAT: return rule_cat(c);
	case SR_GATHER: return rule_gather(c);
	case SR_CONV2D: return rule_conv2d(c);
	case SR_POOL2D: return rule_pool2d(c);
	}
	die("unknown shape rule %d", (int)rule);
}

int ir_infer(const Graph *g, const Op *op, Attrs *attr, Tensor *out, char *msg, size_t msgsize)
{
	if ((unsigned)op->kind >= OP_COUNT)
		die("op kind %d out of range", (int)op->kind);
	const OpInfo *info = &ir_ops[op->kind];
	Attrs none = {0};
	Infer c = {.g = g, .op = op, .attr = attr ? attr : &none, .msg = msg,
		   .msgsize = msgsize};
	if (msgsize)
		msg[0] = 0;
	if (check_arity(&c, info))
		return -1;
	unsigned missing = info->required & ~c.attr->has;
	if (missing)
		return fail(&c, "missing attribute '%s'", ir_attr_name(missing & -missing));
	if (info->rule == SR_NONE)
		return 0;
	if (dispatch(&c, info->rule))
		return -1;
	int64_t count = 1;
	for (int i = 0; i < c.out.rank; i++)
		if (__builtin_mul_overflow(count, c.out.dim[i], &count))
			return fail(&c, "output shape %s has too many elements",
				    ir_shape_text(c.out.rank, c.out.dim).s);
	out->dtype = c.out.dtype;
	out->rank = c.out.rank;
	for (int i = 0; i < IR_MAX_RANK; i++)
		out->dim[i] = i < c.out.rank ? c.out.dim[i] : 0;
	return 0;
}
