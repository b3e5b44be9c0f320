/* ops_more.c: handlers composed from the builders of ops_util.h that ops.c's
 * handlers do not share (docs/onnx.md lists the mapping): ConvTranspose, CumSum,
 * OneHot, EyeLike, Hardmax, Shrink, MeanVarianceNormalization, the hyperbolic
 * functions, LRN, GatherND, Einsum. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "ops_util.h"

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
	Val *v = pad_axis(m, reshape(m, x, r, d), a + 1, 0, s - 1, 0);
	v = reshape(m, v, x->rank, back);
	return slice1(m, v, a, 0, (x->dim[a] - 1) * s + 1);
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
		x = slice1(m, x, a, b, e);
	}
	return pad_axis(m, x, a, lo > 0 ? lo : 0, hi > 0 ? hi : 0, 0);
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
	int64_t g = ai(m, "group", 1);
	if (g < 1 || g > (1 << 20) || x->dim[1] % g || w->dim[0] != x->dim[1])
		return imp_fail(m, "group %lld does not fit %lld input channels and a weight of "
				"%lld", (long long)g, (long long)x->dim[1], (long long)w->dim[0]);
	int64_t k[2], s[2] = {1, 1}, dl[2] = {1, 1}, p[4] = {0}, op[2] = {0}, os[2];
	int64_t v[6];
	int n;
	if ((n = aints(m, "kernel_shape", v, 2)) == -2)
		return -1;
	for (int i = 0; i < nsp; i++) {
		k[i] = w->dim[2 + i];
		if (n >= 0 && (n != nsp || v[i] != k[i]))
			return imp_fail(m, "kernel_shape differs from the weight's shape");
	}
	if ((n = aints(m, "strides", v, 2)) == -2)
		return -1;
	for (int i = 0; i < n; i++)
		s[i] = v[i];
	if ((n = aints(m, "dilations", v, 2)) == -2)
		return -1;
	for (int i = 0; i < n; i++)
		dl[i] = v[i];
	int np = aints(m, "pads", v, 4);
	if (np == -2)
		return -1;
	if (np >= 0 && np != 2 * nsp)
		return imp_fail(m, "pads has %d values for %d spatial dims", np, nsp);
	for (int i = 0; i < np; i++)
		p[i % nsp * 2 + i / nsp] = v[i];   /* p[2i] lo, p[2i+1] hi */
	if ((n = aints(m, "output_padding", v, 2)) == -2)
		return -1;
	for (int i = 0; i < n && i < nsp; i++)
		op[i] = v[i];
	int nos = aints(m, "output_shape", v, 4);
	if (nos == -2)
		return -1;
	if (nos >= 0 && nos != nsp)  /* with N and C given too: the last nsp */
		for (int i = 0; i < nsp; i++)
			v[i] = v[nos - nsp + i];
	for (int i = 0; i < nsp; i++)
		os[i] = nos >= nsp ? v[i] : -1;
	char ap[24];
	astr(m, "auto_pad", ap, sizeof ap, "NOTSET");
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
		if (full - p[2 * i] - p[2 * i + 1] < 1 || full > (1 << 24))
			return imp_fail(m, "the output of spatial axis %d would have %lld elements",
					i, (long long)(full - p[2 * i] - p[2 * i + 1]));
	}
	if (nsp == 1)
		k[1] = 1, s[1] = 1, dl[1] = 1, op[1] = 0, p[2] = p[3] = 0;
	/* the weight: [C, M/g, kh, kw] -> [g, C/g, M/g, kh, kw] -> [g, M/g, C/g, ..],
	 * flipped, as [M, C/g, kh, kw] */
	Val *wt = w->rank == 3 ? reshape(m, w, 4, (int64_t[]){w->dim[0], w->dim[1], w->dim[2], 1})
			       : w;
	int64_t cg = x->dim[1] / g, mg = wt->dim[1];
	int64_t w5[5] = {g, cg, mg, k[0], k[1]};
	static const int swap[5] = {0, 2, 1, 3, 4};
	wt = permute(m, reshape(m, wt, 5, w5), swap);
	wt = wt ? reshape(m, wt, 4, (int64_t[]){g * mg, cg, k[0], k[1]}) : NULL;
	for (int i = 0; i < 2 && wt; i++) {
		if (k[i] == 1)
			continue;
		int64_t rev[1024];
		if (k[i] > 1024)
			return imp_fail(m, "kernels above 1024 are not supported");
		for (int64_t j = 0; j < k[i]; j++)
			rev[j] = k[i] - 1 - j;
		wt = take(m, wt, 2 + i, rev, k[i]);
	}
	Val *xx = x->rank == 3 ? reshape(m, x, 4, (int64_t[]){x->dim[0], x->dim[1], x->dim[2], 1})
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
	Val *cin[3] = {xx, wt, nin > 2 ? in[2] : NULL};
	Val *y = imp_emit(m, OP_CONV2D, cin, cin[2] ? 3 : 2, &at);
	if (y && x->rank == 3)
		y = reshape(m, y, 3, y->dim);
	OUT(y);
}
