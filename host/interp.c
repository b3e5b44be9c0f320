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

#include "interp_impl.h"

static const double sqrt2 = 1.41421356237309504880;


void interp_contiguous_strides(const HostTensor *t, int64_t *st)
{
	int64_t s = 1;
	for (int k = t->rank - 1; k >= 0; k--) {
		st[k] = s;
		s *= t->dim[k];
	}
}

/* Strides of x read as a tensor of out's shape (equal ranks): size-1 dims repeat. */
void interp_broadcast_strides(const HostTensor *x, int64_t *st)
{
	interp_contiguous_strides(x, st);
	for (int k = 0; k < x->rank; k++)
		if (x->dim[k] == 1)
			st[k] = 0;
}

/* The offset of element i of a tensor shaped like out, read through strides st. */
int64_t interp_offset_of(const HostTensor *out, int64_t i, const int64_t *st)
{
	int64_t off = 0;
	for (int k = out->rank - 1; k >= 0; k--) {
		off += i % out->dim[k] * st[k];
		i /= out->dim[k];
	}
	return off;
}

void interp_coords_of(const HostTensor *t, int64_t i, int64_t *c)
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

double interp_attr_scalar(const Op *op)
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
double interp_float_elem(const Op *op, DType vt, double a, double b)
{
	double s = host_round(vt, interp_attr_scalar(op));
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
	int64_t s = host_to_int(vt, interp_attr_scalar(op));
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
void interp_operands(const Interp *ip, const Op *op, const HostTensor **x,
		     int64_t (*st)[IR_MAX_RANK])
{
	for (int k = 0; k < op->nin; k++) {
		x[k] = &ip->val[op->in[k]];
		interp_broadcast_strides(x[k], st[k]);
	}
}

static void run_elementwise(Interp *ip, const Op *op, HostTensor *out)
{
	const HostTensor *x[3];
	int64_t st[3][IR_MAX_RANK];
	interp_operands(ip, op, x, st);
	DType vt = ir_op_value_dtype(ip->g, op);
	bool fl = ir_dtype_is_float(vt);
	for (int64_t i = 0; i < out->n; i++) {
		int64_t off[3];
		for (int k = 0; k < op->nin; k++)
			off[k] = interp_offset_of(out, i, st[k]);
		if (op->kind == OP_WHERE || op->kind == OP_MASK_FILL) {
			bool m = op->kind == OP_WHERE ? host_get_i64(x[0], off[0]) != 0
						      : host_get_i64(x[1], off[1]) != 0;
			const HostTensor *src = op->kind == OP_WHERE ? (m ? x[1] : x[2]) : x[0];
			int64_t so = op->kind == OP_WHERE ? (m ? off[1] : off[2]) : off[0];
			if (op->kind == OP_MASK_FILL && m) {
				if (fl)
					host_set(out, i, interp_attr_scalar(op));
				else
					host_set_i64(out, i, host_to_int(vt, interp_attr_scalar(op)));
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
			host_set(out, i, interp_float_elem(op, vt, a, b));
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
		       (const char *)x->data + (size_t)(base + interp_offset_of(out, i, st)) * sz, sz);
}

void interp_run_view(Interp *ip, const Op *op, HostTensor *out)
{
	const HostTensor *x = &ip->val[op->in[0]];
	int64_t xs[IR_MAX_RANK], st[IR_MAX_RANK] = {0}, base = 0;
	interp_contiguous_strides(x, xs);
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
		interp_broadcast_strides(x, st);
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

void interp_axis_split(const HostTensor *x, int axis, int64_t *outer, int64_t *len,
		       int64_t *inner)
{
	*outer = 1, *len = x->dim[axis], *inner = 1;
	for (int k = 0; k < axis; k++)
		*outer *= x->dim[k];
	for (int k = axis + 1; k < x->rank; k++)
		*inner *= x->dim[k];
}

static void run_reduce(Interp *ip, const Op *op, HostTensor *out)
{
	const HostTensor *x = &ip->val[op->in[0]];
	int axis = op->attr->axis;
	int64_t outer, len, inner;
	interp_axis_split(x, axis, &outer, &len, &inner);
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

void interp_matmul_shape(const HostTensor *a, const HostTensor *b, const HostTensor *out,
			 MatmulShape *s)
{
	int r = out->rank;
	s->m = a->dim[r - 2], s->k = a->dim[r - 1], s->n = b->dim[r - 1];
	s->nbatch = out->n / (s->m * s->n);
	interp_broadcast_strides(a, s->as);
	interp_broadcast_strides(b, s->bs);
}

void interp_matmul_at(const MatmulShape *s, const HostTensor *out, int64_t o, int64_t *a0,
		      int64_t *b0)
{
	int64_t rest = o / (s->m * s->n), i = o / s->n % s->m, j = o % s->n;
	*a0 = i * s->k, *b0 = j;
	for (int k = out->rank - 3; k >= 0; k--) {
		int64_t c = rest % out->dim[k];
		rest /= out->dim[k];
		*a0 += c * s->as[k];
		*b0 += c * s->bs[k];
	}
}

static void run_matmul(Interp *ip, const Op *op, HostTensor *out)
{
	const HostTensor *a = &ip->val[op->in[0]], *b = &ip->val[op->in[1]];
	MatmulShape sh;
	interp_matmul_shape(a, b, out, &sh);
	int64_t kk = sh.k, n = sh.n;
	bool fl = ir_dtype_is_float(out->dtype);
	for (int64_t oi = 0; oi < out->n; oi++) {
		int64_t a0, b0;
		interp_matmul_at(&sh, out, oi, &a0, &b0);
		double acc = 0;
		uint64_t iacc = 0;
		for (int64_t p = 0; p < kk; p++) {
			int64_t ai = a0 + p, bi = b0 + p * n;
			if (fl)
				acc += host_get(a, ai) * host_get(b, bi);
			else
				iacc += (uint64_t)host_get_i64(a, ai) *
					(uint64_t)host_get_i64(b, bi);
		}
		if (fl)
			host_set(out, oi, acc);
		else
			host_set_i64(out, oi, (int64_t)iacc);
	}
}

void interp_attention_shape(const Interp *ip, const Op *op, const HostTensor *out,
			    AttShape *s)
{
	for (int k = 0; k < op->nin; k++) {
		s->t[k] = &ip->val[op->in[k]];
		interp_broadcast_strides(s->t[k], s->st[k]);
	}
	int r = out->rank;
	s->m = out->dim[r - 2], s->e = out->dim[r - 1];
	s->d = s->t[0]->dim[r - 1], s->n = s->t[1]->dim[r - 1];
}

int64_t interp_attention_row(const AttShape *s, const Op *op, const HostTensor *out,
			     int64_t row, int64_t *base)
{
	int64_t rest = row / s->m;
	for (int w = 0; w < op->nin; w++)
		base[w] = 0;
	for (int k = out->rank - 3; k >= 0; k--) {
		int64_t c = rest % out->dim[k];
		rest /= out->dim[k];
		for (int w = 0; w < op->nin; w++) {
			/* a grouped dim (grouped-query attention): index c / (O / T) */
			int64_t t = s->t[w]->dim[k];
			base[w] += (t > 1 && t != out->dim[k] ? c / (out->dim[k] / t) : c) * s->st[w][k];
		}
	}
	return row % s->m;
}

/* attention(q, kt, v[, bias | mask]) (ir/ops.def), row by row in f64: the scores
 * s_j = scalar * q_i . kt_j + bias_ij (or min where mask_ij; -inf where causal and
 * j > i + causal), their max m, e_j = exp(s_j - m), and out_i = sum_j e_j v_j /
 * sum_j e_j (0 under zero_nan where that sum is NaN). */
static void run_attention(Interp *ip, const Op *op, HostTensor *out)
{
	AttShape sh;
	interp_attention_shape(ip, op, out, &sh);
	const HostTensor *const *t = sh.t;
	int64_t (*st)[IR_MAX_RANK] = sh.st;
	int r = out->rank;
	int64_t e = sh.e, d = sh.d, n = sh.n;
	double scale = op->attr->scalar;
	double *s = xmalloc((size_t)n * sizeof *s), *acc = xmalloc((size_t)e * sizeof *acc);
	for (int64_t row = 0; row < out->n / e; row++) {
		int64_t base[4], i = interp_attention_row(&sh, op, out, row, base);
		double mx = -INFINITY;
		for (int64_t j = 0; j < n; j++) {
			double dot = 0;
			for (int64_t p = 0; p < d; p++)
				dot += host_get(t[0], base[0] + i * st[0][r - 2] + p * st[0][r - 1]) *
				       host_get(t[1], base[1] + p * st[1][r - 2] + j * st[1][r - 1]);
			s[j] = scale * dot;
			if (op->nin == 4) {
				double b = host_get(t[3], base[3] + i * st[3][r - 2] + j * st[3][r - 1]);
				if (t[3]->dtype == DT_BOOL)
					s[j] = b != 0 ? op->attr->min : s[j];
				else
					s[j] += b;
			}
			if (interp_att_masked(op, i, j))
				s[j] = -INFINITY;
			mx = nan_max(mx, s[j]);
		}
		double sum = 0;
		for (int64_t c = 0; c < e; c++)
			acc[c] = 0;
		for (int64_t j = 0; j < n; j++) {
			double p = exp(s[j] - mx);
			sum += p;
			for (int64_t c = 0; c < e; c++)
				acc[c] += p * host_get(t[2], base[2] + j * st[2][r - 2] +
						       c * st[2][r - 1]);
		}
		/* zero_nan: a row whose weights are NaN (then all of them are: the sum
		 * is) gives 0, as where(isnan(p), 0, p) after the softmax does */
		bool zero = op->attr->zero_nan && isnan(sum);
		for (int64_t c = 0; c < e; c++)
			host_set(out, row * e + c, zero ? 0 : acc[c] / sum);
	}
	free(s);
	free(acc);
}

void interp_run_cat(Interp *ip, const Op *op, HostTensor *out)
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
	interp_contiguous_strides(x, xs);
	size_t sz = (size_t)ir_dtype_size(x->dtype);
	for (int64_t i = 0; i < out->n; i++) {
		int64_t v = host_get_i64(idx, i);
		if (v < 0 || v >= x->dim[axis])
			return fail(ip, "index %lld is out of range for a dim of size %lld",
				    (long long)v, (long long)x->dim[axis]);
		interp_coords_of(out, i, c);
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

/* The flat index of element (n, ch, h, w) of t, a conv's or pool's tensor held in
 * at's layout (channels last: [N][H][W][C]). */
int64_t interp_layout_index(const Attrs *at, const HostTensor *t, int64_t n, int64_t ch,
			    int64_t h, int64_t w)
{
	if (at->layout == LAYOUT_NHWC)
		return ((n * t->dim[1] + h) * t->dim[2] + w) * t->dim[3] + ch;
	return ((n * t->dim[1] + ch) * t->dim[2] + h) * t->dim[3] + w;
}

void interp_layout_coords(const Attrs *at, const int64_t *c, int64_t *l)
{
	bool last = at->layout == LAYOUT_NHWC;
	l[0] = c[0];
	l[1] = c[last ? 3 : 1];
	l[2] = c[last ? 1 : 2];
	l[3] = c[last ? 2 : 3];
}

/* The input row (or column) that window position k of output position o reads
 * along spatial axis ax; -1 when it falls in the padding. */
int64_t interp_window_pos(const Attrs *at, int ax, int64_t o, int64_t k, int dilation,
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
	bool last = at->layout == LAYOUT_NHWC;
	int64_t cg = w->dim[last ? 3 : 1], c0 = o / per_group * cg;
	int64_t kh_n = w->dim[last ? 1 : 2], kw_n = w->dim[last ? 2 : 3];
	int64_t xh = x->dim[last ? 1 : 2], xw = x->dim[last ? 2 : 3];
	double acc = 0;
	for (int64_t c = 0; c < cg; c++)
		for (int64_t kh = 0; kh < kh_n; kh++) {
			int64_t ih = interp_window_pos(at, 0, oh, kh, at->dilation[0], xh);
			for (int64_t kw = 0; kw < kw_n && ih >= 0; kw++) {
				int64_t iw = interp_window_pos(at, 1, ow, kw, at->dilation[1], xw);
				if (iw >= 0)
					acc += host_get(x, interp_layout_index(at, x, n, c0 + c, ih, iw)) *
					       host_get(w, interp_layout_index(at, w, o, c, kh, kw));
			}
		}
	return acc;
}

static void run_conv2d(Interp *ip, const Op *op, HostTensor *out)
{
	const HostTensor *x = &ip->val[op->in[0]], *w = &ip->val[op->in[1]];
	const HostTensor *bias = op->nin > 2 ? &ip->val[op->in[2]] : NULL;
	int64_t c[4], l[4], per_group = w->dim[0] / op->attr->groups;
	for (int64_t i = 0; i < out->n; i++) {
		interp_coords_of(out, i, c);
		interp_layout_coords(op->attr, c, l);
		double acc = conv2d_at(op, x, w, l[0], l[1], l[2], l[3], per_group);
		host_set(out, i, acc + (bias ? host_get(bias, l[1]) : 0));
	}
}

int64_t interp_pool_at(const Attrs *at, const HostTensor *x, const int64_t *c, int64_t kh,
		       int64_t kw)
{
	bool last = at->layout == LAYOUT_NHWC;
	int64_t l[4];
	interp_layout_coords(at, c, l);
	int64_t ih = interp_window_pos(at, 0, l[2], kh, 1, x->dim[last ? 1 : 2]);
	int64_t iw = ih < 0 ? -1 : interp_window_pos(at, 1, l[3], kw, 1, x->dim[last ? 2 : 3]);
	return iw < 0 ? -1 : interp_layout_index(at, x, l[0], l[1], ih, iw);
}

/* max_pool2d skips the padding; avg_pool2d counts it in the divisor. */
static void run_pool2d(Interp *ip, const Op *op, HostTensor *out)
{
	const HostTensor *x = &ip->val[op->in[0]];
	const Attrs *at = op->attr;
	bool is_max = op->kind == OP_MAX_POOL2D;
	int64_t c[4];
	for (int64_t i = 0; i < out->n; i++) {
		interp_coords_of(out, i, c);
		double acc = is_max ? -INFINITY : 0;
		for (int64_t kh = 0; kh < at->kernel[0]; kh++)
			for (int64_t kw = 0; kw < at->kernel[1]; kw++) {
				int64_t xi = interp_pool_at(at, x, c, kh, kw);
				if (xi < 0)
					continue;
				double v = host_get(x, xi);
				acc = is_max ? nan_max(acc, v) : acc + v;
			}
		if (!is_max)
			acc /= (double)at->kernel[0] * at->kernel[1];
		host_set(out, i, acc);
	}
}

/* ---- one op ---------------------------------------------------------------- */

int interp_run_op(Interp *ip, const Op *op, HostTensor *out)
{
	if (ir_op_is_elementwise(op->kind)) {
		run_elementwise(ip, op, out);
		return 0;
	}
	switch (ir_ops[op->kind].family) {
	case FAM_VIEW: interp_run_view(ip, op, out); return 0;
	case FAM_REDUCE: run_reduce(ip, op, out); return 0;
	case FAM_MATMUL:
		if (op->kind == OP_ATTENTION)
			run_attention(ip, op, out);
		else
			run_matmul(ip, op, out);
		return 0;
	case FAM_JOIN:
		if (op->kind == OP_GATHER)
			return run_gather(ip, op, out);
		interp_run_cat(ip, op, out);
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
