/* builders.c: what the handlers of ONNX ops (ops.c's table, ops_index.c, ops_math.c,
 * ops_resize.c) build with (builders.h): a node's attributes, constants, and the
 * primitive ops, each with ONNX's rules (broadcasting, negative axes, dtypes).
 * Every builder goes through imp_emit (values.c), so an op whose operands are
 * constants is folded at import time; each returns NULL (or -1) with the Diag
 * filled on error and passes a NULL operand through. Prefix: ob_. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "builders.h"

/* ---- attributes ------------------------------------------------------------- */

const Onnx__AttributeProto *ob_attr(Imp *m, const char *name)
{
	const Onnx__NodeProto *n = m->n;
	for (size_t i = 0; i < n->n_attribute; i++)
		if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
			return n->attribute[i];
	return NULL;
}

int64_t ob_ai(Imp *m, const char *name, int64_t def)
{
	const Onnx__AttributeProto *a = ob_attr(m, name);
	return a && a->has_i ? a->i : def;
}

double ob_af(Imp *m, const char *name, double def)
{
	const Onnx__AttributeProto *a = ob_attr(m, name);
	return a && a->has_f ? a->f : def;
}

/* An ints attribute: its count (at most max), -1 when absent, -2 (error set) if
 * longer than max. */
int ob_aints(Imp *m, const char *name, int64_t *v, int max)
{
	const Onnx__AttributeProto *a = ob_attr(m, name);
	if (!a || (!a->n_ints && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS))
		return -1;
	if (a->n_ints > (size_t)max) {
		imp_fail(m, "attribute %s has %zu values, at most %d are supported", name,
			 a->n_ints, max);
		return -2;
	}
	for (size_t i = 0; i < a->n_ints; i++)
		v[i] = a->ints[i];
	return (int)a->n_ints;
}

void ob_astr(Imp *m, const char *name, char *out, size_t size, const char *def)
{
	const Onnx__AttributeProto *a = ob_attr(m, name);
	if (!a || !a->has_s) {
		snprintf(out, size, "%s", def);
		return;
	}
	size_t n = a->s.len < size - 1 ? a->s.len : size - 1;
	memcpy(out, a->s.data, n);
	out[n] = 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)out[i] < 0x20 || (unsigned char)out[i] >= 0x7f)
			out[i] = '?';
}

/* ---- constants -------------------------------------------------------------- */

/* A constant a handler makes (a fill, a mask, an index table) has at most
 * IMP_MAX_MADE elements, and its elements are spent from the import's budget
 * (values.h): -1 (error set) when one of shape dim may not be made. */
int ob_made_fits(Imp *m, int rank, const int64_t *dim)
{
	int64_t n = 1;
	for (int i = 0; i < rank; i++)
		if (__builtin_mul_overflow(n, dim[i], &n) || n > IMP_MAX_MADE)
			return imp_fail(m, "it would make a constant of shape %s at import, more than "
					"%d elements: not supported yet", ir_shape_text(rank, dim).s,
					IMP_MAX_MADE);
	return imp_charge(m, n);
}

/* An index table of n entries for ob_take() (freed by the caller), or NULL (error set). */
int64_t *ob_index_table(Imp *m, int64_t n)
{
	if (ob_made_fits(m, 1, &n))
		return NULL;
	return xmalloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
}

Val *ob_kfull(Imp *m, DType t, int rank, const int64_t *dim, double v)
{
	HostTensor k;
	Diag d;
	if (ob_made_fits(m, rank, dim))
		return NULL;
	if (host_alloc(&k, t, rank, dim, &d)) {
		imp_fail(m, "%s", d.msg);
		return NULL;
	}
	for (int64_t i = 0; i < k.n; i++)
		host_set(&k, i, v);
	return imp_const(m, &k);
}

Val *ob_kints(Imp *m, const int64_t *v, int n)
{
	HostTensor k;
	Diag d;
	int64_t dim[1] = {n};
	if (host_alloc(&k, DT_I64, 1, dim, &d)) {
		imp_fail(m, "%s", d.msg);
		return NULL;
	}
	memcpy(k.data, v, sizeof *v * (size_t)n);
	return imp_const(m, &k);
}

/* The values of a constant integer tensor of at most max elements. */
int ob_ints_of(Imp *m, const Val *v, const char *what, int64_t *out, int max)
{
	if (!v)
		return imp_fail(m, "%s is missing", what);
	if (!v->is_const)
		return imp_fail(m, "%s is computed at run time: only constant %s are supported "
				"(fix the input with a value or compute it from constants)", what, what);
	if (!ir_dtype_is_int(v->dt))
		return imp_fail(m, "%s must be an integer tensor, got %s", what,
				ir_dtype_name(v->dt));
	if (v->k.n > max)
		return imp_fail(m, "%s has %lld values, at most %d are supported", what,
				(long long)v->k.n, max);
	for (int64_t i = 0; i < v->k.n; i++)
		out[i] = host_get_i64(&v->k, i);
	return (int)v->k.n;
}

int ob_scalar_of(Imp *m, const Val *v, const char *what, double *out)
{
	if (!v->is_const || v->k.n != 1)
		return imp_fail(m, "%s must be a constant scalar: a computed one is not supported",
				what);
	*out = host_get(&v->k, 0);
	return 0;
}

int ob_norm_axis(Imp *m, int64_t *axis, int rank)
{
	if (*axis < -rank || *axis >= (rank ? rank : 1))
		return imp_fail(m, "axis %lld is out of range for rank %d", (long long)*axis, rank);
	if (*axis < 0)
		*axis += rank;
	return 0;
}

/* A value's element count. Every graph tensor's count fits int64 (check_tensor in
 * import.c) and so does every constant's (host_alloc); saturates all the same. */
int64_t ob_count(const Val *v)
{
	int64_t n = 1;
	for (int i = 0; i < v->rank; i++)
		if (__builtin_mul_overflow(n, v->dim[i], &n))
			return INT64_MAX;
	return n;
}

/* ---- primitive builders ------------------------------------------------------ */

Val *ob_reshape(Imp *m, Val *x, int rank, const int64_t *dim)
{
	if (!x)
		return NULL;
	if (rank == x->rank && (!rank || !memcmp(dim, x->dim, sizeof *dim * (size_t)rank)))
		return x;
	if (x->flat && x->tensor < 0)   /* one reshape, not two */
		x = x->flat;
	if (rank == x->rank && (!rank || !memcmp(dim, x->dim, sizeof *dim * (size_t)rank)))
		return x;
	Attrs at = imp_attrs(OP_RESHAPE);
	at.n = rank;
	if (rank)
		memcpy(at.shape, dim, sizeof *dim * (size_t)rank);
	return imp_emit(m, OP_RESHAPE, &x, 1, &at);
}

/* Leading dims of 1 up to rank r (ONNX multidirectional broadcasting). */
Val *ob_lift(Imp *m, Val *x, int r)
{
	if (!x || x->rank >= r)
		return x;
	int64_t dim[IR_MAX_RANK];
	int pad = r - x->rank;
	for (int i = 0; i < r; i++)
		dim[i] = i < pad ? 1 : x->dim[i - pad];
	return ob_reshape(m, x, r, dim);
}

Val *ob_expand(Imp *m, Val *x, int rank, const int64_t *dim)
{
	x = ob_lift(m, x, rank);
	if (!x)
		return NULL;
	if (!memcmp(dim, x->dim, sizeof *dim * (size_t)rank))
		return x;
	Attrs at = imp_attrs(OP_EXPAND);
	at.n = rank;
	memcpy(at.shape, dim, sizeof *dim * (size_t)rank);
	return imp_emit(m, OP_EXPAND, &x, 1, &at);
}

Val *ob_permute(Imp *m, Val *x, const int *axes)
{
	if (!x)
		return NULL;
	bool id = true;
	for (int i = 0; i < x->rank; i++)
		id = id && axes[i] == i;
	if (id)
		return x;
	Attrs at = imp_attrs(OP_PERMUTE);
	at.n = x->rank;
	memcpy(at.axes, axes, sizeof *axes * (size_t)x->rank);
	return imp_emit(m, OP_PERMUTE, &x, 1, &at);
}

/* The flat twin of a one-operand elementwise op's result (Val.flat): NULL when x
 * is not flat. */
#define ON_FLAT(m, x, call) \
	do { \
		if ((x)->flat) { \
			Val *x_ = (x); \
			(x) = x_->flat; \
			return imp_flat((m), (call), x_->rank, x_->dim); \
		} \
	} while (0)

Val *ob_cast(Imp *m, Val *x, DType t)
{
	if (!x || x->dt == t)
		return x;
	ON_FLAT(m, x, ob_cast(m, x, t));
	Attrs at = imp_attrs(OP_CAST);
	at.dtype = t;
	return imp_emit(m, OP_CAST, &x, 1, &at);
}

Val *ob_const_as(Imp *m, Val *v, const Val *x)
{
	if (!v || !x || !v->is_const || v->dt == x->dt || !ir_dtype_is_float(v->dt) ||
	    !ir_dtype_is_float(x->dt))
		return v;
	return ob_cast(m, v, x->dt);
}

Val *ob_un(Imp *m, OpKind k, Val *x)
{
	if (!x)
		return NULL;
	ON_FLAT(m, x, ob_un(m, k, x));
	Attrs at = imp_attrs(k);
	return imp_emit(m, k, &x, 1, &at);
}

Val *ob_gelu(Imp *m, Val *x, GeluApprox approx)
{
	if (!x)
		return NULL;
	ON_FLAT(m, x, ob_gelu(m, x, approx));
	Attrs at = imp_attrs(OP_GELU);
	at.approx = approx;
	return imp_emit(m, OP_GELU, &x, 1, &at);
}

Val *ob_sc(Imp *m, OpKind k, Val *x, double s)
{
	if (!x)
		return NULL;
	ON_FLAT(m, x, ob_sc(m, k, x, s));
	Attrs at = imp_attrs(k);
	at.scalar = s;
	return imp_emit(m, k, &x, 1, &at);
}

Val *ob_clampv(Imp *m, Val *x, double lo, double hi)
{
	if (!x)
		return NULL;
	ON_FLAT(m, x, ob_clampv(m, x, lo, hi));
	Attrs at = imp_attrs(OP_CLAMP);
	at.min = lo;
	at.max = hi;
	return imp_emit(m, OP_CLAMP, &x, 1, &at);
}

static OpKind scalar_kind(OpKind k)
{
	switch (k) {
	case OP_ADD: return OP_ADD_SCALAR;
	case OP_SUB: return OP_SUB_SCALAR;
	case OP_MUL: return OP_MUL_SCALAR;
	case OP_DIV: return OP_DIV_SCALAR;
	case OP_POW: return OP_POW_SCALAR;
	default: return OP_COUNT;
	}
}

/* The operands of a binary op as their flat twins (Val.flat), when one is flat and
 * the result has its shape: the other is flat too with that shape, or a constant
 * that broadcasts over every dim but the last (a bias), reshaped to [1, n]. False
 * otherwise (the op then runs on whole tensors). */
static bool flat_pair(Imp *m, Val *a, Val *b, Val **fa, Val **fb)
{
	Val *f = a->flat ? a : b->flat ? b : NULL;
	if (!f || f->flat->rank != 2)
		return false;
	Val *in[2] = {a, b}, *out[2];
	for (int i = 0; i < 2; i++) {
		Val *v = in[i];
		if (v->flat && v->rank == f->rank && !memcmp(v->dim, f->dim, sizeof *v->dim * (size_t)v->rank)) {
			out[i] = v->flat;
			continue;
		}
		if (!v->is_const || v->rank > f->rank)
			return false;
		for (int d = 0; d < v->rank - 1; d++)
			if (v->dim[d] != 1)
				return false;
		int64_t last = v->rank ? v->dim[v->rank - 1] : 1;
		if (last != 1 && last != f->dim[f->rank - 1])
			return false;
		out[i] = ob_reshape(m, v, 2, (int64_t[]){1, last});
		if (!out[i])
			return false;
	}
	*fa = out[0];
	*fb = out[1];
	return true;
}

Val *ob_sized(Imp *m, Val *k)
{
	if (!k || !m->every || !k->is_const || k->k.n != 1)
		return k;
	double v = host_get(&k->k, 0);
	if (!(v >= 2 && v <= (double)(1 << 24) && v == (double)(int64_t)v))
		return k;
	int64_t n = (int64_t)v, one = 1, ones[IR_MAX_RANK];
	/* a multiple of a probe past a rank's size, or a smaller probe itself (a scalar
	 * 7 that is not a batch of 7 only runs slower) */
	for (int s = 0; s < m->every->nsym; s++)
		if (m->every->probe[s] > IR_MAX_RANK ? n % m->every->probe[s] == 0
						     : n == m->every->probe[s]) {
			m->keep++;
			Val *c = ob_reduce(m, OP_SUM, ob_expand(m, ob_kfull(m, DT_I64, 1, &one, 1), 1,
								 &n), 0);
			m->keep--;
			for (int i = 0; i < k->rank; i++)
				ones[i] = 1;
			return ob_reshape(m, ob_cast(m, c, k->dt), k->rank, ones);
		}
	return k;
}

/* a (k) b with ONNX broadcasting; a constant scalar b becomes a scalar op. */
Val *ob_bin(Imp *m, OpKind k, Val *a, Val *b)
{
	if (!a || !b)
		return NULL;
	if (a->is_const != b->is_const) {   /* a size used as a value (ob_sized) */
		a = ob_sized(m, a);
		b = ob_sized(m, b);
		if (!a || !b)
			return NULL;
	}
	OpKind ks = scalar_kind(k);
	if (ks != OP_COUNT && !a->is_const && b->is_const && b->k.n == 1 &&
	    b->rank <= a->rank && b->dt == a->dt && ir_dtype_is_float(a->dt))
		return ob_sc(m, ks, a, host_get(&b->k, 0));
	if ((k == OP_ADD || k == OP_MUL) && a->is_const && !b->is_const)
		return ob_bin(m, k, b, a);
	Val *fa, *fb;
	if (flat_pair(m, a, b, &fa, &fb)) {
		Val *f = a->flat ? a : b;
		return imp_flat(m, ob_bin(m, k, fa, fb), f->rank, f->dim);
	}
	int r = a->rank > b->rank ? a->rank : b->rank;
	Val *in[2] = {ob_lift(m, a, r), ob_lift(m, b, r)};
	if (!in[0] || !in[1])
		return NULL;
	Attrs at = imp_attrs(k);
	return imp_emit(m, k, in, 2, &at);
}

Val *ob_where3(Imp *m, Val *c, Val *a, Val *b)
{
	if (!c || !a || !b)
		return NULL;
	int r = c->rank;
	if (a->rank > r)
		r = a->rank;
	if (b->rank > r)
		r = b->rank;
	Val *in[3] = {ob_lift(m, c, r), ob_lift(m, a, r), ob_lift(m, b, r)};
	if (!in[0] || !in[1] || !in[2])
		return NULL;
	return imp_emit(m, OP_WHERE, in, 3, NULL);
}

Val *ob_reduce(Imp *m, OpKind k, Val *x, int axis)
{
	if (!x)
		return NULL;
	Attrs at = imp_attrs(k);
	at.axis = axis;
	return imp_emit(m, k, &x, 1, &at);
}

/* Reduce over several axes (chained); without keep, the axes are dropped. */
Val *ob_reduce_axes(Imp *m, OpKind k, Val *x, const bool *on, bool keep)
{
	if (!x)
		return NULL;
	int rank = x->rank;
	/* reduced axes that run to the last one (a global pool over H and W): one
	 * reduction over the last axis of x seen as [..., their product], not one per
	 * axis, of which all but the last would reduce across rows */
	int first = rank, nrun = 0, nbefore = 0;
	while (first > 0 && (on[first - 1] || x->dim[first - 1] == 1))
		nrun += on[--first] && x->dim[first] > 1;
	for (int i = 0; i < first; i++)
		nbefore += on[i] && x->dim[i] > 1;
	int64_t dim[IR_MAX_RANK];
	int r = 0;
	if (nrun > 1 && nbefore == 0 && (k == OP_SUM || k == OP_MEAN || k == OP_MAX_DIM ||
					  k == OP_MIN_DIM)) {
		int64_t n = 1, d0[IR_MAX_RANK];
		memcpy(d0, x->dim, sizeof *d0 * (size_t)rank);
		for (int i = first; i < rank; i++)
			n *= d0[i];
		memcpy(dim, d0, sizeof *dim * (size_t)first);
		dim[first] = n;
		x = ob_reduce(m, k, ob_reshape(m, x, first + 1, dim), first);
		for (int i = 0; i < rank; i++)
			if (keep || !on[i])
				dim[r++] = on[i] ? 1 : i < first ? d0[i] : 1;
		return x ? ob_reshape(m, x, r, dim) : NULL;
	}
	for (int i = 0; i < rank && x; i++)
		if (on[i] && x->dim[i] > 1)
			x = ob_reduce(m, k, x, i);
	if (!x || keep)
		return x;
	for (int i = 0; i < rank; i++)
		if (!on[i])
			dim[r++] = x->dim[i];
	return ob_reshape(m, x, r, dim);
}

Val *ob_slice1(Imp *m, Val *x, int axis, int64_t start, int64_t end)
{
	if (!x)
		return NULL;
	if (start == 0 && end == x->dim[axis])
		return x;
	Attrs at = imp_attrs(OP_SLICE);
	at.n = axis + 1;
	for (int i = 0; i <= axis; i++) {
		at.range[i][0] = i == axis ? start : 0;
		at.range[i][1] = i == axis ? end : x->dim[i];
	}
	return imp_emit(m, OP_SLICE, &x, 1, &at);
}

Val *ob_cat(Imp *m, Val **in, int n, int axis)
{
	if (n == 1)
		return in[0];
	Attrs at = imp_attrs(OP_CAT);
	at.axis = axis;
	return imp_emit(m, OP_CAT, in, n, &at);
}

/* Pick `k` indices along axis (gather with a constant index). */
Val *ob_take(Imp *m, Val *x, int axis, const int64_t *idx, int64_t k)
{
	if (axis < 0 || axis >= x->rank || k < 1) {
		imp_fail(m, "picking %lld indices along axis %d of a rank-%d tensor is not "
			 "supported (empty or scalar)", (long long)k, axis, x->rank);
		return NULL;
	}
	int64_t dim[IR_MAX_RANK];
	memcpy(dim, x->dim, sizeof dim);
	dim[axis] = k;
	HostTensor t;
	Diag d;
	if (ob_made_fits(m, x->rank, dim))
		return NULL;
	if (host_alloc(&t, DT_I64, x->rank, dim, &d)) {
		imp_fail(m, "%s", d.msg);
		return NULL;
	}
	int64_t inner = 1;
	for (int i = axis + 1; i < x->rank; i++)
		inner *= dim[i];
	for (int64_t i = 0; i < t.n; i++)
		((int64_t *)t.data)[i] = idx[(i / inner) % k];
	Val *in[2] = {x, imp_const(m, &t)};
	Attrs at = imp_attrs(OP_GATHER);
	at.axis = axis;
	return imp_emit(m, OP_GATHER, in, 2, &at);
}

/* ---- what a handler checks first ------------------------------------------------ */

int ob_need_in(Imp *m, Val **in, int nin, int want)
{
	for (int i = 0; i < want; i++)
		if (i >= nin || !in[i])
			return imp_fail(m, "input %d is missing", i);
	return 0;
}

/* Ops whose decomposition takes means, roots or quotients (the normalizations,
 * softmax, the float activations) need a float input, as ONNX says: -1 (error set)
 * for another dtype, before a builder fails deep inside them. */
int ob_need_float(Imp *m, const Val *x)
{
	if (!ir_dtype_is_float(x->dt))
		return imp_fail(m, "needs a float input, got %s", ir_dtype_name(x->dt));
	return 0;
}

int ob_one_output(Imp *m, int nout)
{
	if (nout > 1)
		return imp_fail(m, "output 1 and after are not supported yet");
	return 0;
}

/* ---- padding, matmul, gathers at constant positions ----------------------------- */

/* x with `before` and `after` entries of value around axis a (a cat). */
Val *ob_pad_axis(Imp *m, Val *x, int a, int64_t before, int64_t after, double value)
{
	if (!x || (!before && !after))
		return x;
	Val *parts[3];
	int k = 0;
	int64_t d[IR_MAX_RANK];
	memcpy(d, x->dim, sizeof d);
	if (before) {
		d[a] = before;
		parts[k++] = ob_kfull(m, x->dt, x->rank, d, value);
	}
	parts[k++] = x;
	if (after) {
		d[a] = after;
		parts[k++] = ob_kfull(m, x->dt, x->rank, d, value);
	}
	for (int j = 0; j < k; j++)
		if (!parts[j])
			return NULL;
	return ob_cat(m, parts, k, a);
}

Val *ob_matmul(Imp *m, Val *a, Val *b)
{
	if (!a || !b)
		return NULL;
	if (a->dt != b->dt)
		return imp_fail(m, "operand dtypes %s and %s differ", ir_dtype_name(a->dt),
				ir_dtype_name(b->dt)), NULL;
	int ra = a->rank, rb = b->rank;
	if (ra < 1 || rb < 1)
		return imp_fail(m, "matmul of a scalar"), NULL;
	/* [1, .., 1, M, K] x [K, N]: B lifted to [1, .., 1, K, N], so that A and the
	 * result need no reshape and the ops after the matmul can fuse as its epilogue
	 * (a reshape after a matmul closes the Matmul fuser) */
	bool unit_batch = ra >= 3 && rb == 2;
	for (int i = 0; i < ra - 2 && unit_batch; i++)
		unit_batch = a->dim[i] == 1;
	if (unit_batch) {
		Val *in[2] = {a, ob_lift(m, b, ra)};
		return in[1] ? imp_emit(m, OP_MATMUL, in, 2, NULL) : NULL;
	}
	/* [.., M, K] x [K, N] as one [M', K] x [K, N] */
	if (rb <= 2 && ra >= 2) {
		int64_t K = a->dim[ra - 1], M = ob_count(a) / K;
		int64_t a2[2] = {M, K};
		Val *bb = rb == 1 ? ob_reshape(m, b, 2, (int64_t[]){b->dim[0], 1}) : b;
		if (!bb)
			return NULL;
		Val *fa = m->mm_src == a && m->mm_flat ? m->mm_flat : ob_reshape(m, a, 2, a2);
		if (!fa)
			return NULL;
		m->mm_src = a;
		m->mm_flat = fa;
		Val *in[2] = {fa, bb};
		Val *r = imp_emit(m, OP_MATMUL, in, 2, NULL);
		if (!r)
			return NULL;
		int64_t d[IR_MAX_RANK];
		memcpy(d, a->dim, sizeof d);
		if (rb == 1)
			return ob_reshape(m, r, ra - 1, d);
		d[ra - 1] = b->dim[1];
		return ra == 2 ? r : imp_flat(m, r, ra, d);
	}
	int64_t da[IR_MAX_RANK], db[IR_MAX_RANK];
	bool va = ra == 1, vb = rb == 1;
	Val *aa = va ? ob_reshape(m, a, 2, (int64_t[]){1, a->dim[0]}) : a;
	Val *bb = vb ? ob_reshape(m, b, 2, (int64_t[]){b->dim[0], 1}) : b;
	if (!aa || !bb)
		return NULL;
	int r = aa->rank > bb->rank ? aa->rank : bb->rank;
	aa = ob_lift(m, aa, r);
	bb = ob_lift(m, bb, r);
	if (!aa || !bb)
		return NULL;
	memcpy(da, aa->dim, sizeof da);
	memcpy(db, bb->dim, sizeof db);
	/* batch dims broadcast explicitly */
	for (int i = 0; i < r - 2; i++) {
		int64_t t = da[i] > db[i] ? da[i] : db[i];
		if ((da[i] != t && da[i] != 1) || (db[i] != t && db[i] != 1))
			return imp_fail(m, "matmul batch dims %lld and %lld do not broadcast",
					(long long)da[i], (long long)db[i]), NULL;
		da[i] = db[i] = t;
	}
	aa = ob_expand(m, aa, r, da);
	bb = ob_expand(m, bb, r, db);
	Val *in[2] = {aa, bb};
	if (!aa || !bb)
		return NULL;
	Val *res = imp_emit(m, OP_MATMUL, in, 2, NULL);
	if (!res || (!va && !vb))
		return res;
	int64_t d[IR_MAX_RANK];
	int k = 0;
	for (int i = 0; i < r; i++)
		if (!((va && i == r - 2) || (vb && i == r - 1)))
			d[k++] = res->dim[i];
	return ob_reshape(m, res, k, d);
}

/* A constant [1.., n at axis, ..1] of rank `rank`, from doubles. */
Val *ob_axis_const(Imp *m, DType dt, int rank, int axis, const double *v,
		       const int64_t *iv, int64_t n)
{
	int64_t dim[IR_MAX_RANK];
	for (int i = 0; i < rank; i++)
		dim[i] = i == axis ? n : 1;
	HostTensor k;
	Diag d;
	if (host_alloc(&k, dt, rank, dim, &d)) {
		imp_fail(m, "%s", d.msg);
		return NULL;
	}
	for (int64_t i = 0; i < n; i++) {
		if (iv)
			((int64_t *)k.data)[i] = iv[i];
		else
			host_set(&k, i, v[i]);
	}
	return imp_const(m, &k);
}

/* A zero of dtype dt and x's rank, all dims 1, computed from x's first element
 * (a comparison that is false for every value, NaN too, cast): an op, not a
 * constant, so that what is expanded from it stays a view and is not folded into
 * a constant of the expanded size. A constant zero when x is a constant. */
Val *ob_zero_of(Imp *m, Val *x, DType dt)
{
	int64_t one[IR_MAX_RANK];
	for (int i = 0; i < x->rank; i++)
		one[i] = 1;
	if (x->is_const)
		return ob_kfull(m, dt, x->rank, one, 0);
	Val *v = x;
	if (ob_count(x) > 1) {
		Attrs at = imp_attrs(OP_SLICE);
		at.n = x->rank;
		for (int i = 0; i < x->rank; i++)
			at.range[i][0] = 0, at.range[i][1] = 1;
		v = imp_emit(m, OP_SLICE, &x, 1, &at);
	}
	if (v && v->dt == DT_BOOL)
		v = ob_bin(m, OP_AND, v, ob_un(m, OP_NOT, v));
	else
		v = ob_sc(m, OP_LT_SCALAR, v, -INFINITY);
	return ob_cast(m, v, dt);
}

/* x gathered along axis at n constant positions: a [1.., n, ..1] index (plus a
 * computed zero when x is not a constant) expanded: no index constant of the
 * result's size, unlike ob_take(). */
Val *ob_take_axis(Imp *m, Val *x, int axis, const int64_t *idx, int64_t n)
{
	Val *ix = ob_axis_const(m, DT_I64, x->rank, axis, NULL, idx, n);
	if (!x->is_const)
		ix = ob_bin(m, OP_ADD, ix, ob_zero_of(m, x, DT_I64));
	int64_t dim[IR_MAX_RANK];
	memcpy(dim, x->dim, sizeof dim);
	dim[axis] = n;
	ix = ob_expand(m, ix, x->rank, dim);
	if (!ix)
		return NULL;
	Val *in[2] = {x, ix};
	Attrs at = imp_attrs(OP_GATHER);
	at.axis = axis;
	return imp_emit(m, OP_GATHER, in, 2, &at);
}

/* x with before and after zeros around axis a: a cat with a computed zero expanded
 * (a view), so that no constant of the input's size is made. */
Val *ob_zpad(Imp *m, Val *x, int a, int64_t before, int64_t after)
{
	if (!x || (!before && !after))
		return x;
	if (x->is_const)
		return ob_pad_axis(m, x, a, before, after, 0);
	int64_t d[IR_MAX_RANK];
	memcpy(d, x->dim, sizeof d);
	Val *z = ob_zero_of(m, x, x->dt);
	Val *parts[3];
	int k = 0;
	if (before) {
		d[a] = before;
		parts[k++] = ob_expand(m, z, x->rank, d);
	}
	parts[k++] = x;
	if (after) {
		d[a] = after;
		parts[k++] = ob_expand(m, z, x->rank, d);
	}
	for (int j = 0; j < k; j++)
		if (!parts[j])
			return NULL;
	return ob_cat(m, parts, k, a);
}
