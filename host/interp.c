/* interp.c: the plain-C reference interpreter that tests and `fusec run --check`
 * compare generated kernels against. It favours being obviously right over speed:
 * every element of every op is computed from its multi-index, floats in double,
 * ints in int64, and stored rounded (floats, to nearest even) or wrapped (ints) to
 * the op's output dtype.
 *
 * Semantics, where torch and burn leave a choice:
 * - Scalars, clamp bounds and mask_fill values are first converted to the dtype of
 *   the tensor they meet, as burn's elem conversion does (ints: truncated).
 * - Integer arithmetic wraps at the dtype's width. div truncates toward zero (as C
 *   and burn's int division; not torch's floor `//`); x / 0 is 0. rem takes the sign
 *   of the divisor (torch.remainder, for ints and floats); x rem 0 is 0 for ints and
 *   NaN for floats. pow on ints multiplies (square and multiply, wrapping); a
 *   negative exponent gives 1 for base 1, ±1 for base -1, and 0 otherwise.
 * - max, min, clamp, max_dim, min_dim and max_pool2d propagate NaN (NaN wins), as
 *   torch. argmax and argmin return the first index of the extreme, and a NaN
 *   counts as the extreme (the first NaN wins), as torch.
 * - sign(NaN) is NaN. round is half to even. gelu none is x·Φ(x) through erf;
 *   gelu tanh is 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))).
 * - Sums, means, products, matmul and conv2d accumulate in double (int64 for ints);
 *   an int mean truncates toward zero.
 * - Casts: float to int truncates and saturates, NaN gives 0; int to int wraps;
 *   to bool is x != 0.
 * - avg_pool2d counts padding in its divisor (count_include_pad, torch's default);
 *   max_pool2d ignores padding.
 * - gather indices must lie in [0, size); anything else is a runtime error. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp.h"

static const double pi = 3.14159265358979323846;
static const double sqrt2 = 1.41421356237309504880;

typedef struct {
	const Graph *g;
	HostTensor *val;       /* one per graph tensor; empty until computed */
	Diag *d;
	int opi;               /* the op being run, for messages */
	HostTensor *err;       /* NULL, or one f64 error bound per value (see bounds) */
	bool tf32;             /* f32 matmul operands rounded to tf32 (--allow-tf32) */
} Interp;

static void contiguous_strides(const HostTensor *t, int64_t *st)
{
	int64_t s = 1;
	for (int k = t->rank - 1; k >= 0; k--) {
		st[k] = s;
		s *= t->dim[k];
	}
}

/* Strides of x read as a tensor of out's shape (equal ranks): size-1 dims repeat. */
static void broadcast_strides(const HostTensor *x, int64_t *st)
{
	contiguous_strides(x, st);
	for (int k = 0; k < x->rank; k++)
		if (x->dim[k] == 1)
			st[k] = 0;
}

/* The offset of element i of a tensor shaped like out, read through strides st. */
static int64_t offset_of(const HostTensor *out, int64_t i, const int64_t *st)
{
	int64_t off = 0;
	for (int k = out->rank - 1; k >= 0; k--) {
		off += i % out->dim[k] * st[k];
		i /= out->dim[k];
	}
	return off;
}

static void coords_of(const HostTensor *t, int64_t i, int64_t *c)
{
	for (int k = t->rank - 1; k >= 0; k--) {
		c[k] = i % t->dim[k];
		i /= t->dim[k];
	}
}

static int fail(Interp *ip, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(Interp *ip, const char *fmt, ...)
{
	char msg[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	diag_set(ip->d, ip->g->file ? ip->g->file : "", 0, 0, "op '%s' (ops[%d]): %s",
		 ir_ops[ip->g->ops[ip->opi].kind].file, ip->opi, msg);
	return -1;
}

/* ---- elementwise ----------------------------------------------------------- */

static double attr_scalar(const Op *op)
{
	return op->attr ? op->attr->scalar : 0;
}

static double sigmoid(double x)
{
	return 1 / (1 + exp(-x));
}

static double nan_max(double a, double b)
{
	return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
}

static double nan_min(double a, double b)
{
	return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
}

/* One float result. a, b, c are operand values; the scalar is already rounded. */
static double float_elem(const Op *op, DType vt, double a, double b)
{
	double s = host_round(vt, attr_scalar(op));
	switch (op->kind) {
	case OP_ADD: return a + b;
	case OP_SUB: return a - b;
	case OP_MUL: return a * b;
	case OP_DIV: return a / b;
	case OP_ADD_SCALAR: return a + s;
	case OP_SUB_SCALAR: return a - s;
	case OP_MUL_SCALAR: return a * s;
	case OP_DIV_SCALAR: return a / s;
	case OP_REM_SCALAR: b = s; /* fall through */
	case OP_REM: {
		double r = fmod(a, b);
		if (r != 0 && (r < 0) != (b < 0))
			r += b;
		return r;
	}
	case OP_POW_SCALAR: return pow(a, s);
	case OP_POW: case OP_POWF: return pow(a, b);
	case OP_MAX: return nan_max(a, b);
	case OP_MIN: return nan_min(a, b);
	case OP_CLAMP: case OP_CLAMP_MIN: case OP_CLAMP_MAX:
		if ((op->attr->has & A_MIN) && a < host_round(vt, op->attr->min))
			a = host_round(vt, op->attr->min);
		if ((op->attr->has & A_MAX) && a > host_round(vt, op->attr->max))
			a = host_round(vt, op->attr->max);
		return a;
	case OP_EQ: return a == b;
	case OP_NE: return a != b;
	case OP_LT: return a < b;
	case OP_LE: return a <= b;
	case OP_GT: return a > b;
	case OP_GE: return a >= b;
	case OP_EQ_SCALAR: return a == s;
	case OP_NE_SCALAR: return a != s;
	case OP_LT_SCALAR: return a < s;
	case OP_LE_SCALAR: return a <= s;
	case OP_GT_SCALAR: return a > s;
	case OP_GE_SCALAR: return a >= s;
	case OP_NEG: return -a;
	case OP_ABS: return fabs(a);
	case OP_SIGN: return a > 0 ? 1 : a < 0 ? -1 : a;
	case OP_EXP: return exp(a);
	case OP_LOG: return log(a);
	case OP_LOG1P: return log1p(a);
	case OP_SQRT: return sqrt(a);
	case OP_RECIP: return 1 / a;
	case OP_SIN: return sin(a);
	case OP_COS: return cos(a);
	case OP_TANH: return tanh(a);
	case OP_ERF: return erf(a);
	case OP_FLOOR: return floor(a);
	case OP_CEIL: return ceil(a);
	case OP_ROUND: return rint(a);
	case OP_TRUNC: return trunc(a);
	case OP_IS_NAN: return isnan(a) != 0;
	case OP_IS_INF: return isinf(a) != 0;
	case OP_RELU: return a < 0 ? 0 : a;
	case OP_SIGMOID: return sigmoid(a);
	case OP_SILU: return a * sigmoid(a);
	case OP_GELU:
		if (op->attr && op->attr->approx == GELU_TANH)
			return 0.5 * a * (1 + tanh(sqrt(2 / pi) * (a + 0.044715 * a * a * a)));
		return 0.5 * a * (1 + erf(a / sqrt2));
	default: die("op %s is not a float elementwise op", ir_ops[op->kind].file);
	}
}

static int64_t ipow(int64_t a, int64_t e)
{
	if (e < 0)
		return a == 1 ? 1 : a == -1 ? (e % 2 ? -1 : 1) : 0;
	uint64_t r = 1, x = (uint64_t)a;
	for (; e; e >>= 1) {
		if (e & 1)
			r *= x;
		x *= x;
	}
	return (int64_t)r;
}

static int64_t int_div(int64_t a, int64_t b)
{
	if (b == 0)
		return 0;
	if (b == -1)
		return (int64_t)(0 - (uint64_t)a);
	return a / b;
}

static int64_t int_rem(int64_t a, int64_t b)
{
	if (b == 0 || b == -1)
		return 0;
	int64_t r = a % b;
	if (r != 0 && (r < 0) != (b < 0))
		r += b;
	return r;
}

/* One integer (or bool) result; the caller wraps it to the output dtype. */
static int64_t int_elem(const Op *op, DType vt, int64_t a, int64_t b)
{
	int64_t s = host_to_int(vt, attr_scalar(op));
	uint64_t ua = (uint64_t)a, ub = (uint64_t)b, us = (uint64_t)s;
	switch (op->kind) {
	case OP_ADD: return (int64_t)(ua + ub);
	case OP_SUB: return (int64_t)(ua - ub);
	case OP_MUL: return (int64_t)(ua * ub);
	case OP_DIV: return int_div(a, b);
	case OP_REM: return int_rem(a, b);
	case OP_POW: return ipow(a, b);
	case OP_MAX: return a > b ? a : b;
	case OP_MIN: return a < b ? a : b;
	case OP_ADD_SCALAR: return (int64_t)(ua + us);
	case OP_SUB_SCALAR: return (int64_t)(ua - us);
	case OP_MUL_SCALAR: return (int64_t)(ua * us);
	case OP_DIV_SCALAR: return int_div(a, s);
	case OP_REM_SCALAR: return int_rem(a, s);
	case OP_POW_SCALAR: return ipow(a, s);
	case OP_CLAMP: case OP_CLAMP_MIN: case OP_CLAMP_MAX:
		if ((op->attr->has & A_MIN) && a < host_to_int(vt, op->attr->min))
			a = host_to_int(vt, op->attr->min);
		if ((op->attr->has & A_MAX) && a > host_to_int(vt, op->attr->max))
			a = host_to_int(vt, op->attr->max);
		return a;
	case OP_EQ: return a == b;
	case OP_NE: return a != b;
	case OP_LT: return a < b;
	case OP_LE: return a <= b;
	case OP_GT: return a > b;
	case OP_GE: return a >= b;
	case OP_EQ_SCALAR: return a == s;
	case OP_NE_SCALAR: return a != s;
	case OP_LT_SCALAR: return a < s;
	case OP_LE_SCALAR: return a <= s;
	case OP_GT_SCALAR: return a > s;
	case OP_GE_SCALAR: return a >= s;
	case OP_NEG: return (int64_t)(0 - ua);
	case OP_ABS: return a < 0 ? (int64_t)(0 - ua) : a;
	case OP_SIGN: return (a > 0) - (a < 0);
	case OP_RELU: return a < 0 ? 0 : a;
	case OP_AND: return (a != 0) & (b != 0);
	case OP_OR: return (a != 0) | (b != 0);
	case OP_XOR: return (a != 0) ^ (b != 0);
	case OP_NOT: return a == 0;
	default: die("op %s is not an integer elementwise op", ir_ops[op->kind].file);
	}
}

/* Binary, scalar, unary, compare, select and cast ops: operands broadcast into
 * the output's shape. */
static void run_elementwise(Interp *ip, const Op *op, HostTensor *out)
{
	const HostTensor *x[3];
	int64_t st[3][IR_MAX_RANK];
	for (int k = 0; k < op->nin; k++) {
		x[k] = &ip->val[op->in[k]];
		broadcast_strides(x[k], st[k]);
	}
	DType vt = ir_op_value_dtype(ip->g, op);
	bool fl = ir_dtype_is_float(vt);
	for (int64_t i = 0; i < out->n; i++) {
		int64_t off[3];
		for (int k = 0; k < op->nin; k++)
			off[k] = offset_of(out, i, st[k]);
		if (op->kind == OP_WHERE || op->kind == OP_MASK_FILL) {
			bool m = op->kind == OP_WHERE ? host_get_i64(x[0], off[0]) != 0
						      : host_get_i64(x[1], off[1]) != 0;
			const HostTensor *src = op->kind == OP_WHERE ? (m ? x[1] : x[2]) : x[0];
			int64_t so = op->kind == OP_WHERE ? (m ? off[1] : off[2]) : off[0];
			if (op->kind == OP_MASK_FILL && m) {
				if (fl)
					host_set(out, i, attr_scalar(op));
				else
					host_set_i64(out, i, host_to_int(vt, attr_scalar(op)));
			} else if (fl) {
				host_set(out, i, host_get(src, so));
			} else {
				host_set_i64(out, i, host_get_i64(src, so));
			}
		} else if (op->kind == OP_CAST) {
			if (fl)
				host_set(out, i, host_get(x[0], off[0]));
			else if (ir_dtype_is_float(out->dtype))
				host_set(out, i, (double)host_get_i64(x[0], off[0]));
			else
				host_set_i64(out, i, host_get_i64(x[0], off[0]));
		} else if (fl) {
			double a = host_get(x[0], off[0]);
			double b = op->nin > 1 ? host_get(x[1], off[1]) : 0;
			host_set(out, i, float_elem(op, vt, a, b));
		} else {
			int64_t a = host_get_i64(x[0], off[0]);
			int64_t b = op->nin > 1 ? host_get_i64(x[1], off[1]) : 0;
			host_set_i64(out, i, int_elem(op, vt, a, b));
		}
	}
}

/* ---- views ----------------------------------------------------------------- */

/* out[i] = x[base + coords(i) · st], element by element in bytes. */
static void copy_strided(const HostTensor *x, HostTensor *out, int64_t base, const int64_t *st)
{
	size_t sz = (size_t)ir_dtype_size(x->dtype);
	for (int64_t i = 0; i < out->n; i++)
		memcpy((char *)out->data + (size_t)i * sz,
		       (const char *)x->data + (size_t)(base + offset_of(out, i, st)) * sz, sz);
}

static void run_view(Interp *ip, const Op *op, HostTensor *out)
{
	const HostTensor *x = &ip->val[op->in[0]];
	int64_t xs[IR_MAX_RANK], st[IR_MAX_RANK] = {0}, base = 0;
	contiguous_strides(x, xs);
	switch (op->kind) {
	case OP_RESHAPE:
		memcpy(out->data, x->data, (size_t)x->n * (size_t)ir_dtype_size(x->dtype));
		return;
	case OP_PERMUTE:
		for (int k = 0; k < out->rank; k++)
			st[k] = xs[op->attr->axes[k]];
		break;
	case OP_SWAP_DIMS:
		memcpy(st, xs, sizeof xs);
		st[op->attr->axes[0]] = xs[op->attr->axes[1]];
		st[op->attr->axes[1]] = xs[op->attr->axes[0]];
		break;
	case OP_EXPAND:
		broadcast_strides(x, st);
		break;
	case OP_SLICE:
		memcpy(st, xs, sizeof xs);
		for (int k = 0; k < op->attr->n; k++)
			base += op->attr->range[k][0] * xs[k];
		break;
	default: die("op %s is not a view", ir_ops[op->kind].file);
	}
	copy_strided(x, out, base, st);
}

/* ---- reductions ------------------------------------------------------------ */

/* Whether element xi should replace the current extreme bi: strictly greater (or
 * smaller), so ties keep the first index; a NaN wins and then stays. */
static bool beats(const HostTensor *x, int64_t xi, int64_t bi, bool want_max)
{
	if (ir_dtype_is_float(x->dtype)) {
		double v = host_get(x, xi), b = host_get(x, bi);
		return !isnan(b) && (isnan(v) || (want_max ? v > b : v < b));
	}
	int64_t v = host_get_i64(x, xi), b = host_get_i64(x, bi);
	return want_max ? v > b : v < b;
}

static void run_reduce(Interp *ip, const Op *op, HostTensor *out)
{
	const HostTensor *x = &ip->val[op->in[0]];
	int axis = op->attr->axis;
	int64_t outer = 1, len = x->dim[axis], inner = 1;
	for (int k = 0; k < axis; k++)
		outer *= x->dim[k];
	for (int k = axis + 1; k < x->rank; k++)
		inner *= x->dim[k];
	bool fl = ir_dtype_is_float(x->dtype), prod = op->kind == OP_PROD;
	bool want_max = op->kind == OP_MAX_DIM || op->kind == OP_ARGMAX;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < inner; j++) {
			int64_t oi = o * inner + j, base = o * len * inner + j, best = 0;
			double acc = prod ? 1 : 0;
			uint64_t iacc = prod ? 1 : 0;
			for (int64_t r = 0; r < len; r++) {
				int64_t xi = base + r * inner;
				if (op->kind == OP_SUM || op->kind == OP_MEAN) {
					acc += host_get(x, xi);
					iacc += (uint64_t)host_get_i64(x, xi);
				} else if (prod) {
					acc *= host_get(x, xi);
					iacc *= (uint64_t)host_get_i64(x, xi);
				} else if (r > 0 && beats(x, xi, base + best * inner, want_max)) {
					best = r;
				}
			}
			if (op->kind == OP_ARGMAX || op->kind == OP_ARGMIN)
				host_set_i64(out, oi, best);
			else if ((op->kind == OP_MAX_DIM || op->kind == OP_MIN_DIM) && fl)
				host_set(out, oi, host_get(x, base + best * inner));
			else if (op->kind == OP_MAX_DIM || op->kind == OP_MIN_DIM)
				host_set_i64(out, oi, host_get_i64(x, base + best * inner));
			else if (fl)
				host_set(out, oi, op->kind == OP_MEAN ? acc / (double)len : acc);
			else
				host_set_i64(out, oi, op->kind == OP_MEAN ? (int64_t)iacc / len
									  : (int64_t)iacc);
		}
}

/* ---- matmul, joins --------------------------------------------------------- */

static void run_matmul(Interp *ip, const Op *op, HostTensor *out)
{
	const HostTensor *a = &ip->val[op->in[0]], *b = &ip->val[op->in[1]];
	int r = out->rank;
	int64_t m = a->dim[r - 2], kk = a->dim[r - 1], n = b->dim[r - 1];
	int64_t as[IR_MAX_RANK], bs[IR_MAX_RANK], os[IR_MAX_RANK];
	broadcast_strides(a, as);
	broadcast_strides(b, bs);
	contiguous_strides(out, os);
	bool fl = ir_dtype_is_float(out->dtype);
	int64_t nbatch = out->n / (m * n);
	for (int64_t bt = 0; bt < nbatch; bt++) {
		int64_t abase = 0, bbase = 0, rest = bt;
		for (int k = r - 3; k >= 0; k--) {
			int64_t c = rest % out->dim[k];
			rest /= out->dim[k];
			abase += c * as[k];
			bbase += c * bs[k];
		}
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++) {
				double acc = 0;
				uint64_t iacc = 0;
				for (int64_t p = 0; p < kk; p++) {
					int64_t ai = abase + i * kk + p, bi = bbase + p * n + j;
					if (fl)
						acc += host_get(a, ai) * host_get(b, bi);
					else
						iacc += (uint64_t)host_get_i64(a, ai) *
							(uint64_t)host_get_i64(b, bi);
				}
				int64_t oi = bt * m * n + i * n + j;
				if (fl)
					host_set(out, oi, acc);
				else
					host_set_i64(out, oi, (int64_t)iacc);
			}
	}
}

static void run_cat(Interp *ip, const Op *op, HostTensor *out)
{
	int axis = op->attr->axis;
	size_t sz = (size_t)ir_dtype_size(out->dtype);
	int64_t outer = 1, inner = 1;
	for (int k = 0; k < axis; k++)
		outer *= out->dim[k];
	for (int k = axis + 1; k < out->rank; k++)
		inner *= out->dim[k];
	char *dst = out->data;
	for (int64_t o = 0; o < outer; o++)
		for (int t = 0; t < op->nin; t++) {
			const HostTensor *x = &ip->val[op->in[t]];
			size_t chunk = (size_t)(x->dim[axis] * inner) * sz;
			memcpy(dst, (const char *)x->data + (size_t)o * chunk, chunk);
			dst += chunk;
		}
}

static int run_gather(Interp *ip, const Op *op, HostTensor *out)
{
	const HostTensor *x = &ip->val[op->in[0]], *idx = &ip->val[op->in[1]];
	int axis = op->attr->axis;
	int64_t xs[IR_MAX_RANK], c[IR_MAX_RANK];
	contiguous_strides(x, xs);
	size_t sz = (size_t)ir_dtype_size(x->dtype);
	for (int64_t i = 0; i < out->n; i++) {
		int64_t v = host_get_i64(idx, i);
		if (v < 0 || v >= x->dim[axis])
			return fail(ip, "index %lld is out of range for a dim of size %lld",
				    (long long)v, (long long)x->dim[axis]);
		coords_of(out, i, c);
		c[axis] = v;
		int64_t off = 0;
		for (int k = 0; k < x->rank; k++)
			off += c[k] * xs[k];
		memcpy((char *)out->data + (size_t)i * sz, (const char *)x->data + (size_t)off * sz,
		       sz);
	}
	return 0;
}

/* ---- module ops ------------------------------------------------------------ */

static double at4(const HostTensor *t, int64_t a, int64_t b, int64_t c, int64_t d)
{
	return host_get(t, ((a * t->dim[1] + b) * t->dim[2] + c) * t->dim[3] + d);
}

/* The input row (or column) that window position k of output position o reads
 * along spatial axis ax; -1 when it falls in the padding. */
static int64_t window_pos(const Attrs *at, int ax, int64_t o, int64_t k, int dilation,
			  int64_t size)
{
	int64_t i = o * at->stride[ax] - at->padding[ax] + k * dilation;
	return i >= 0 && i < size ? i : -1;
}

/* One output element of conv2d: image n, output channel o, position (oh, ow). */
static double conv2d_at(const Op *op, const HostTensor *x, const HostTensor *w, int64_t n,
			int64_t o, int64_t oh, int64_t ow, int64_t per_group)
{
	const Attrs *at = op->attr;
	int64_t cg = w->dim[1], c0 = o / per_group * cg;
	double acc = 0;
	for (int64_t c = 0; c < cg; c++)
		for (int64_t kh = 0; kh < w->dim[2]; kh++) {
			int64_t ih = window_pos(at, 0, oh, kh, at->dilation[0], x->dim[2]);
			for (int64_t kw = 0; kw < w->dim[3] && ih >= 0; kw++) {
				int64_t iw = window_pos(at, 1, ow, kw, at->dilation[1], x->dim[3]);
				if (iw >= 0)
					acc += at4(x, n, c0 + c, ih, iw) * at4(w, o, c, kh, kw);
			}
		}
	return acc;
}

static void run_conv2d(Interp *ip, const Op *op, HostTensor *out)
{
	const HostTensor *x = &ip->val[op->in[0]], *w = &ip->val[op->in[1]];
	const HostTensor *bias = op->nin > 2 ? &ip->val[op->in[2]] : NULL;
	int64_t c[4], per_group = out->dim[1] / op->attr->groups;
	for (int64_t i = 0; i < out->n; i++) {
		coords_of(out, i, c);
		double acc = conv2d_at(op, x, w, c[0], c[1], c[2], c[3], per_group);
		host_set(out, i, acc + (bias ? host_get(bias, c[1]) : 0));
	}
}

/* max_pool2d skips the padding; avg_pool2d counts it in the divisor. */
static void run_pool2d(Interp *ip, const Op *op, HostTensor *out)
{
	const HostTensor *x = &ip->val[op->in[0]];
	const Attrs *at = op->attr;
	bool is_max = op->kind == OP_MAX_POOL2D;
	int64_t c[4];
	for (int64_t i = 0; i < out->n; i++) {
		coords_of(out, i, c);
		double acc = is_max ? -INFINITY : 0;
		for (int64_t kh = 0; kh < at->kernel[0]; kh++) {
			int64_t ih = window_pos(at, 0, c[2], kh, 1, x->dim[2]);
			for (int64_t kw = 0; kw < at->kernel[1] && ih >= 0; kw++) {
				int64_t iw = window_pos(at, 1, c[3], kw, 1, x->dim[3]);
				if (iw < 0)
					continue;
				double v = at4(x, c[0], c[1], ih, iw);
				acc = is_max ? nan_max(acc, v) : acc + v;
			}
		}
		if (!is_max)
			acc /= (double)at->kernel[0] * at->kernel[1];
		host_set(out, i, acc);
	}
}

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
 * T is narrower than P (a fused kernel may keep the value in an f32 register, or
 * store it rounded). A sum of n terms x_i adds u_P · acc(n), where acc is the
 * summation bound of the model (sum_bound). A non-finite reference value gets E = 0
 * (it must be matched exactly); a finite one whose E cannot be bounded (an interval
 * that meets a pole or leaves a function's domain) gets +inf. Integer and bool
 * values get E = 0 unless a comparison, a float-to-int cast or an argmax may flip
 * within its inputs' errors. */

/* Summation model: lambda of the probabilistic term of the kernel's own rounding
 * errors (sum_bound), and of the errors the terms bring (spread). */
#define BOUND_LAMBDA 4.0
#define SPREAD_LAMBDA BOUND_LAMBDA

/* The error that terms with errors e_i (sum l = sum e_i, q = sum e_i^2) bring to a
 * sum: l when they all push one way; SPREAD_LAMBDA·sqrt(q) when they are
 * independent, as errors of different elements made by different roundings are.
 * An e_i is not always a wide bound: where a kernel keeps an f16/bf16 matmul
 * result in f32 for its epilogue and the reference rounds it, the deviation of
 * each element is a real rounding flip of about e_i itself (docs/tolerances.md,
 * "Fused intermediates"). Taken as independent zero-mean variables with
 * |delta_i| <= e_i, their sum has a standard deviation of at most sqrt(q); the
 * margin is the same BOUND_LAMBDA standard deviations as the kernel's own sum.
 * (With 1, a bf16 matmul -> add -> matmul at K = 1024 failed at 2.5.) */
static double spread(double l, double q)
{
	double p = SPREAD_LAMBDA * sqrt(q);
	return p < l ? p : l;
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
	case OP_EXP: case OP_ERF: return 4;
	case OP_TANH: case OP_SIGMOID: return 5;
	case OP_SILU: return 6;
	case OP_POW: case OP_POWF: case OP_POW_SCALAR: return vt == DT_F64 ? 2 : 4;
	case OP_GELU:
		/* the tails are ill-conditioned inside the formula: an ulp of the
		 * argument of tanh (erfc) costs 2|u| (x²) ulps of the result */
		if (op->attr && op->attr->approx == GELU_TANH)
			return fmin(16 + 4 * fabs(gelu_tanh_arg(a)), 4096);
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
	double s = host_round(vt, attr_scalar(op));
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
			double v = float_elem(op, vt, a + i * ea, b + j * eb);
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
	if (ir_ops[op->kind].family == FAM_SCALAR || op->nin == 1) {
		b = host_round(vt, attr_scalar(op));
		eb = 0;
	}
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

static void bound_elementwise(Interp *ip, const Op *op, const HostTensor *out, double *e)
{
	const HostTensor *x[3];
	int64_t st[3][IR_MAX_RANK];
	for (int k = 0; k < op->nin; k++) {
		x[k] = &ip->val[op->in[k]];
		broadcast_strides(x[k], st[k]);
	}
	DType vt = ir_op_value_dtype(ip->g, op);
	bool fl = ir_dtype_is_float(vt);
	OpFamily fam = ir_ops[op->kind].family;
	for (int64_t i = 0; i < out->n; i++) {
		int64_t off[3];
		double ex[3] = {0, 0, 0};
		for (int k = 0; k < op->nin; k++) {
			off[k] = offset_of(out, i, st[k]);
			ex[k] = err_at(ip, op->in[k], off[k]);
		}
		double y = host_get(out, i);
		if (op->kind == OP_WHERE) {
			bool m = host_get_i64(x[0], off[0]) != 0;
			e[i] = m ? ex[1] : ex[2];
			if (ex[0] > 0 && ir_dtype_is_float(out->dtype))
				e[i] = fabs(host_get(x[1], off[1]) - host_get(x[2], off[2])) +
				       fmax(ex[1], ex[2]);
			else if (ex[0] > 0)
				e[i] = INFINITY;
		} else if (op->kind == OP_MASK_FILL) {
			bool m = host_get_i64(x[1], off[1]) != 0;
			e[i] = m ? 0 : ex[0];
			if (ex[1] > 0)
				e[i] = fl ? fabs(host_get(x[0], off[0]) - y) + ex[0] : INFINITY;
		} else if (op->kind == OP_CAST) {
			e[i] = bound_cast(x[0]->dtype, out->dtype, host_get(x[0], off[0]), ex[0], y);
		} else if (fam == FAM_COMPARE) {
			double a = host_get(x[0], off[0]), b = op->nin > 1 ? host_get(x[1], off[1]) : 0;
			e[i] = bound_compare(op, vt, a, ex[0], b, ex[1]);
		} else if (fl) {
			if (!isfinite(y)) {
				e[i] = 0;
				continue;
			}
			double a = host_get(x[0], off[0]), b = op->nin > 1 ? host_get(x[1], off[1]) : 0;
			double v = float_elem(op, vt, a, b);
			double pre = propagate_elem(op, vt, a, ex[0], b, ex[1], y) +
				     kernel_err(out->dtype, op_ulps(op, vt, a), v);
			/* gelu's tail (x·Phi(x) for x << 0) errs by an ulp or so of x·u in
			 * absolute terms, measured on the f64 kernels */
			if (op->kind == OP_GELU)
				pre += 4 * unit_round(compute_dtype(vt)) * fabs(a);
			e[i] = ir_dtype_is_float(out->dtype) ? finish(out->dtype, v, y, pre) : pre;
		} else {
			int64_t a = host_get_i64(x[0], off[0]);
			int64_t b = op->nin > 1 ? host_get_i64(x[1], off[1]) : 0;
			e[i] = bound_int_elem(op, a, ex[0], b, ex[1]);
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

static void bound_reduce(Interp *ip, const Op *op, const HostTensor *out, double *e)
{
	const HostTensor *x = &ip->val[op->in[0]];
	int src = op->in[0];
	int axis = op->attr->axis;
	int64_t outer = 1, len = x->dim[axis], inner = 1;
	for (int k = 0; k < axis; k++)
		outer *= x->dim[k];
	for (int k = axis + 1; k < x->rank; k++)
		inner *= x->dim[k];
	bool fl = ir_dtype_is_float(x->dtype);
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < inner; j++) {
			int64_t oi = o * inner + j, base = o * len * inner + j;
			double y = host_get(out, oi), prop = 0, q = 0, m = 0, m2 = 0, s = 0;
			double wide = 1, pm = 1, pv = 1;
			for (int64_t r = 0; r < len; r++) {
				int64_t xi = base + r * inner;
				double v = host_get(x, xi), ev = err_at(ip, src, xi);
				switch (op->kind) {
				case OP_SUM: case OP_MEAN:
					prop += ev;
					q += ev * ev;
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
				}
			}
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
			double v = y, pre = prop;    /* max_dim, min_dim: exact */
			if (op->kind == OP_SUM || op->kind == OP_MEAN) {
				pre = spread(prop, q) + reduce_err(out->dtype, len, m, m2, s);
				v = s;
				if (op->kind == OP_MEAN) {
					v = s / (double)len;
					pre = pre / (double)len + kernel_err(out->dtype, 1, v);
				}
			} else if (op->kind == OP_PROD) {
				v = pv;
				pre = wide - pm + kernel_err(out->dtype, 0.5 * (double)len, v);
			}
			e[oi] = finish(out->dtype, v, y, pre);
		}
}

static void bound_matmul(Interp *ip, const Op *op, const HostTensor *out, double *e)
{
	const HostTensor *a = &ip->val[op->in[0]], *b = &ip->val[op->in[1]];
	int r = out->rank;
	int64_t m = a->dim[r - 2], kk = a->dim[r - 1], n = b->dim[r - 1];
	int64_t as[IR_MAX_RANK], bs[IR_MAX_RANK];
	broadcast_strides(a, as);
	broadcast_strides(b, bs);
	bool fl = ir_dtype_is_float(out->dtype);
	int64_t nbatch = out->n / (m * n);
	for (int64_t bt = 0; bt < nbatch; bt++) {
		int64_t abase = 0, bbase = 0, rest = bt;
		for (int k = r - 3; k >= 0; k--) {
			int64_t c = rest % out->dim[k];
			rest /= out->dim[k];
			abase += c * as[k];
			bbase += c * bs[k];
		}
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++) {
				double prop = 0, q = 0, mag = 0, m2 = 0, s = 0;
				for (int64_t p = 0; p < kk; p++) {
					int64_t ai = abase + i * kk + p, bi = bbase + p * n + j;
					double va = host_get(a, ai), vb = host_get(b, bi);
					double ea = err_at(ip, op->in[0], ai), eb = err_at(ip, op->in[1], bi);
					double t = scaled(va, eb) + scaled(vb, ea) + ea * eb;
					prop += t;
					q += t * t;
					mag += fabs(va * vb);
					m2 += va * vb * va * vb;
					s += va * vb;
				}
				prop = spread(prop, q);
				int64_t oi = bt * m * n + i * n + j;
				double y = host_get(out, oi);
				if (!fl || !isfinite(y)) {
					e[oi] = fl ? 0 : prop;
					continue;
				}
				/* each product rounds once (0 with fma), then the sum */
				double u = unit_round(compute_dtype(out->dtype));
				/* --allow-tf32: both operands of every product rounded to tf32
				 * (10 mantissa bits, relative error 2^-11 each), bounded in the
				 * worst case: (2 * 2^-11 + 2^-22) * sum |a b| */
				double tf = ip->tf32 && a->dtype == DT_F32 ? (0x1p-10 + 0x1p-22) * mag : 0;
				e[oi] = finish(out->dtype, s, y,
					       prop + tf + u * mag + reduce_err(out->dtype, kk, mag, m2, s));
			}
	}
}

static void bound_conv2d(Interp *ip, const Op *op, const HostTensor *out, double *e)
{
	const HostTensor *x = &ip->val[op->in[0]], *w = &ip->val[op->in[1]];
	const Attrs *at = op->attr;
	int64_t c[4], per_group = out->dim[1] / at->groups, cg = w->dim[1];
	double u = unit_round(compute_dtype(out->dtype));
	for (int64_t i = 0; i < out->n; i++) {
		coords_of(out, i, c);
		int64_t c0 = c[1] / per_group * cg, nterm = 0;
		double prop = 0, q = 0, mag = 0, m2 = 0, s = 0;
		for (int64_t ch = 0; ch < cg; ch++)
			for (int64_t kh = 0; kh < w->dim[2]; kh++) {
				int64_t ih = window_pos(at, 0, c[2], kh, at->dilation[0], x->dim[2]);
				for (int64_t kw = 0; kw < w->dim[3] && ih >= 0; kw++) {
					int64_t iw = window_pos(at, 1, c[3], kw, at->dilation[1], x->dim[3]);
					if (iw < 0)
						continue;
					int64_t xi = ((c[0] * x->dim[1] + c0 + ch) * x->dim[2] + ih) *
						     x->dim[3] + iw;
					int64_t wi = ((c[1] * w->dim[1] + ch) * w->dim[2] + kh) *
						     w->dim[3] + kw;
					double vx = host_get(x, xi), vw = host_get(w, wi);
					double ex = err_at(ip, op->in[0], xi), ew = err_at(ip, op->in[1], wi);
					double t = scaled(vx, ew) + scaled(vw, ex) + ex * ew;
					prop += t;
					q += t * t;
					mag += fabs(vx * vw);
					m2 += vx * vw * vx * vw;
					s += vx * vw;
					nterm++;
				}
			}
		if (op->nin > 2) {   /* the bias is one more term */
			double vb = host_get(&ip->val[op->in[2]], c[1]);
			double t = err_at(ip, op->in[2], c[1]);
			prop += t;
			q += t * t;
			mag += fabs(vb);
			m2 += vb * vb;
			s += vb;
			nterm++;
		}
		double y = host_get(out, i);
		prop = spread(prop, q);
		e[i] = finish(out->dtype, s, y, prop + u * mag + reduce_err(out->dtype, nterm, mag, m2, s));
	}
}

static void bound_pool2d(Interp *ip, const Op *op, const HostTensor *out, double *e)
{
	const HostTensor *x = &ip->val[op->in[0]];
	const Attrs *at = op->attr;
	bool is_max = op->kind == OP_MAX_POOL2D;
	int64_t c[4];
	for (int64_t i = 0; i < out->n; i++) {
		coords_of(out, i, c);
		double prop = 0, q = 0, mag = 0, m2 = 0, s = 0;
		int64_t nterm = 0;
		for (int64_t kh = 0; kh < at->kernel[0]; kh++) {
			int64_t ih = window_pos(at, 0, c[2], kh, 1, x->dim[2]);
			for (int64_t kw = 0; kw < at->kernel[1] && ih >= 0; kw++) {
				int64_t iw = window_pos(at, 1, c[3], kw, 1, x->dim[3]);
				if (iw < 0)
					continue;
				int64_t xi = ((c[0] * x->dim[1] + c[1]) * x->dim[2] + ih) * x->dim[3] + iw;
				double v = host_get(x, xi), ev = err_at(ip, op->in[0], xi);
				prop = is_max ? fmax(prop, ev) : prop + ev;
				q += ev * ev;
				mag += fabs(v);
				m2 += v * v;
				s += v;
				nterm++;
			}
		}
		double y = host_get(out, i);
		if (is_max || !isfinite(y)) {
			e[i] = isfinite(y) ? prop : 0;
			continue;
		}
		double area = (double)at->kernel[0] * at->kernel[1];
		prop = spread(prop, q);
		e[i] = finish(out->dtype, s / area, y,
			      (prop + reduce_err(out->dtype, nterm, mag, m2, s)) / area +
			      kernel_err(out->dtype, 1, s / area));
	}
}

static void bound_gather(Interp *ip, const Op *op, const HostTensor *out, double *e)
{
	const HostTensor *x = &ip->val[op->in[0]], *idx = &ip->val[op->in[1]];
	int axis = op->attr->axis;
	int64_t xs[IR_MAX_RANK], c[IR_MAX_RANK];
	contiguous_strides(x, xs);
	for (int64_t i = 0; i < out->n; i++) {
		if (err_at(ip, op->in[1], i) > 0) {
			e[i] = INFINITY;
			continue;
		}
		coords_of(out, i, c);
		c[axis] = host_get_i64(idx, i);
		int64_t off = 0;
		for (int k = 0; k < x->rank; k++)
			off += c[k] * xs[k];
		e[i] = err_at(ip, op->in[0], off);
	}
}

/* Fill eout (f64, out's shape) with the error bound of op's result out. */
static void bound_op(Interp *ip, const Op *op, const HostTensor *out, HostTensor *eout)
{
	double *e = eout->data;
	switch (ir_ops[op->kind].family) {
	case FAM_BINARY: case FAM_SCALAR: case FAM_UNARY: case FAM_COMPARE:
	case FAM_SELECT: case FAM_CAST:
		bound_elementwise(ip, op, out, e);
		return;
	case FAM_VIEW: case FAM_JOIN:
		if (op->kind == OP_GATHER) {
			bound_gather(ip, op, out, e);
		} else {
			/* errors move with the data: the same view or cat, on the errors */
			Interp ie = *ip;
			ie.val = ip->err;
			if (op->kind == OP_CAT)
				run_cat(&ie, op, eout);
			else
				run_view(&ie, op, eout);
		}
		return;
	case FAM_REDUCE: bound_reduce(ip, op, out, e); return;
	case FAM_MATMUL: bound_matmul(ip, op, out, e); return;
	case FAM_MODULE:
		if (op->kind == OP_CONV2D)
			bound_conv2d(ip, op, out, e);
		else
			bound_pool2d(ip, op, out, e);
		return;
	case FAM_CONTROL: return;
	}
	die("bad op family");
}

/* ---- driver ---------------------------------------------------------------- */

static int run_op(Interp *ip, const Op *op, HostTensor *out)
{
	if (ir_op_is_elementwise(op->kind)) {
		run_elementwise(ip, op, out);
		return 0;
	}
	switch (ir_ops[op->kind].family) {
	case FAM_VIEW: run_view(ip, op, out); return 0;
	case FAM_REDUCE: run_reduce(ip, op, out); return 0;
	case FAM_MATMUL: run_matmul(ip, op, out); return 0;
	case FAM_JOIN:
		if (op->kind == OP_GATHER)
			return run_gather(ip, op, out);
		run_cat(ip, op, out);
		return 0;
	case FAM_MODULE:
		if (op->kind == OP_CONV2D)
			run_conv2d(ip, op, out);
		else
			run_pool2d(ip, op, out);
		return 0;
	case FAM_CONTROL: return 0;
	default: break;   /* the elementwise families, above */
	}
	die("bad op family");
}

int interp_check_input(const Graph *g, int i, const HostTensor *t, Diag *d)
{
	const Tensor *want = &g->tensors[g->inputs[i]];
	bool ok = t->dtype == want->dtype && t->rank == want->rank;
	for (int k = 0; ok && k < t->rank; k++)
		ok = t->dim[k] == want->dim[k];
	if (!ok) {
		char a[128], b[128];
		diag_set(d, "", 0, 0, "input '%s' needs %s, got %s", want->name,
			 host_shape_text(want->dtype, want->rank, want->dim, a, sizeof a),
			 host_shape_text(t->dtype, t->rank, t->dim, b, sizeof b));
		return -1;
	}
	return 0;
}

static void free_values(HostTensor *val, int n)
{
	for (int t = 0; t < n; t++)
		host_free(&val[t]);
	free(val);
}

/* Copy src into a fresh tensor *dst of the same dtype and shape. */
static int copy_tensor(HostTensor *dst, const HostTensor *src, Diag *d)
{
	if (host_alloc(dst, src->dtype, src->rank, src->dim, d))
		return -1;
	memcpy(dst->data, src->data, (size_t)src->n * (size_t)ir_dtype_size(src->dtype));
	return 0;
}

int interp_run(const Graph *g, const HostTensor *inputs, HostTensor *outputs, Diag *d)
{
	return interp_run_bounds(g, inputs, outputs, NULL, d);
}

int interp_run_bounds(const Graph *g, const HostTensor *inputs, HostTensor *outputs,
		      HostTensor *bounds, Diag *d)
{
	return interp_run_bounds_tf32(g, inputs, outputs, bounds, false, d);
}

int interp_run_bounds_tf32(const Graph *g, const HostTensor *inputs, HostTensor *outputs,
			   HostTensor *bounds, bool tf32, Diag *d)
{
	for (int i = 0; i < g->ninputs; i++)
		if (interp_check_input(g, i, &inputs[i], d))
			return -1;
	size_t nt = (size_t)g->ntensors + 1;
	Interp ip = {g, xcalloc(nt, sizeof(HostTensor)), d, -1,
		     bounds ? xcalloc(nt, sizeof(HostTensor)) : NULL, tf32};
	int *last = xmalloc(nt * sizeof *last);
	for (int t = 0; t < g->ntensors; t++)
		last[t] = g->tensors[t].is_output ? g->nops : -1;
	for (int i = 0; i < g->nops; i++)
		for (int k = 0; k < g->ops[i].nin; k++)
			if (last[g->ops[i].in[k]] < i)
				last[g->ops[i].in[k]] = i;
	int rc = 0;
	for (int i = 0; i < g->ninputs && !rc; i++) {
		HostTensor *v = &ip.val[g->inputs[i]];
		rc = copy_tensor(v, &inputs[i], d);
		if (!rc && bounds)   /* inputs are exact: host_alloc zero-fills */
			rc = host_alloc(&ip.err[g->inputs[i]], DT_F64, v->rank, v->dim, d);
	}
	for (int i = 0; i < g->nops && !rc; i++) {
		const Op *op = &g->ops[i];
		if (op->kind == OP_SYNC)
			continue;
		ip.opi = i;
		const Tensor *t = &g->tensors[op->out[0]];
		HostTensor *out = &ip.val[op->out[0]];
		rc = host_alloc(out, t->dtype, t->rank, t->dim, d);
		if (!rc)
			rc = run_op(&ip, op, out);
		if (!rc && bounds) {
			HostTensor *e = &ip.err[op->out[0]];
			rc = host_alloc(e, DT_F64, t->rank, t->dim, d);
			if (!rc)
				bound_op(&ip, op, out, e);
		}
		for (int k = 0; k < op->nin && !rc; k++)
			if (last[op->in[k]] == i && g->tensors[op->in[k]].producer >= 0) {
				host_free(&ip.val[op->in[k]]);
				if (bounds)
					host_free(&ip.err[op->in[k]]);
			}
	}
	for (int i = 0; i < g->noutputs && !rc; i++) {
		rc = copy_tensor(&outputs[i], &ip.val[g->outputs[i]], d);
		if (!rc && bounds && (rc = copy_tensor(&bounds[i], &ip.err[g->outputs[i]], d)))
			host_free(&outputs[i]);
		if (rc)
			while (i-- > 0) {
				host_free(&outputs[i]);
				if (bounds)
					host_free(&bounds[i]);
			}
	}
	free(last);
	free_values(ip.val, g->ntensors);
	if (bounds)
		free_values(ip.err, g->ntensors);
	return rc;
}

/* a + b, saturating */
static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t interp_tensor_bytes(const Tensor *t, DType dtype)
{
	uint64_t n = (uint64_t)ir_dtype_size(dtype);
	for (int k = 0; k < t->rank; k++)
		if (t->dim[k] < 0 || __builtin_mul_overflow(n, (uint64_t)t->dim[k], &n))
			return UINT64_MAX;
	return n;
}

uint64_t interp_peak_bytes(const Graph *g, bool bounds)
{
	size_t nt = (size_t)g->ntensors + 1;
	uint64_t *size = xcalloc(nt, sizeof *size);
	int *last = xmalloc(nt * sizeof *last);
	for (int t = 0; t < g->ntensors; t++) {
		const Tensor *x = &g->tensors[t];
		size[t] = add_sat(interp_tensor_bytes(x, x->dtype),
				  bounds ? interp_tensor_bytes(x, DT_F64) : 0);
		last[t] = x->is_output ? g->nops : -1;
	}
	for (int i = 0; i < g->nops; i++)
		for (int k = 0; k < g->ops[i].nin; k++)
			if (last[g->ops[i].in[k]] < i)
				last[g->ops[i].in[k]] = i;
	/* as interp_run_bounds_tf32 allocates and frees: its copies of the inputs, each
	 * op's value as it runs, values freed after their last reader, then the copies
	 * of the outputs handed back */
	uint64_t live = 0, peak = 0;
	for (int i = 0; i < g->ninputs; i++)
		live = add_sat(live, size[g->inputs[i]]);
	for (int i = 0; i < g->nops; i++) {
		const Op *op = &g->ops[i];
		if (op->kind == OP_SYNC)
			continue;
		live = add_sat(live, size[op->out[0]]);
		peak = live > peak ? live : peak;
		for (int k = 0; k < op->nin; k++) {
			int t = op->in[k];
			if (last[t] == i && g->tensors[t].producer >= 0 && live != UINT64_MAX) {
				live -= size[t];
				size[t] = 0;   /* freed once, however often it is read */
			}
		}
	}
	for (int i = 0; i < g->noutputs; i++)
		live = add_sat(live, size[g->outputs[i]]);
	free(size);
	free(last);
	return live > peak ? live : peak;
}
