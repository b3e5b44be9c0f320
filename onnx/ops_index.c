/* ops_index.c: ONNX ops that place or pick elements by position, composed from
 * the builders (builders.h; docs/onnx.md lists the mapping): ConvTranspose (zeros
 * inserted between the input's elements, then a convolution), EyeLike, Hardmax,
 * CumSum, OneHot, GatherND, Einsum (labels to permutes, diagonals, sums and
 * matmuls), ScatterElements and ScatterND. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "builders.h"
#include "ops_index.h"

/* ---- ConvTranspose ----------------------------------------------------------------- */

/* x with s-1 zeros after every element of spatial axis a (of [N, C, H, W]), the
 * trailing ones dropped: [.., (L-1)*s+1, ..]. */
static Val *zero_insert(Imp *m, Val *x, int a, int64_t s)
{
	if (!x || s == 1)
		return x;
	int64_t d[IR_MAX_RANK], back[IR_MAX_RANK];
	int r = 0;
	for (int i = 0; i < x->rank; i++) {
		d[r++] = x->dim[i];
		back[i] = x->dim[i];
		if (i == a)
			d[r++] = 1;
	}
	back[a] = x->dim[a] * s;
	Val *v = ob_zpad(m, ob_reshape(m, x, r, d), a + 1, 0, s - 1);
	v = ob_reshape(m, v, x->rank, back);
	return ob_slice1(m, v, a, 0, (x->dim[a] - 1) * s + 1);
}

/* lo and hi entries added (zeros) or, when negative, removed at the ends of axis a */
static Val *pad_or_crop(Imp *m, Val *x, int a, int64_t lo, int64_t hi)
{
	if (!x)
		return NULL;
	if (lo < 0 || hi < 0) {
		int64_t b = lo < 0 ? -lo : 0, e = x->dim[a] - (hi < 0 ? -hi : 0);
		if (e <= b) {
			imp_fail(m, "the padding leaves no output along spatial axis %d", a - 2);
			return NULL;
		}
		x = ob_slice1(m, x, a, b, e);
	}
	return ob_zpad(m, x, a, lo > 0 ? lo : 0, hi > 0 ? hi : 0);
}

/* A conv2d of the input with zeros inserted between its elements (strides), padded
 * by dilation x (kernel - 1) less the pads, with the kernel flipped and its in and
 * out channels swapped within each group; stride 1. */
HANDLER(h_conv_transpose)
{
	NEED(2);
	Val *x = in[0], *w = in[1];
	if (x->rank != 4 && x->rank != 3)
		return imp_fail(m, "not supported yet: ConvTranspose of rank-%d inputs (1-D and "
				"2-D are supported)", x->rank);
	if (w->rank != x->rank)
		return imp_fail(m, "weight rank %d differs from input rank %d", w->rank, x->rank);
	if (!ir_dtype_is_float(x->dt))
		return imp_fail(m, "ConvTranspose of %s is not supported", ir_dtype_name(x->dt));
	int nsp = x->rank - 2;
	int64_t g = ob_ai(m, "group", 1);
	if (g < 1 || g > (1 << 20) || x->dim[1] % g || w->dim[0] != x->dim[1])
		return imp_fail(m, "group %lld does not fit %lld input channels and a weight of "
				"%lld", (long long)g, (long long)x->dim[1], (long long)w->dim[0]);
	int64_t k[2], s[2] = {1, 1}, dl[2] = {1, 1}, p[4] = {0}, op[2] = {0}, os[2];
	int64_t v[6];
	int n;
	if ((n = ob_aints(m, "kernel_shape", v, 2)) == -2)
		return -1;
	for (int i = 0; i < nsp; i++) {
		k[i] = w->dim[2 + i];
		if (n >= 0 && (n != nsp || v[i] != k[i]))
			return imp_fail(m, "kernel_shape differs from the weight's shape");
	}
	/* each list attribute has one value per spatial dim (output_shape may give N
	 * and C too; pads two): a shorter one would be read past its end */
	static const char *const per_dim[3] = {"strides", "dilations", "output_padding"};
	int64_t *dst[3] = {s, dl, op};
	for (int a = 0; a < 3; a++) {
		if ((n = ob_aints(m, per_dim[a], v, 2)) == -2)
			return -1;
		if (n >= 0 && n != nsp)
			return imp_fail(m, "%s has %d values for %d spatial dims", per_dim[a], n, nsp);
		for (int i = 0; i < n; i++)
			dst[a][i] = v[i];
	}
	int np = ob_aints(m, "pads", v, 4);
	if (np == -2)
		return -1;
	if (np >= 0 && np != 2 * nsp)
		return imp_fail(m, "pads has %d values for %d spatial dims", np, nsp);
	for (int i = 0; i < np; i++)
		p[i % nsp * 2 + i / nsp] = v[i];   /* p[2i] lo, p[2i+1] hi */
	int nos = ob_aints(m, "output_shape", v, 4);
	if (nos == -2)
		return -1;
	if (nos >= 0 && nos != nsp && nos != nsp + 2)
		return imp_fail(m, "output_shape has %d values for %d spatial dims (give %d, or "
				"%d with N and C)", nos, nsp, nsp, nsp + 2);
	if (nos == nsp + 2)  /* with N and C given too: the last nsp */
		for (int i = 0; i < nsp; i++)
			v[i] = v[2 + i];
	for (int i = 0; i < nsp; i++)
		os[i] = nos >= nsp ? v[i] : -1;
	char ap[24];
	ob_astr(m, "auto_pad", ap, sizeof ap, "NOTSET");
	bool upper = !strcmp(ap, "SAME_UPPER"), same = upper || !strcmp(ap, "SAME_LOWER");
	if (!same && strcmp(ap, "NOTSET") && strcmp(ap, "VALID"))
		return imp_fail(m, "auto_pad '%s' is not supported", ap);
	for (int i = 0; i < nsp; i++) {
		if (s[i] < 1 || dl[i] < 1 || s[i] > 1024 || dl[i] > 1024 || op[i] < 0 ||
		    op[i] >= (s[i] > dl[i] ? s[i] : dl[i]) || (nos >= 0 && os[i] < 1))
			return imp_fail(m, "strides, dilations, output_padding or output_shape out "
					"of range (strides and dilations 1 to 1024, output_padding "
					"below them)");
		if (p[2 * i] < 0 || p[2 * i + 1] < 0 || p[2 * i] > (1 << 20) || p[2 * i + 1] > (1 << 20))
			return imp_fail(m, "pads must be 0 to 2^20");
		int64_t full = s[i] * (x->dim[2 + i] - 1) + op[i] + (k[i] - 1) * dl[i] + 1;
		if (nos >= 0 || same) {
			int64_t want = nos >= 0 ? os[i] : x->dim[2 + i] * s[i];
			int64_t tot = full - want;
			int64_t half = tot >= 0 ? tot / 2 : -((-tot + 1) / 2);   /* floor */
			p[2 * i] = upper ? half : tot - half;
			p[2 * i + 1] = tot - p[2 * i];
		}
		if (full - p[2 * i] - p[2 * i + 1] < 1 || full > (1 << 24) ||
		    full - p[2 * i] - p[2 * i + 1] > (1 << 24))
			return imp_fail(m, "the output of spatial axis %d would have %lld elements",
					i, (long long)(full - p[2 * i] - p[2 * i + 1]));
	}
	if (nsp == 1)
		k[1] = 1, s[1] = 1, dl[1] = 1, op[1] = 0, p[2] = p[3] = 0;
	if (x->is_const) {
		double big = (double)ob_count(x) * (double)s[0] * (double)s[1] * (double)w->dim[1] * (double)g;
		if (big > FOLD_MAX)
			return imp_fail(m, "not supported yet: ConvTranspose of a constant input to "
					"more than %d elements (folded at import)", FOLD_MAX);
	}
	/* the weight: [C, M/g, kh, kw] -> [g, C/g, M/g, kh, kw] -> [g, M/g, C/g, ..],
	 * flipped, as [M, C/g, kh, kw] */
	Val *wt = w->rank == 3 ? ob_reshape(m, w, 4, (int64_t[]){w->dim[0], w->dim[1], w->dim[2], 1})
			       : w;
	int64_t cg = x->dim[1] / g, mg = wt->dim[1];
	int64_t w5[5] = {g, cg, mg, k[0], k[1]};
	static const int swap[5] = {0, 2, 1, 3, 4};
	wt = ob_permute(m, ob_reshape(m, wt, 5, w5), swap);
	wt = wt ? ob_reshape(m, wt, 4, (int64_t[]){g * mg, cg, k[0], k[1]}) : NULL;
	for (int i = 0; i < 2 && wt; i++) {
		if (k[i] == 1)
			continue;
		int64_t rev[1024];
		if (k[i] > 1024)
			return imp_fail(m, "kernels above 1024 are not supported");
		for (int64_t j = 0; j < k[i]; j++)
			rev[j] = k[i] - 1 - j;
		wt = ob_take_axis(m, wt, 2 + i, rev, k[i]);
	}
	Val *xx = x->rank == 3 ? ob_reshape(m, x, 4, (int64_t[]){x->dim[0], x->dim[1], x->dim[2], 1})
			       : x;
	for (int i = 0; i < 2 && xx; i++) {
		xx = zero_insert(m, xx, 2 + i, s[i]);
		int64_t e = dl[i] * (k[i] - 1);
		xx = pad_or_crop(m, xx, 2 + i, e - p[2 * i], e - p[2 * i + 1] + op[i]);
	}
	if (!xx || !wt)
		return -1;
	Attrs at = imp_attrs(OP_CONV2D);
	for (int i = 0; i < 2; i++) {
		at.stride[i] = 1;
		at.dilation[i] = (int)dl[i];
	}
	at.groups = (int)g;
	Val *cin[3] = {xx, ob_const_as(m, wt, x), nin > 2 ? ob_const_as(m, in[2], x) : NULL};
	Val *y = imp_emit(m, OP_CONV2D, cin, cin[2] ? 3 : 2, &at);
	if (y && x->rank == 3)
		y = ob_reshape(m, y, 3, y->dim);
	OUT(y);
}

/* ---- constants from shapes ----------------------------------------------------------- */


/* EyeLike: a constant of the input's shape, ones on diagonal k. */
HANDLER(h_eyelike)
{
	NEED(1);
	Val *x = in[0];
	if (x->rank != 2)
		return imp_fail(m, "EyeLike takes a rank-2 input, not rank %d", x->rank);
	const Onnx__AttributeProto *da = ob_attr(m, "dtype");
	int dt = da ? onnx_dtype((int)da->i) : (int)x->dt;
	if (dt < 0)
		return imp_fail(m, "dtype %lld is not supported", (long long)da->i);
	if (ob_count(x) > SHAPE_CONST_MAX)
		return imp_fail(m, "not supported yet: EyeLike of more than %d elements",
				SHAPE_CONST_MAX);
	int64_t k = ob_ai(m, "k", 0);
	Val *e = ob_kfull(m, (DType)dt, 2, x->dim, 0);
	if (!e)
		return -1;
	for (int64_t i = 0; i < x->dim[0] && k > -x->dim[0] && k < x->dim[1]; i++)
		if (i + k >= 0 && i + k < x->dim[1])
			host_set(&e->k, i * x->dim[1] + i + k, 1);
	OUT(e);
}

/* [1.., 0..n-1 at axis, ..1] of i64 */
static Val *iota(Imp *m, int rank, int axis, int64_t n)
{
	int64_t dim[IR_MAX_RANK];
	for (int i = 0; i < rank; i++)
		dim[i] = i == axis ? n : 1;
	Val *v = ob_kfull(m, DT_I64, rank, dim, 0);
	for (int64_t i = 0; v && i < n; i++)
		((int64_t *)v->k.data)[i] = i;
	return v;
}

/* Hardmax: 1 where the first maximum along axis is, else 0 (before opset 13 over
 * the input flattened to 2-D at axis). */
HANDLER(h_hardmax)
{
	NEED(1);
	Val *x = in[0];
	bool old = m->opset < 13;
	int64_t axis = ob_ai(m, "axis", old ? 1 : -1);
	if (ob_norm_axis(m, &axis, x->rank))
		return -1;
	Val *v = x;
	if (old) {
		int64_t a = 1, b = 1;
		for (int i = 0; i < x->rank; i++)
			*(i < axis ? &a : &b) *= x->dim[i];
		v = ob_reshape(m, x, 2, (int64_t[]){a, b});
		axis = 1;
	}
	if (!v)
		return -1;
	if (v->dim[axis] > SHAPE_CONST_MAX)
		return imp_fail(m, "not supported yet: Hardmax over more than %d elements",
				SHAPE_CONST_MAX);
	Val *am = ob_reduce(m, OP_ARGMAX, v, (int)axis);
	Val *y = ob_cast(m, ob_bin(m, OP_EQ, am, iota(m, v->rank, (int)axis, v->dim[axis])), x->dt);
	OUT(y && old ? ob_reshape(m, y, x->rank, x->dim) : y);
}

/* CumSum: log2(n) steps of y += y shifted by 1, 2, 4, .. along axis (exact for
 * integers); exclusive shifts the result once more, reverse shifts the other way. */
static Val *shift(Imp *m, Val *y, int axis, int64_t by, bool rev)
{
	int64_t n = y->dim[axis];
	if (by >= n)
		return NULL;
	Val *s = rev ? ob_slice1(m, y, axis, by, n) : ob_slice1(m, y, axis, 0, n - by);
	return ob_zpad(m, s, axis, rev ? 0 : by, rev ? by : 0);
}

HANDLER(h_cumsum)
{
	NEED(2);
	Val *x = in[0];
	int64_t axis;
	if (ob_ints_of(m, in[1], "axis", &axis, 1) != 1)
		return -1;
	if (ob_norm_axis(m, &axis, x->rank))
		return -1;
	bool ex = ob_ai(m, "exclusive", 0), rev = ob_ai(m, "reverse", 0);
	Val *y = x;
	int64_t n = x->dim[axis];
	for (int64_t by = 1; by < n && y; by *= 2)
		y = ob_bin(m, OP_ADD, y, shift(m, y, (int)axis, by, rev));
	if (ex && y)
		y = n > 1 ? shift(m, y, (int)axis, 1, rev) : ob_kfull(m, x->dt, x->rank, x->dim, 0);
	if (y == x)
		y = ob_sc(m, OP_MUL_SCALAR, x, 1);
	OUT(y);
}

/* OneHot: where(indices == iota, on, off) with depth inserted at axis. */
HANDLER(h_onehot)
{
	NEED(3);
	Val *idx = in[0], *dv = in[1], *vals = in[2];
	double depth_f;
	if (ob_scalar_of(m, dv, "depth", &depth_f))
		return -1;
	int64_t depth = (int64_t)depth_f;
	if (depth < 1 || depth > (1 << 24))
		return imp_fail(m, "depth %lld is not supported (1 to 2^24)", (long long)depth);
	if (vals->rank != 1 || vals->dim[0] != 2)
		return imp_fail(m, "values must hold 2 values [off, on]");
	int r = idx->rank + 1;
	if (r > IR_MAX_RANK)
		return imp_fail(m, "result rank %d exceeds %d", r, IR_MAX_RANK);
	int64_t axis = ob_ai(m, "axis", -1);
	if (ob_norm_axis(m, &axis, r))
		return -1;
	if (idx->is_const && (double)ob_count(idx) * (double)depth > FOLD_MAX)
		return imp_fail(m, "not supported yet: OneHot of constant indices to more than %d "
				"elements (folded at import)", FOLD_MAX);
	Val *ix = ob_cast(m, idx, DT_I64);
	if (ix && ir_dtype_is_float(idx->dt))
		ix = ob_cast(m, ob_un(m, OP_TRUNC, idx), DT_I64);
	ix = ob_where3(m, ob_sc(m, OP_LT_SCALAR, ix, 0), ob_sc(m, OP_ADD_SCALAR, ix, (double)depth), ix);
	int64_t d[IR_MAX_RANK];
	for (int i = 0, j = 0; i < r; i++)
		d[i] = i == axis ? 1 : idx->dim[j++];
	ix = ob_reshape(m, ix, r, d);
	Val *hit = ob_bin(m, OP_EQ, ix, iota(m, r, (int)axis, depth));
	OUT(ob_where3(m, hit, ob_slice1(m, vals, 0, 1, 2), ob_slice1(m, vals, 0, 0, 1)));
}

/* ---- GatherND ------------------------------------------------------------------------ */

/* data reshaped to [P, R] (P: the batch and indexed dims, R: the rest), each index
 * row made one flat position into P (constant strides, and a constant offset for
 * the batch it belongs to), a gather along axis 0, reshaped back. */
HANDLER(h_gathernd)
{
	NEED(2);
	Val *x = in[0], *idx = in[1];
	int64_t b = ob_ai(m, "batch_dims", 0);
	if (idx->dt != DT_I64 && idx->dt != DT_I32)
		return imp_fail(m, "indices must be int32 or int64, got %s", ir_dtype_name(idx->dt));
	if (idx->rank < 1 || b < 0 || b >= idx->rank || b >= x->rank)
		return imp_fail(m, "batch_dims %lld does not fit ranks %d and %d", (long long)b,
				x->rank, idx->rank);
	int64_t k = idx->dim[idx->rank - 1];
	if (k < 1 || b + k > x->rank)
		return imp_fail(m, "index rows of %lld do not fit data of rank %d", (long long)k,
				x->rank);
	for (int i = 0; i < b; i++)
		if (idx->dim[i] != x->dim[i])
			return imp_fail(m, "batch dim %d differs between data and indices", i);
	int64_t q = ob_count(idx) / k, bp = 1, kp = 1, rr = 1;
	for (int i = 0; i < b; i++)
		bp *= x->dim[i];
	for (int i = (int)b; i < b + k; i++)
		kp *= x->dim[i];
	for (int i = (int)(b + k); i < x->rank; i++)
		rr *= x->dim[i];
	if (q > SHAPE_CONST_MAX)
		return imp_fail(m, "not supported yet: GatherND with more than %d index rows",
				SHAPE_CONST_MAX);
	/* components made non-negative, times the strides, summed */
	int64_t st[IR_MAX_RANK], dd[IR_MAX_RANK];
	int64_t acc = 1;
	for (int64_t j = k - 1; j >= 0; j--) {
		st[j] = acc;
		dd[j] = x->dim[b + j];
		acc *= x->dim[b + j];
	}
	Val *ix = ob_cast(m, idx, DT_I64);
	Val *dims = ob_kints(m, dd, (int)k), *strides = ob_kints(m, st, (int)k);
	ix = ob_where3(m, ob_sc(m, OP_LT_SCALAR, ix, 0), ob_bin(m, OP_ADD, ix, dims), ix);
	ix = ob_reduce(m, OP_SUM, ob_bin(m, OP_MUL, ix, strides), idx->rank - 1);
	ix = ob_reshape(m, ix, 1, (int64_t[]){q});
	if (b > 0 && ix) {   /* row i belongs to batch i / (q / bp) */
		Val *off = ob_kfull(m, DT_I64, 1, (int64_t[]){q}, 0);
		for (int64_t i = 0; off && i < q; i++)
			((int64_t *)off->k.data)[i] = i / (q / bp) * kp;
		ix = ob_bin(m, OP_ADD, ix, off);
	}
	Val *x2 = ob_reshape(m, x, 2, (int64_t[]){bp * kp, rr});
	ix = ob_expand(m, ob_reshape(m, ix, 2, (int64_t[]){q, 1}), 2, (int64_t[]){q, rr});
	if (!x2 || !ix)
		return -1;
	Val *gin[2] = {x2, ix};
	Attrs at = imp_attrs(OP_GATHER);
	at.axis = 0;
	Val *g = imp_emit(m, OP_GATHER, gin, 2, &at);
	int64_t od[IR_MAX_RANK];
	int n = 0;
	for (int i = 0; i < idx->rank - 1; i++)
		od[n++] = idx->dim[i];
	for (int i = (int)(b + k); i < x->rank; i++)
		od[n++] = x->dim[i];
	if (n > IR_MAX_RANK)
		return imp_fail(m, "result rank %d exceeds %d", n, IR_MAX_RANK);
	OUT(ob_reshape(m, g, n, od));
}

/* ---- Einsum -------------------------------------------------------------------------- */

/* One operand's labels (one char per dim; an ellipsis's dims get the labels 1, 2,
 * .. counted from its right end, so that they line up across operands). */
typedef struct {
	int rank;
	char lab[IR_MAX_RANK];
	int64_t dim[IR_MAX_RANK];
} Term;

static int parse_term(Imp *m, const char *s, size_t n, int rank, Term *t)
{
	int before = 0, ell = -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '.') {
			if (ell >= 0 || i + 2 >= n + 0 || s[i + 1] != '.' || s[i + 2] != '.')
				return imp_fail(m, "equation: a malformed ellipsis");
			ell = before;
			i += 2;
		} else if ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')) {
			before++;
		} else if (s[i] != ' ') {
			return imp_fail(m, "equation: unexpected character '%c'", s[i]);
		}
	}
	int nell = ell >= 0 ? rank - before : 0;
	if (nell < 0 || (ell < 0 && before != rank))
		return imp_fail(m, "equation: a term of %d labels for an operand of rank %d",
				before, rank);
	t->rank = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '.') {
			for (int j = 0; j < nell; j++)
				t->lab[t->rank++] = (char)(nell - j);
			i += 2;
		} else if (s[i] != ' ') {
			t->lab[t->rank++] = s[i];
		}
	}
	return 0;
}

/* A label repeated in one term takes the diagonal: both dims moved last, merged,
 * and every (n+1)-th element picked. */
static Val *diagonals(Imp *m, Val *x, Term *t)
{
	for (int q = 0; q < t->rank && x; q++) {
		int p = 0;
		while (p < q && t->lab[p] != t->lab[q])
			p++;
		if (p == q)
			continue;
		int64_t n = t->dim[q];
		if (t->dim[p] != n || n > (1 << 16)) {
			imp_fail(m, "not supported yet: an Einsum diagonal of dims %lld and %lld",
				 (long long)t->dim[p], (long long)n);
			return NULL;
		}
		int perm[IR_MAX_RANK], k = 0;
		Term r = {0};
		for (int i = 0; i < t->rank; i++)
			if (i != p && i != q) {
				perm[k++] = i;
				r.lab[r.rank] = t->lab[i];
				r.dim[r.rank++] = t->dim[i];
			}
		perm[k++] = p;
		perm[k++] = q;
		r.lab[r.rank] = t->lab[p];
		r.dim[r.rank++] = n;
		int64_t d[IR_MAX_RANK];
		memcpy(d, r.dim, sizeof d);
		d[r.rank - 1] = n * n;
		x = ob_reshape(m, ob_permute(m, x, perm), r.rank, d);
		int64_t *idx = xcalloc((size_t)n, sizeof *idx);
		for (int64_t i = 0; i < n; i++)
			idx[i] = i * (n + 1);
		x = x ? ob_take_axis(m, x, r.rank - 1, idx, n) : NULL;
		free(idx);
		*t = r;
		q = -1;   /* labels moved: look again from the start */
	}
	return x;
}

static int find_lab(const Term *t, char c)
{
	for (int i = 0; i < t->rank; i++)
		if (t->lab[i] == c)
			return i;
	return -1;
}

/* x with the labels not in keep summed out; t updated. */
static Val *sum_out(Imp *m, Val *x, Term *t, const char *keep)
{
	bool on[IR_MAX_RANK] = {false};
	bool any = false;
	Term r = {0};
	for (int i = 0; i < t->rank; i++) {
		on[i] = !strchr(keep, t->lab[i]) || !t->lab[i];
		any = any || on[i];
		if (!on[i]) {
			r.lab[r.rank] = t->lab[i];
			r.dim[r.rank++] = t->dim[i];
		}
	}
	if (!any)
		return x;
	*t = r;
	return ob_reduce_axes(m, OP_SUM, x, on, false);
}

/* a (ta) times b (tb), summing the labels of both not in keep: a batched matmul
 * [batch, M, K] x [batch, K, N]; the result's labels are batch, a's, b's. */
static Val *contract(Imp *m, Val *a, Term *ta, Val *b, const Term *tb, const char *keep,
		     Term *tr)
{
	char bl[IR_MAX_RANK], al[IR_MAX_RANK], kl[IR_MAX_RANK], nl[IR_MAX_RANK];
	int nb = 0, na = 0, nk = 0, nn = 0;
	for (int i = 0; i < ta->rank; i++) {
		char c = ta->lab[i];
		if (find_lab(tb, c) < 0)
			al[na++] = c;
		else if (strchr(keep, c))
			bl[nb++] = c;
		else
			kl[nk++] = c;
	}
	for (int i = 0; i < tb->rank; i++)
		if (find_lab(ta, tb->lab[i]) < 0)
			nl[nn++] = tb->lab[i];
	if (nb + na + nn > IR_MAX_RANK || nb + 2 > IR_MAX_RANK)
		return imp_fail(m, "Einsum: the result rank exceeds %d", IR_MAX_RANK), NULL;
	int pa[IR_MAX_RANK], pb[IR_MAX_RANK], k = 0;
	int64_t B = 1, M = 1, K = 1, N = 1, bd[IR_MAX_RANK];
	for (int i = 0; i < nb; i++) {
		int ia = find_lab(ta, bl[i]), ib = find_lab(tb, bl[i]);
		if (ta->dim[ia] != tb->dim[ib])
			return imp_fail(m, "not supported yet: Einsum label with dims %lld and %lld "
					"(broadcasting)", (long long)ta->dim[ia],
					(long long)tb->dim[ib]), NULL;
		pa[k++] = ia;
		bd[i] = ta->dim[ia];
		B *= bd[i];
	}
	for (int i = 0; i < na; i++) {
		pa[k++] = find_lab(ta, al[i]);
		M *= ta->dim[pa[k - 1]];
	}
	for (int i = 0; i < nk; i++) {
		int ia = find_lab(ta, kl[i]), ib = find_lab(tb, kl[i]);
		if (ta->dim[ia] != tb->dim[ib])
			return imp_fail(m, "not supported yet: Einsum label with dims %lld and %lld "
					"(broadcasting)", (long long)ta->dim[ia],
					(long long)tb->dim[ib]), NULL;
		pa[k++] = ia;
		K *= ta->dim[ia];
	}
	k = 0;
	for (int i = 0; i < nb; i++)
		pb[k++] = find_lab(tb, bl[i]);
	for (int i = 0; i < nk; i++)
		pb[k++] = find_lab(tb, kl[i]);
	for (int i = 0; i < nn; i++) {
		pb[k++] = find_lab(tb, nl[i]);
		N *= tb->dim[pb[k - 1]];
	}
	if (a->is_const && b->is_const && (double)B * (double)M * (double)N * (double)K > FOLD_MAX)
		return imp_fail(m, "not supported yet: an Einsum of constants of more than %d "
				"products (folded at import)", FOLD_MAX), NULL;
	Val *aa = ob_reshape(m, ob_permute(m, a, pa), 3, (int64_t[]){B, M, K});
	Val *bb = ob_reshape(m, ob_permute(m, b, pb), 3, (int64_t[]){B, K, N});
	Val *y = ob_matmul(m, aa, bb);
	tr->rank = 0;
	for (int i = 0; i < nb; i++)
		tr->lab[tr->rank] = bl[i], tr->dim[tr->rank++] = bd[i];
	for (int i = 0; i < na; i++)
		tr->lab[tr->rank] = al[i], tr->dim[tr->rank++] = ta->dim[find_lab(ta, al[i])];
	for (int i = 0; i < nn; i++)
		tr->lab[tr->rank] = nl[i], tr->dim[tr->rank++] = tb->dim[find_lab(tb, nl[i])];
	return ob_reshape(m, y, tr->rank, tr->dim);
}

/* Einsum without diagonals: each operand's labels that no later term and not the
 * output hold are summed out, operands are joined left to right by batched
 * matmuls, and the result is permuted to the output's order. */
HANDLER(h_einsum)
{
	NEED(1);
	char eq[256];
	ob_astr(m, "equation", eq, sizeof eq, "");
	if (nin > 8)
		return imp_fail(m, "not supported yet: Einsum of %d operands (8 at most)", nin);
	Term t[8], ot;
	const char *arrow = strstr(eq, "->");
	size_t lhs = arrow ? (size_t)(arrow - eq) : strlen(eq);
	size_t p = 0;
	for (int i = 0; i < nin; i++) {
		if (!in[i])
			return imp_fail(m, "input %d is missing", i);
		size_t e = p;
		while (e < lhs && eq[e] != ',')
			e++;
		if ((e == lhs) != (i == nin - 1))
			return imp_fail(m, "equation '%s' does not have %d terms", eq, nin);
		if (parse_term(m, eq + p, e - p, in[i]->rank, &t[i]))
			return -1;
		memcpy(t[i].dim, in[i]->dim, sizeof t[i].dim);
		p = e + 1;
	}
	char keep[64] = "";   /* labels live after the operand being joined */
	if (arrow) {
		/* the output's ellipsis has the rank of the widest operand's */
		int ell = 0;
		for (int i = 0; i < nin; i++)
			for (int j = 0; j < t[i].rank; j++)
				if (t[i].lab[j] > 0 && t[i].lab[j] < 16 && t[i].lab[j] > ell)
					ell = t[i].lab[j];
		const char *o = arrow + 2;
		bool has_ell = strstr(o, "...") != NULL;
		int nlab = 0;
		for (const char *c = o; *c; c++)
			nlab += *c != '.' && *c != ' ';
		if (parse_term(m, o, strlen(o), nlab + (has_ell ? ell : 0), &ot))
			return -1;
	} else {  /* implicit: the ellipsis, then labels seen once, alphabetically */
		ot.rank = 0;
		int ell = 0;
		for (int i = 0; i < nin; i++)
			for (int j = 0; j < t[i].rank; j++)
				if (t[i].lab[j] > 0 && t[i].lab[j] < 16 && t[i].lab[j] > ell)
					ell = t[i].lab[j];
		for (int j = ell; j > 0; j--)
			ot.lab[ot.rank++] = (char)j;
		for (int c = 'A'; c <= 'z'; c++) {
			int seen = 0;
			for (int i = 0; i < nin; i++)
				seen += find_lab(&t[i], (char)c) >= 0;
			if (seen == 1 && ot.rank < IR_MAX_RANK)
				ot.lab[ot.rank++] = (char)c;
		}
	}
	for (int i = 0; i < nin; i++)
		if (!ir_dtype_is_float(in[i]->dt) && nin > 1)
			return imp_fail(m, "not supported yet: Einsum of %s operands (float only)",
					ir_dtype_name(in[i]->dt));
	Val *acc = NULL;
	Term ta = {0};
	for (int i = 0; i < nin; i++) {
		/* keep: the output's labels and those of the terms after i */
		int n = 0;
		for (int j = 0; j < ot.rank; j++)
			keep[n++] = ot.lab[j];
		for (int k = i + 1; k < nin; k++)
			for (int j = 0; j < t[k].rank && n < 63; j++)
				keep[n++] = t[k].lab[j];
		keep[n] = 0;
		Term ti = t[i];
		Val *xi = diagonals(m, in[i], &ti);
		if (!xi)
			return -1;
		/* labels of operand i also in acc are kept for the join */
		char keep_i[80];
		snprintf(keep_i, sizeof keep_i, "%s", keep);
		size_t ln = strlen(keep_i);
		for (int j = 0; j < ta.rank && acc && ln < 79; j++)
			keep_i[ln++] = ta.lab[j];
		keep_i[ln] = 0;
		Val *x = sum_out(m, xi, &ti, keep_i);
		if (!x)
			return -1;
		if (!acc) {
			acc = x;
			ta = ti;
			continue;
		}
		Term tr;
		acc = contract(m, acc, &ta, x, &ti, keep, &tr);
		if (!acc)
			return -1;
		ta = tr;
	}
	/* the labels of out present in ta, in out's order */
	char ol[IR_MAX_RANK + 1] = {0};
	for (int i = 0; i < ot.rank; i++)
		ol[i] = ot.lab[i];
	acc = sum_out(m, acc, &ta, ol);
	int perm[IR_MAX_RANK];
	if (!acc)
		return -1;
	for (int i = 0; i < ot.rank; i++)
		for (int j = 0; j < i; j++)
			if (ot.lab[i] == ot.lab[j])
				return imp_fail(m, "not supported yet: Einsum with a repeated output "
						"label");
	if (ta.rank != ot.rank)
		return imp_fail(m, "equation '%s': an output label is in no input", eq);
	for (int i = 0; i < ot.rank; i++)
		perm[i] = find_lab(&ta, ot.lab[i]);
	OUT(ob_permute(m, acc, perm));
}

/* ---- Scatter ---------------------------------------------------------------------------- */

/* Scatters with constant indices: for each output position, the flat positions of
 * the updates that land on it (at most SCATTER_MAX_HITS, in order) as constant
 * gather indices into the flattened updates; the result is the data where no
 * update lands, else the last update (none), or the data combined with every hit
 * (add, mul, max, min). */
enum { SCATTER_MAX_HITS = 16 };

typedef struct {
	int64_t *src;     /* [hits][P]: update positions, -1 for none */
	int hits;
} Hits;

static int hits_add(Imp *m, Hits *t, int64_t p, int64_t u, int64_t P)
{
	int k = 0;
	while (k < t->hits && t->src[(int64_t)k * P + p] >= 0)
		k++;
	if (k == SCATTER_MAX_HITS)
		return imp_fail(m, "not supported yet: more than %d updates to one position",
				SCATTER_MAX_HITS);
	if (k == t->hits) {
		t->src = xrealloc(t->src, (size_t)(P * (k + 1)) * sizeof *t->src);
		for (int64_t i = 0; i < P; i++)
			t->src[(int64_t)k * P + i] = -1;
		t->hits++;
	}
	t->src[(int64_t)k * P + p] = u;
	return 0;
}

static Val *scatter_apply(Imp *m, Val *x, Val *upd, Hits *t, const char *red)
{
	int64_t P = ob_count(x), U = ob_count(upd);
	OpKind k;
	if (!strcmp(red, "none"))
		k = OP_COUNT;
	else if (!strcmp(red, "add"))
		k = OP_ADD;
	else if (!strcmp(red, "mul"))
		k = OP_MUL;
	else if (!strcmp(red, "max"))
		k = OP_MAX;
	else if (!strcmp(red, "min"))
		k = OP_MIN;
	else
		return imp_fail(m, "reduction '%s' is not supported", red), NULL;
	Val *uf = ob_reshape(m, upd, 1, (int64_t[]){U});
	Val *y = x;
	for (int h = 0; h < t->hits && y; h++) {
		/* none: only the last hit counts */
		if (k == OP_COUNT && h + 1 < t->hits) {
			for (int64_t p = 0; p < P; p++)
				if (t->src[(int64_t)(h + 1) * P + p] >= 0)
					t->src[(int64_t)h * P + p] = -1;
		}
		Val *idx = ob_kfull(m, DT_I64, 1, (int64_t[]){P}, 0);
		Val *mask = ob_kfull(m, DT_BOOL, 1, (int64_t[]){P}, 0);
		if (!idx || !mask)
			return NULL;
		for (int64_t p = 0; p < P; p++) {
			int64_t s = t->src[(int64_t)h * P + p];
			((int64_t *)idx->k.data)[p] = s < 0 ? 0 : s;
			host_set(&mask->k, p, s >= 0);
		}
		Val *gin[2] = {uf, idx};
		Attrs at = imp_attrs(OP_GATHER);
		at.axis = 0;
		Val *g = ob_reshape(m, imp_emit(m, OP_GATHER, gin, 2, &at), x->rank, x->dim);
		mask = ob_reshape(m, mask, x->rank, x->dim);
		Val *v = k == OP_COUNT ? g : ob_bin(m, k, y, g);
		y = ob_where3(m, mask, v, y);
	}
	return y;
}

static const char *reduction_of(Imp *m, char *buf, size_t n)
{
	ob_astr(m, "reduction", buf, n, "none");
	return buf;
}

/* The scatters' shared refusal: indices known only at run time. */
static int need_const_indices(Imp *m, const Val *iv)
{
	if (iv->is_const)
		return 0;
	return imp_fail(m, "not supported yet: indices computed at run time (only constant "
			"indices are supported)");
}

/* A scatter index c into a dim of n, negative counting from the end, made 0..n-1;
 * -1 with the message when it is out of range. */
static int scatter_index(Imp *m, int64_t *c, int64_t n)
{
	if (*c < -n || *c >= n)
		return imp_fail(m, "index %lld is out of range for dim %lld", (long long)*c,
				(long long)n);
	if (*c < 0)
		*c += n;
	return 0;
}

/* ScatterElements (and the deprecated Scatter) */
HANDLER(h_scatter_elements)
{
	NEED(3);
	Val *x = in[0], *iv = in[1], *upd = in[2];
	int64_t axis = ob_ai(m, "axis", 0);
	if (ob_norm_axis(m, &axis, x->rank))
		return -1;
	if (need_const_indices(m, iv))
		return -1;
	if (iv->rank != x->rank || upd->rank != x->rank || upd->dt != x->dt)
		return imp_fail(m, "indices and updates must have the data's rank (and updates "
				"its dtype)");
	for (int i = 0; i < x->rank; i++)
		if (iv->dim[i] != upd->dim[i] || iv->dim[i] > x->dim[i])
			return imp_fail(m, "indices and updates must have one shape, within the "
					"data's");
	int64_t P = ob_count(x), U = ob_count(upd);
	if (P > SHAPE_CONST_MAX / SCATTER_MAX_HITS)
		return imp_fail(m, "not supported yet: a scatter into more than %d elements",
				SHAPE_CONST_MAX / SCATTER_MAX_HITS);
	Hits t = {0};
	for (int64_t u = 0; u < U; u++) {
		int64_t rem = u, p = 0, mul = 1;
		for (int i = x->rank - 1; i >= 0; i--) {
			int64_t c = rem % iv->dim[i];
			rem /= iv->dim[i];
			if (i == axis) {
				c = host_get_i64(&iv->k, u);
				if (scatter_index(m, &c, x->dim[i])) {
					free(t.src);
					return -1;
				}
			}
			p += c * mul;
			mul *= x->dim[i];
		}
		if (hits_add(m, &t, p, u, P)) {
			free(t.src);
			return -1;
		}
	}
	char red[16];
	Val *y = scatter_apply(m, x, upd, &t, reduction_of(m, red, sizeof red));
	free(t.src);
	OUT(y);
}

HANDLER(h_scatternd)
{
	NEED(3);
	Val *x = in[0], *iv = in[1], *upd = in[2];
	if (need_const_indices(m, iv))
		return -1;
	if (iv->rank < 1 || upd->dt != x->dt)
		return imp_fail(m, "indices must have rank 1 or more, updates the data's dtype");
	int64_t k = iv->dim[iv->rank - 1];
	if (k < 1 || k > x->rank || upd->rank != iv->rank - 1 + x->rank - k)
		return imp_fail(m, "index rows of %lld do not fit data of rank %d and updates of "
				"rank %d", (long long)k, x->rank, upd->rank);
	int64_t P = ob_count(x), Q = ob_count(iv) / k, R = 1;
	for (int i = (int)k; i < x->rank; i++)
		R *= x->dim[i];
	if (P > SHAPE_CONST_MAX / SCATTER_MAX_HITS || ob_count(upd) != Q * R)
		return imp_fail(m, "not supported yet: a scatter into more than %d elements (or "
				"updates of another size than the index rows select)",
				SHAPE_CONST_MAX / SCATTER_MAX_HITS);
	Hits t = {0};
	for (int64_t q = 0; q < Q; q++) {
		int64_t base = 0;
		for (int j = 0; j < k; j++) {
			int64_t c = host_get_i64(&iv->k, q * k + j);
			if (scatter_index(m, &c, x->dim[j])) {
				free(t.src);
				return -1;
			}
			base = base * x->dim[j] + c;
		}
		for (int64_t r = 0; r < R; r++)
			if (hits_add(m, &t, base * R + r, q * R + r, P)) {
				free(t.src);
				return -1;
			}
	}
	char red[16];
	Val *y = scatter_apply(m, x, upd, &t, reduction_of(m, red, sizeof red));
	free(t.src);
	OUT(y);
}
