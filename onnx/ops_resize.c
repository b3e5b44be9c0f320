/* ops_resize.c: Resize and Upsample (docs/onnx.md). Resizing is separable: each
 * resized axis is a sum of a few taps, tap j being a gather of x along the axis
 * with a constant index (one per output position, expanded over the other dims)
 * times a constant weight per output position. The taps are worked out at import
 * time from the mode (nearest, linear, cubic, antialiased linear and cubic), the
 * coordinate transformation and the scales or sizes, the way ONNX's reference
 * implementation defines them: the n source positions nearest to the mapped
 * coordinate, clamped to the edge. Nearest is one tap of weight 1: a plain gather,
 * exact for every dtype. Scales, sizes, roi and axes must be constants. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "builders.h"
#include "ops_resize.h"

/* Bounds on what an import builds: taps per output position (antialiasing by a
 * factor f takes about 2f or 4f), and taps x output positions per axis (the
 * constants). An output dim is bounded by the second. */
enum { RESIZE_MAX_TAPS = 64, RESIZE_MAX_TABLE = 1 << 22 };

typedef enum { NM_ROUND_FLOOR, NM_ROUND_CEIL, NM_FLOOR, NM_CEIL, NM_SIMPLE } NearestMode;
typedef enum { CT_HALF, CT_HALF_SYM, CT_PYTORCH, CT_ALIGN, CT_ASYM, CT_TF_NN, CT_CROP } CoordMode;
typedef enum { RM_NEAREST, RM_LINEAR, RM_CUBIC } ResizeMode;

typedef struct {
	ResizeMode mode;
	CoordMode coord;
	NearestMode nearest;
	double a;               /* cubic_coeff_a */
	bool exclude, antialias;
	double extrapolation;
} Resize;

static double cubic_w(double x, double a)
{
	x = fabs(x);
	if (x <= 1)
		return ((a + 2) * x - (a + 3)) * x * x + 1;
	if (x < 2)
		return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
	return 0;
}

/* The source coordinate of output position y (ONNX's coordinate transformations;
 * out_f is scale x in, as a real number). */
static double source_coord(const Resize *r, double y, double scale, int64_t in, int64_t out,
			   const double *roi)
{
	double out_f = scale * (double)in;
	switch (r->coord) {
	case CT_ALIGN:
		return out_f == 1 ? 0 : y * (double)(in - 1) / (out_f - 1);
	case CT_ASYM:
		return y / scale;
	case CT_TF_NN:
		return (y + 0.5) / scale;
	case CT_CROP: {
		double x = out_f == 1 ? (roi[1] - roi[0]) * (double)(in - 1) / 2
				      : y * (roi[1] - roi[0]) * (double)(in - 1) / (out_f - 1);
		return x + roi[0] * (double)(in - 1);
	}
	case CT_PYTORCH:
		return out_f == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
	case CT_HALF_SYM: {
		double adj = (double)out / out_f, center = (double)in / 2;
		return center * (1 - adj) + (y + 0.5) / scale - 0.5;
	}
	case CT_HALF:
	default:
		return (y + 0.5) / scale - 0.5;
	}
}

/* The weights of n taps at positions base + start + j (j < n) for a coordinate at
 * base + ratio, ratio in (0, 1]. Returns n. */
static int coeffs(const Resize *r, double ratio, double scale, double *w, int *start)
{
	if (r->mode == RM_NEAREST) {
		bool hi;
		switch (r->nearest) {
		case NM_ROUND_CEIL: hi = ratio >= 0.5; break;
		case NM_FLOOR: hi = false; break;
		case NM_CEIL: hi = true; break;
		case NM_SIMPLE: hi = scale < 1; break;
		case NM_ROUND_FLOOR:
		default: hi = ratio > 0.5; break;
		}
		if (ratio == 1)
			hi = true;
		*start = 0;
		w[0] = !hi;
		w[1] = hi;
		return 2;
	}
	double s = r->antialias && scale < 1 ? scale : 1;
	double support = r->mode == RM_LINEAR ? 1 : 2;
	int st = (int)floor(-support / s) + 1, n = 2 - 2 * st;
	if (n > RESIZE_MAX_TAPS)
		return -1;
	double sum = 0;
	for (int j = 0; j < n; j++) {
		double x = s * ((double)(st + j) - ratio);
		if (r->mode == RM_LINEAR)
			w[j] = fmax(0, fmin(1, 1 - fabs(x)));
		else
			w[j] = cubic_w(x, r->a);
		sum += w[j];
	}
	if (r->antialias && sum != 0)
		for (int j = 0; j < n; j++)
			w[j] /= sum;
	*start = st;
	return n;
}

typedef struct {
	int k;                  /* taps */
	int64_t *idx;           /* [k][out] */
	double *w;              /* [k][out] */
	bool *extra;            /* [out]: extrapolated (tf_crop_and_resize) */
	bool any_extra;
} Taps;

/* The taps of one axis; -1 with the error set. */
static int axis_taps(Imp *m, const Resize *r, int64_t in, int64_t out, double scale,
		     const double *roi, Taps *t)
{
	double w[RESIZE_MAX_TAPS * 2];
	int64_t pos[RESIZE_MAX_TAPS * 2];
	int start;
	/* the number of taps is fixed per axis (it depends on the scale only) */
	int n = coeffs(r, 0.5, scale, w, &start);
	if (n < 0 || (int64_t)n * out > RESIZE_MAX_TABLE)
		return imp_fail(m, "not supported yet: Resize to %lld positions with %d taps "
				"each (at most %d taps and %d taps x positions per axis)",
				(long long)out, n < 0 ? RESIZE_MAX_TAPS + 1 : n, RESIZE_MAX_TAPS,
				RESIZE_MAX_TABLE);
	t->idx = xcalloc((size_t)(n * out), sizeof *t->idx);
	t->w = xcalloc((size_t)(n * out), sizeof *t->w);
	t->extra = xcalloc((size_t)out, sizeof *t->extra);
	t->k = 0;
	t->any_extra = false;
	for (int64_t o = 0; o < out; o++) {
		double x = source_coord(r, (double)o, scale, in, out, roi);
		if (r->coord == CT_CROP && (x < 0 || x > (double)(in - 1))) {
			t->extra[o] = t->any_extra = true;
			continue;
		}
		double base = floor(x), ratio = x - base;
		if (ratio == 0) {
			ratio = 1;
			base -= 1;
		}
		int nn = coeffs(r, ratio, scale, w, &start);
		int kept = 0;
		if (r->exclude) {
			double sum = 0;
			for (int j = 0; j < nn; j++) {
				double p = base + start + j;
				if (p < 0 || p >= (double)in)
					w[j] = 0;
				sum += w[j];
			}
			for (int j = 0; j < nn && sum != 0; j++)
				w[j] /= sum;
		}
		/* clamp to the edge, merge taps that land on one position, drop zeros */
		for (int j = 0; j < nn; j++) {
			double p = base + start + j;
			int64_t q = p < 0 ? 0 : p > (double)(in - 1) ? in - 1 : (int64_t)p;
			if (w[j] == 0)
				continue;
			int f = 0;
			while (f < kept && pos[f] != q)
				f++;
			if (f == kept) {
				pos[kept] = q;
				w[kept++] = w[j];
			} else {
				w[f] += w[j];
			}
		}
		for (int j = 0; j < kept; j++) {
			t->idx[(int64_t)j * out + o] = pos[j];
			t->w[(int64_t)j * out + o] = w[j];
		}
		if (kept > t->k)
			t->k = kept;
	}
	return 0;
}

static void taps_free(Taps *t)
{
	free(t->idx);
	free(t->w);
	free(t->extra);
}

static Val *resize_axis(Imp *m, const Resize *r, Val *x, int axis, const Taps *t, int64_t out)
{
	Val *y = NULL;
	for (int j = 0; j < t->k && x; j++) {
		const double *w = t->w + (int64_t)j * out;
		Val *g = ob_take_axis(m, x, axis, t->idx + (int64_t)j * out, out);
		bool ones = true;
		for (int64_t o = 0; o < out; o++)
			ones = ones && w[o] == 1;
		if (!ones)
			g = ob_bin(m, OP_MUL, g, ob_axis_const(m, x->dt, x->rank, axis, w, NULL, out));
		y = y ? ob_bin(m, OP_ADD, y, g) : g;
		if (!g)
			return NULL;
	}
	if (!t->any_extra || !x)
		return y;
	/* extrapolated positions: no tap; their value comes from a constant */
	double *e = xcalloc((size_t)out, sizeof *e);
	for (int64_t o = 0; o < out; o++)
		e[o] = t->extra[o] ? r->extrapolation : 0;
	Val *ev = ob_axis_const(m, x->dt, x->rank, axis, e, NULL, out);
	free(e);
	if (!y) {
		int64_t dim[IR_MAX_RANK];
		memcpy(dim, x->dim, sizeof dim);
		dim[axis] = out;
		return ob_expand(m, ev, x->rank, dim);
	}
	return r->extrapolation != 0 ? ob_bin(m, OP_ADD, y, ev) : y;
}

static int parse_mode(Imp *m, Resize *r, bool legacy)
{
	char s[40];
	ob_astr(m, "mode", s, sizeof s, "nearest");
	if (!strcmp(s, "nearest"))
		r->mode = RM_NEAREST;
	else if (!strcmp(s, "linear") || !strcmp(s, "bilinear"))
		r->mode = RM_LINEAR;
	else if (!strcmp(s, "cubic") && !legacy)
		r->mode = RM_CUBIC;
	else
		return imp_fail(m, "mode '%s' is not supported yet", s);
	if (legacy) {  /* Upsample and Resize-10: asymmetric, nearest picks floor
			* when upsampling and ceil when downsampling (as onnxruntime) */
		r->coord = CT_ASYM;
		r->nearest = NM_SIMPLE;
		r->a = -0.75;
		return 0;
	}
	ob_astr(m, "coordinate_transformation_mode", s, sizeof s, "half_pixel");
	static const char *cn[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
				   "align_corners", "asymmetric", "tf_half_pixel_for_nn",
				   "tf_crop_and_resize"};
	int i = 0;
	while (i < 7 && strcmp(s, cn[i]))
		i++;
	if (i == 7)
		return imp_fail(m, "coordinate_transformation_mode '%s' is not supported yet", s);
	r->coord = (CoordMode)i;
	ob_astr(m, "nearest_mode", s, sizeof s, "round_prefer_floor");
	static const char *nn[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
	i = 0;
	while (i < 4 && strcmp(s, nn[i]))
		i++;
	if (i == 4)
		return imp_fail(m, "nearest_mode '%s' is not supported yet", s);
	r->nearest = (NearestMode)i;
	r->a = ob_af(m, "cubic_coeff_a", -0.75);
	r->exclude = ob_ai(m, "exclude_outside", 0) != 0;
	r->antialias = ob_ai(m, "antialias", 0) != 0 && r->mode != RM_NEAREST;
	r->extrapolation = ob_af(m, "extrapolation_value", 0);
	return 0;
}

/* The float values of a constant (scales, roi); -1 when v is absent or empty. */
static int floats_of(Imp *m, const Val *v, const char *what, double *out, int max)
{
	if (!v || (v->is_const && v->k.n == 0))
		return -1;
	if (!v->is_const)
		return imp_fail(m, "%s is computed at run time: only constant %s are supported",
				what, what), -2;
	if (v->k.n > max)
		return imp_fail(m, "%s has %lld values, at most %d are supported", what,
				(long long)v->k.n, max), -2;
	for (int64_t i = 0; i < v->k.n; i++)
		out[i] = host_get(&v->k, i);
	return (int)v->k.n;
}

static int resize(Imp *m, Val *x, Val *roi_v, Val *scales_v, Val *sizes_v, bool legacy,
		  Val **out)
{
	Resize r = {0};
	if (parse_mode(m, &r, legacy))
		return -1;
	int rank = x->rank;
	if (rank < 1)
		return imp_fail(m, "Resize of a scalar is not supported");
	if (r.mode != RM_NEAREST && !ir_dtype_is_float(x->dt))
		return imp_fail(m, "not supported yet: Resize mode linear or cubic of %s input "
				"(nearest takes every dtype)", ir_dtype_name(x->dt));
	int64_t axes[IR_MAX_RANK];
	int na = ob_aints(m, "axes", axes, IR_MAX_RANK);
	if (na == -2)
		return -1;
	if (na < 0) {
		na = rank;
		for (int i = 0; i < rank; i++)
			axes[i] = i;
	}
	bool seen[IR_MAX_RANK] = {false};
	for (int i = 0; i < na; i++) {
		if (ob_norm_axis(m, &axes[i], rank))
			return -1;
		if (seen[axes[i]])
			return imp_fail(m, "axis %lld is repeated in axes", (long long)axes[i]);
		seen[axes[i]] = true;
	}
	double sv[IR_MAX_RANK], rv[2 * IR_MAX_RANK];
	int64_t zv[IR_MAX_RANK];
	double roi[2 * IR_MAX_RANK];
	for (int i = 0; i < rank; i++)
		roi[i] = 0, roi[rank + i] = 1;
	if (r.coord == CT_CROP) {
		int nr = floats_of(m, roi_v, "roi", rv, 2 * IR_MAX_RANK);
		if (nr == -2)
			return -1;
		if (nr >= 0 && nr != 2 * na)
			return imp_fail(m, "roi has %d values for %d axes", nr, na);
		for (int i = 0; i < na && nr >= 0; i++)
			roi[axes[i]] = rv[i], roi[rank + axes[i]] = rv[na + i];
	}
	int ns = floats_of(m, scales_v, "scales", sv, IR_MAX_RANK);
	if (ns == -2)
		return -1;
	int nz = -1;
	if (sizes_v && !(sizes_v->is_const && sizes_v->k.n == 0)) {
		nz = ob_ints_of(m, sizes_v, "sizes", zv, IR_MAX_RANK);
		if (nz < 0)
			return -1;
	}
	if ((ns < 0) == (nz < 0))
		return imp_fail(m, "exactly one of scales and sizes must be given");
	if ((ns >= 0 && ns != na) || (nz >= 0 && nz != na))
		return imp_fail(m, "scales or sizes have %d values for %d axes", ns >= 0 ? ns : nz,
				na);
	double scale[IR_MAX_RANK];
	int64_t osz[IR_MAX_RANK];
	for (int i = 0; i < rank; i++)
		scale[i] = 1, osz[i] = x->dim[i];
	if (ns >= 0) {
		for (int i = 0; i < na; i++) {
			int a = (int)axes[i];
			if (!(sv[i] > 0) || sv[i] * (double)x->dim[a] > (double)RESIZE_MAX_TABLE)
				return imp_fail(m, "scale %g of axis %d is not supported (positive, "
						"at most %d output positions)", sv[i], a,
						RESIZE_MAX_TABLE);
			scale[a] = sv[i];
			osz[a] = (int64_t)(sv[i] * (double)x->dim[a]);
		}
	} else {
		char pol[24];
		ob_astr(m, "keep_aspect_ratio_policy", pol, sizeof pol, "stretch");
		bool larger = !strcmp(pol, "not_larger"), smaller = !strcmp(pol, "not_smaller");
		if (!larger && !smaller && strcmp(pol, "stretch"))
			return imp_fail(m, "keep_aspect_ratio_policy '%s' is not supported", pol);
		double pick = 0;
		for (int i = 0; i < na; i++) {
			int a = (int)axes[i];
			if (zv[i] < 1 || zv[i] > RESIZE_MAX_TABLE)
				return imp_fail(m, "size %lld of axis %d is not supported (1 to %d)",
						(long long)zv[i], a, RESIZE_MAX_TABLE);
			scale[a] = (double)zv[i] / (double)x->dim[a];
			osz[a] = zv[i];
			if (i == 0 || (larger && scale[a] < pick) || (smaller && scale[a] > pick))
				pick = scale[a];
		}
		for (int i = 0; i < na && (larger || smaller); i++) {
			int a = (int)axes[i];
			scale[a] = pick;
			osz[a] = (int64_t)(pick * (double)x->dim[a] + 0.5);
			if (osz[a] > RESIZE_MAX_TABLE)
				return imp_fail(m, "size %lld of axis %d is not supported (at most %d)",
						(long long)osz[a], a, RESIZE_MAX_TABLE);
		}
	}
	double total = 1;
	for (int i = 0; i < rank; i++) {
		if (osz[i] < 1)
			return imp_fail(m, "Resize to an empty dim (axis %d) is not supported", i);
		total *= (double)osz[i];
	}
	if (x->is_const && total > RESIZE_MAX_TABLE)
		return imp_fail(m, "not supported yet: resizing a constant to more than %d "
				"elements (folded at import)", RESIZE_MAX_TABLE);
	Val *y = x;
	for (int i = 0; i < na && y; i++) {
		int a = (int)axes[i];
		if (fabs(scale[a] - 1) < 1e-9 && osz[a] == x->dim[a] &&
		    (r.coord != CT_CROP || (roi[a] == 0 && roi[rank + a] == 1)))
			continue;
		Taps t = {0};
		if (axis_taps(m, &r, x->dim[a], osz[a], scale[a], (double[]){roi[a], roi[rank + a]},
			      &t))
			return -1;
		bool id = t.k == 1 && !t.any_extra && osz[a] == x->dim[a];
		for (int64_t o = 0; o < osz[a] && id; o++)
			id = t.idx[o] == o && t.w[o] == 1;
		if (!id)
			y = resize_axis(m, &r, y, a, &t, osz[a]);
		taps_free(&t);
	}
	out[0] = y;
	return y ? 0 : -1;
}

HANDLER(h_resize)
{
	NEED(1);
	if (m->opset < 11)
		return resize(m, in[0], NULL, nin > 1 ? in[1] : NULL, NULL, true, out);
	return resize(m, in[0], nin > 1 ? in[1] : NULL, nin > 2 ? in[2] : NULL,
		      nin > 3 ? in[3] : NULL, false, out);
}

HANDLER(h_upsample)
{
	NEED(1);
	if (m->opset >= 9)
		return resize(m, in[0], NULL, nin > 1 ? in[1] : NULL, NULL, true, out);
	/* opset 7: scales is an attribute */
	const Onnx__AttributeProto *s = ob_attr(m, "scales");
	if (!s || !s->n_floats)
		return imp_fail(m, "attribute scales is missing");
	if (s->n_floats > IR_MAX_RANK)
		return imp_fail(m, "attribute scales has %zu values", s->n_floats);
	int64_t d[1] = {(int64_t)s->n_floats};
	HostTensor k;
	Diag dg;
	if (host_alloc(&k, DT_F32, 1, d, &dg))
		return imp_fail(m, "%s", dg.msg);
	for (size_t i = 0; i < s->n_floats; i++)
		host_set(&k, (int64_t)i, s->floats[i]);
	return resize(m, in[0], NULL, imp_const(m, &k), NULL, true, out);
}
