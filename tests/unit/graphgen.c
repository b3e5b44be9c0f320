/* graphgen.c: fusec-graph/1 documents built in code, and seeded random graphs.
 *
 * The builder half writes JSON fragments as ops are added and glues them into one
 * document at the end. The random half keeps what it knows about every tensor
 * (dtype, shape, a bound on its magnitude, whether it is exact) and only emits ops
 * that are valid and whose results the interpreter and the kernels must agree on:
 * - magnitudes stay below about 1000 (a product that could grow past that becomes a
 *   tanh), so f16 never overflows in one backend and not the other;
 * - in f16/bf16 graphs the ops that jump (comparisons, floor/round, sign, argmax)
 *   only read exact tensors (inputs, views, selects, exact arithmetic of them): the
 *   kernels keep fused intermediates in f32 registers while the interpreter rounds
 *   every op to f16, so a computed value on a threshold could land either side;
 * - divisors of float divisions are |x| + 1; integer divisors may be 0 (both sides
 *   define x / 0 = 0).
 * Shapes are one main shape per graph (rank 2 or 3, at most 4096 elements) and its
 * broadcast variants (some dims 1); reductions keep their axis with size 1, so they
 * broadcast back; views come as round trips (permute, op, inverse permute) or expand
 * and slice. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../host/host.h"
#include "graphgen.h"

/* ---- builder --------------------------------------------------------------- */

void gen_init(GenGraph *g)
{
	memset(g, 0, sizeof *g);
	g->arena = arena_new();
}

void gen_free(GenGraph *g)
{
	buf_free(&g->inputs);
	buf_free(&g->ops);
	buf_free(&g->outputs);
	free(g->in);
	arena_free(g->arena);
	memset(g, 0, sizeof *g);
}

static void shape_json(Buf *b, int rank, const int64_t *dim)
{
	buf_putc(b, '[');
	for (int i = 0; i < rank; i++)
		buf_printf(b, "%s%lld", i ? ", " : "", (long long)dim[i]);
	buf_putc(b, ']');
}

const char *gen_input(GenGraph *g, DType dt, int rank, const int64_t *dim, double lo,
		      double hi)
{
	const char *name = arena_printf(g->arena, "x%d", g->ninputs);
	if (g->ninputs == g->cap_in) {
		g->cap_in = g->cap_in ? 2 * g->cap_in : 16;
		g->in = xrealloc(g->in, sizeof *g->in * (size_t)g->cap_in);
	}
	g->in[g->ninputs] = (GenInput){name, dt, lo, hi, false, 0};
	buf_printf(&g->inputs, "%s\n  \"%s\": {\"dtype\": \"%s\", \"shape\": ",
		   g->ninputs ? "," : "", name, ir_dtype_name(dt));
	shape_json(&g->inputs, rank, dim);
	buf_putc(&g->inputs, '}');
	g->ninputs++;
	return name;
}

const char *gen_op(GenGraph *g, const char *op, int nin, const char *const *in,
		   const char *attrs)
{
	const char *name = arena_printf(g->arena, "t%d", g->ntemps++);
	buf_printf(&g->ops, "%s\n  {\"op\": \"%s\", \"in\": [", g->nops ? "," : "", op);
	for (int i = 0; i < nin; i++)
		buf_printf(&g->ops, "%s\"%s\"", i ? ", " : "", in[i]);
	buf_printf(&g->ops, "], \"out\": \"%s\"%s%s}", name, attrs ? ", " : "",
		   attrs ? attrs : "");
	g->nops++;
	return name;
}

void gen_sync(GenGraph *g)
{
	buf_printf(&g->ops, "%s\n  {\"op\": \"sync\"}", g->nops ? "," : "");
	g->nops++;
}

void gen_output(GenGraph *g, const char *tensor)
{
	buf_printf(&g->outputs, "%s\"%s\"", g->noutputs ? ", " : "", tensor);
	g->noutputs++;
}

const GenInput *gen_find_input(const GenGraph *g, const char *name)
{
	for (int i = 0; i < g->ninputs; i++)
		if (!strcmp(g->in[i].name, name))
			return &g->in[i];
	return NULL;
}

char *gen_text(const GenGraph *g, const char *name)
{
	Buf b = {0};
	buf_printf(&b, "{\"format\": \"fusec-graph/1\", \"name\": \"%s\",\n\"inputs\": {", name);
	if (g->inputs.len)
		buf_write(&b, g->inputs.data, g->inputs.len);
	buf_puts(&b, "},\n\"ops\": [");
	if (g->ops.len)
		buf_write(&b, g->ops.data, g->ops.len);
	buf_puts(&b, "],\n\"outputs\": [");
	if (g->outputs.len)
		buf_write(&b, g->outputs.data, g->outputs.len);
	buf_puts(&b, "]}\n");
	return b.data;
}

/* ---- random graphs --------------------------------------------------------- */

enum { RG_BOUND = 1000 };

typedef struct {
	const char *name;
	DType dt;
	int rank;
	int64_t dim[IR_MAX_RANK];
	double bound;          /* |value| <= bound (ints: not tracked past wrapping) */
	bool exact;            /* safe to compare, floor or argmax (see the top) */
} RgTensor;

typedef struct {
	GenGraph *g;
	HostRng r;
	RgTensor *t;
	int n, cap;
	int rank;
	int64_t dim[IR_MAX_RANK];  /* the main shape */
	DType main;
} Rg;

static int rg_int(Rg *rg, int n)
{
	return (int)(host_rng_next(&rg->r) % (uint64_t)n);
}

static bool rg_chance(Rg *rg, int percent)
{
	return rg_int(rg, 100) < percent;
}

static RgTensor *rg_add(Rg *rg, const char *name, DType dt, int rank, const int64_t *dim,
			double bound, bool exact)
{
	if (rg->n == rg->cap) {
		rg->cap = rg->cap ? 2 * rg->cap : 32;
		rg->t = xrealloc(rg->t, sizeof *rg->t * (size_t)rg->cap);
	}
	RgTensor *t = &rg->t[rg->n++];
	memset(t, 0, sizeof *t);
	t->name = name;
	t->dt = dt;
	t->rank = rank;
	memcpy(t->dim, dim, sizeof *dim * (size_t)rank);
	t->bound = bound;
	t->exact = exact || !ir_dtype_is_float(dt) || !(dt == DT_F16 || dt == DT_BF16);
	return t;
}

/* rg->t may move on rg_add: ops copy what they need first. */
static RgTensor rg_get(Rg *rg, int i)
{
	return rg->t[i];
}

static bool broadcasts(const RgTensor *a, const RgTensor *b)
{
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->dim[i] != b->dim[i] && a->dim[i] != 1 && b->dim[i] != 1)
			return false;
	return true;
}

static void broadcast_dims(const RgTensor *a, const RgTensor *b, int64_t *out)
{
	for (int i = 0; i < a->rank; i++)
		out[i] = a->dim[i] == 1 ? b->dim[i] : a->dim[i];
}

/* A random tensor index satisfying the filter; -1 when none. */
typedef bool (*RgFilter)(const RgTensor *t, const RgTensor *ref);

static int rg_pick(Rg *rg, RgFilter f, const RgTensor *ref)
{
	int n = 0;
	for (int i = 0; i < rg->n; i++)
		n += f(&rg->t[i], ref);
	if (!n)
		return -1;
	int k = rg_int(rg, n);
	for (int i = 0; i < rg->n; i++)
		if (f(&rg->t[i], ref) && k-- == 0)
			return i;
	return -1;
}

static bool f_numeric(const RgTensor *t, const RgTensor *ref)
{
	return t->dt != DT_BOOL && t->rank == ref->rank;
}

static bool f_numeric_bc(const RgTensor *t, const RgTensor *ref)
{
	return t->dt != DT_BOOL && broadcasts(t, ref);
}

static bool f_mate(const RgTensor *t, const RgTensor *ref)
{
	return t->dt == ref->dt && broadcasts(t, ref);
}

static bool f_exact_numeric(const RgTensor *t, const RgTensor *ref)
{
	return f_numeric(t, ref) && t->exact;
}

static const char *fmt_scalar(Rg *rg, const char *key, double v)
{
	return arena_printf(rg->g->arena, "\"%s\": %g", key, v);
}

/* A new input of dtype dt: the main shape with some dims 1 when bcast. */
static int rg_input(Rg *rg, DType dt, bool bcast)
{
	int64_t dim[IR_MAX_RANK];
	for (int i = 0; i < rg->rank; i++)
		dim[i] = bcast && rg_chance(rg, 40) ? 1 : rg->dim[i];
	double lo, hi;
	host_default_range(dt, &lo, &hi);
	const char *name = gen_input(rg->g, dt, rg->rank, dim, lo, hi);
	rg_add(rg, name, dt, rg->rank, dim, dt == DT_U8 ? 9 : 5, true);
	return rg->n - 1;
}

static int rg_op(Rg *rg, const char *op, int nin, const int *in, const char *attrs, DType dt,
		 const int64_t *dim, double bound, bool exact)
{
	const char *names[3];
	for (int i = 0; i < nin; i++)
		names[i] = rg->t[in[i]].name;
	const char *out = gen_op(rg->g, op, nin, names, attrs);
	rg_add(rg, out, dt, rg->rank, dim, bound, exact);
	return rg->n - 1;
}

static int rg_unary(Rg *rg, const char *op, int x, double bound, bool exact)
{
	RgTensor t = rg_get(rg, x);
	return rg_op(rg, op, 1, &x, NULL, t.dt, t.dim, bound, exact);
}

/* An elementwise unary op on a numeric tensor. */
static int gen_unary(Rg *rg)
{
	RgTensor ref = {.rank = rg->rank};
	int x = rg_pick(rg, f_numeric, &ref);
	RgTensor t = rg_get(rg, x);
	if (!ir_dtype_is_float(t.dt)) {
		static const char *const iops[] = {"abs", "neg", "relu"};
		const char *op = iops[rg_int(rg, t.dt == DT_U8 ? 1 : 3)];
		return rg_unary(rg, op, x, t.bound, true);
	}
	static const char *const bounded[] = {"tanh", "sigmoid", "sin", "cos", "erf"};
	static const char *const keep[] = {"abs", "neg", "relu", "silu", "gelu"};
	int k;
	switch (rg_int(rg, 5)) {
	case 0: case 1:
		return rg_unary(rg, bounded[rg_int(rg, 5)], x, 1, false);
	case 2:
		k = rg_int(rg, 5);
		return rg_unary(rg, keep[k], x, t.bound + 1, t.exact && k < 3);
	case 3:
		if (t.bound <= 4)
			return rg_unary(rg, "exp", x, 60, false);
		return rg_unary(rg, "sqrt", rg_unary(rg, "abs", x, t.bound, t.exact), 32, false);
	default:
		if (!t.exact)
			return rg_unary(rg, "tanh", x, 1, false);
		static const char *const jumps[] = {"floor", "ceil", "round", "trunc", "sign"};
		return rg_unary(rg, jumps[rg_int(rg, 5)], x, t.bound + 1, true);
	}
}

static int gen_binary(Rg *rg)
{
	RgTensor ref = {.rank = rg->rank};
	int a = rg_pick(rg, f_numeric, &ref);
	RgTensor ta = rg_get(rg, a);
	int b;
	if (rg_chance(rg, 25)) {
		int64_t save[IR_MAX_RANK];
		memcpy(save, rg->dim, sizeof save);
		for (int i = 0; i < rg->rank; i++)
			if (ta.dim[i] != rg->dim[i])
				rg->dim[i] = ta.dim[i] == 1 ? rg->dim[i] : ta.dim[i];
		b = rg_input(rg, ta.dt, true);
		memcpy(rg->dim, save, sizeof save);
	} else {
		b = rg_pick(rg, f_mate, &ta);
	}
	RgTensor tb = rg_get(rg, b);
	int64_t dim[IR_MAX_RANK];
	broadcast_dims(&ta, &tb, dim);
	int in[2] = {a, b};
	bool fl = ir_dtype_is_float(ta.dt);
	bool exact = ta.exact && tb.exact;
	switch (rg_int(rg, 7)) {
	case 0:
		return rg_op(rg, "add", 2, in, NULL, ta.dt, dim, ta.bound + tb.bound, exact);
	case 1:
		if (ta.dt == DT_U8)
			return rg_op(rg, "max", 2, in, NULL, ta.dt, dim, ta.bound, exact);
		return rg_op(rg, "sub", 2, in, NULL, ta.dt, dim, ta.bound + tb.bound, exact);
	case 2:
		if (fl && ta.bound * tb.bound > RG_BOUND)
			return rg_unary(rg, "tanh", a, 1, false);
		return rg_op(rg, "mul", 2, in, NULL, ta.dt, dim, ta.bound * tb.bound, false);
	case 3:
		return rg_op(rg, "max", 2, in, NULL, ta.dt, dim,
			     ta.bound > tb.bound ? ta.bound : tb.bound, exact);
	case 4:
		return rg_op(rg, "min", 2, in, NULL, ta.dt, dim,
			     ta.bound > tb.bound ? ta.bound : tb.bound, exact);
	default:
		if (fl) {
			/* a / (|b| + 1) */
			int ab = rg_unary(rg, "abs", b, tb.bound, tb.exact);
			RgTensor t = rg_get(rg, ab);
			int den = rg_op(rg, "add_scalar", 1, &ab, fmt_scalar(rg, "scalar", 1), t.dt,
					t.dim, t.bound + 1, false);
			int q[2] = {a, den};
			return rg_op(rg, "div", 2, q, NULL, ta.dt, dim, ta.bound, false);
		}
		return rg_op(rg, rg_chance(rg, 50) ? "div" : "rem", 2, in, NULL, ta.dt, dim,
			     ta.bound + tb.bound, true);
	}
}

static int gen_scalar(Rg *rg)
{
	RgTensor ref = {.rank = rg->rank};
	int x = rg_pick(rg, f_numeric, &ref);
	RgTensor t = rg_get(rg, x);
	bool fl = ir_dtype_is_float(t.dt);
	static const double fs[] = {0.5, -1.5, 2, 0.25, 3};
	static const double is[] = {2, 3, -1, 1, 4};
	double s = fl ? fs[rg_int(rg, 5)] : is[rg_int(rg, 5)];
	if (t.dt == DT_U8 && s < 0)
		s = 2;
	double as = s < 0 ? -s : s;
	switch (rg_int(rg, 5)) {
	case 0:
		return rg_op(rg, "add_scalar", 1, &x, fmt_scalar(rg, "scalar", s), t.dt, t.dim,
			     t.bound + as, t.exact && s == 2);
	case 1:
		return rg_op(rg, "sub_scalar", 1, &x, fmt_scalar(rg, "scalar", s), t.dt, t.dim,
			     t.bound + as, t.exact && s == 2);
	case 2:
		if (fl && t.bound * as > RG_BOUND)
			return rg_unary(rg, "tanh", x, 1, false);
		return rg_op(rg, "mul_scalar", 1, &x, fmt_scalar(rg, "scalar", s), t.dt, t.dim,
			     t.bound * as, t.exact && (s == 2 || s == 0.5 || s == 0.25));
	case 3: {
		const char *at = arena_printf(rg->g->arena, "\"min\": %g, \"max\": %g",
					      fl ? -0.5 : 0.0, fl ? 0.75 : 3.0);
		return rg_op(rg, "clamp", 1, &x, at, t.dt, t.dim, t.bound, t.exact);
	}
	default:
		if (fl && t.bound / as > RG_BOUND)
			return rg_unary(rg, "tanh", x, 1, false);
		if (fl)
			return rg_op(rg, "div_scalar", 1, &x, fmt_scalar(rg, "scalar", s), t.dt,
				     t.dim, t.bound / as, false);
		return rg_op(rg, "rem_scalar", 1, &x, fmt_scalar(rg, "scalar", s), t.dt, t.dim,
			     as, true);
	}
}

/* A comparison (of exact operands) and often a where that uses it. */
static int gen_select(Rg *rg)
{
	static const char *const cmp[] = {"eq", "ne", "lt", "le", "gt", "ge"};
	RgTensor ref = {.rank = rg->rank};
	int a = rg_pick(rg, f_exact_numeric, &ref);
	if (a < 0)
		return gen_unary(rg);
	RgTensor ta = rg_get(rg, a);
	int m;
	int64_t dim[IR_MAX_RANK];
	if (rg_chance(rg, 50)) {
		const char *op = arena_printf(rg->g->arena, "%s_scalar", cmp[rg_int(rg, 6)]);
		double s = ir_dtype_is_float(ta.dt) ? 0.25 : 1;
		m = rg_op(rg, op, 1, &a, fmt_scalar(rg, "scalar", s), DT_BOOL, ta.dim, 1, true);
	} else {
		int b = -1;
		for (int tries = 0; tries < 4 && b < 0; tries++) {
			int c = rg_pick(rg, f_mate, &ta);
			if (rg->t[c].exact)
				b = c;
		}
		if (b < 0)
			b = a;
		RgTensor tb = rg_get(rg, b);
		broadcast_dims(&ta, &tb, dim);
		int in[2] = {a, b};
		m = rg_op(rg, cmp[rg_int(rg, 6)], 2, in, NULL, DT_BOOL, dim, 1, true);
	}
	if (rg_chance(rg, 20))
		return m;
	if (rg_chance(rg, 25)) {
		int x = rg_pick(rg, f_numeric, &ref);
		RgTensor tx = rg_get(rg, x);
		RgTensor tm = rg_get(rg, m);
		bool fits = true;
		for (int i = 0; i < tx.rank; i++)
			fits &= tm.dim[i] == tx.dim[i] || tm.dim[i] == 1;
		if (fits) {
			int in[2] = {x, m};
			return rg_op(rg, "mask_fill", 2, in,
				     fmt_scalar(rg, "scalar", ir_dtype_is_float(tx.dt) ? -0.5 : 7),
				     tx.dt, tx.dim, tx.bound + 7, tx.exact);
		}
	}
	RgTensor tm = rg_get(rg, m);
	int x = rg_pick(rg, f_numeric_bc, &tm);
	if (x < 0)
		return m;
	RgTensor tx = rg_get(rg, x);
	int y = rg_pick(rg, f_mate, &tx);
	RgTensor ty = rg_get(rg, y);
	if (!broadcasts(&tm, &ty))
		y = x;
	ty = rg_get(rg, y);
	int64_t d1[IR_MAX_RANK], d2[IR_MAX_RANK];
	broadcast_dims(&tm, &tx, d1);
	RgTensor t1 = tm;
	memcpy(t1.dim, d1, sizeof d1);
	broadcast_dims(&t1, &ty, d2);
	int in[3] = {m, x, y};
	return rg_op(rg, "where", 3, in, NULL, tx.dt, d2,
		     tx.bound > ty.bound ? tx.bound : ty.bound, tx.exact && ty.exact);
}

static int gen_cast(Rg *rg)
{
	RgTensor ref = {.rank = rg->rank};
	int x = rg_pick(rg, f_numeric, &ref);
	RgTensor t = rg_get(rg, x);
	DType to;
	if (ir_dtype_is_float(t.dt)) {
		static const DType fl[] = {DT_F32, DT_F16, DT_BF16, DT_F64, DT_I32, DT_I64, DT_I8};
		to = fl[rg_int(rg, 7)];
	} else {
		if (t.bound > RG_BOUND)
			return gen_unary(rg);
		static const DType in[] = {DT_F32, DT_F16, DT_I64, DT_I32, DT_I8, DT_F64};
		to = in[rg_int(rg, 6)];
	}
	if (to == t.dt)
		to = t.dt == DT_F32 ? DT_F64 : DT_F32;
	if (ir_dtype_is_float(t.dt) && !ir_dtype_is_float(to)) {
		if (!t.exact)
			return gen_unary(rg);
		/* spread the values so the integers are not all 0 */
		x = rg_op(rg, "mul_scalar", 1, &x, fmt_scalar(rg, "scalar", 4), t.dt, t.dim,
			  t.bound * 4, true);
		t = rg_get(rg, x);
	}
	const char *at = arena_printf(rg->g->arena, "\"dtype\": \"%s\"", ir_dtype_name(to));
	bool exact = t.exact;
	if ((to == DT_F16 || to == DT_BF16) && t.dt != to)
		exact = t.dt == DT_F16 || t.dt == DT_BF16 ? false : !ir_dtype_is_float(t.dt);
	return rg_op(rg, "cast", 1, &x, at, to, t.dim, t.bound, exact);
}

static int gen_reduce(Rg *rg)
{
	RgTensor ref = {.rank = rg->rank};
	int x = rg_pick(rg, f_numeric, &ref);
	RgTensor t = rg_get(rg, x);
	int axis = rg_int(rg, t.rank);
	int64_t dim[IR_MAX_RANK];
	memcpy(dim, t.dim, sizeof dim);
	dim[axis] = 1;
	const char *at = arena_printf(rg->g->arena, "\"axis\": %d", axis);
	bool fl = ir_dtype_is_float(t.dt);
	switch (rg_int(rg, 4)) {
	case 0:
		if (fl && t.bound * (double)t.dim[axis] > RG_BOUND)
			return rg_op(rg, "mean", 1, &x, at, t.dt, dim, t.bound, false);
		return rg_op(rg, "sum", 1, &x, at, t.dt, dim, t.bound * (double)t.dim[axis],
			     !fl);
	case 1:
		return rg_op(rg, "mean", 1, &x, at, t.dt, dim, t.bound, !fl);
	case 2:
		return rg_op(rg, "max_dim", 1, &x, at, t.dt, dim, t.bound, t.exact);
	default:
		if (!t.exact)
			return rg_op(rg, "max_dim", 1, &x, at, t.dt, dim, t.bound, false);
		return rg_op(rg, rg_chance(rg, 50) ? "argmax" : "argmin", 1, &x, at, DT_I64, dim,
			     (double)t.dim[axis], true);
	}
}

/* A view: permute / swap_dims / reshape round trip around a unary op, expand of a
 * broadcast tensor, or a slice. */
static int gen_view(Rg *rg)
{
	RgTensor ref = {.rank = rg->rank};
	int x = rg_pick(rg, f_numeric, &ref);
	RgTensor t = rg_get(rg, x);
	int r = t.rank;
	int64_t dim[IR_MAX_RANK];
	switch (rg_int(rg, 5)) {
	case 0: case 1: {
		int perm[IR_MAX_RANK], inv[IR_MAX_RANK];
		for (int i = 0; i < r; i++)
			perm[i] = i;
		for (int i = r - 1; i > 0; i--) {
			int j = rg_int(rg, i + 1);
			int s = perm[i];
			perm[i] = perm[j];
			perm[j] = s;
		}
		if (perm[0] == 0 && r > 1) {
			perm[0] = perm[1];
			perm[1] = 0;
		}
		Buf a = {0}, b = {0};
		for (int i = 0; i < r; i++) {
			inv[perm[i]] = i;
			dim[i] = t.dim[perm[i]];
		}
		bool swap = rg_chance(rg, 50);
		if (swap) {
			buf_printf(&a, "\"dims\": [0, %d]", r - 1);
			buf_printf(&b, "\"dims\": [0, %d]", r - 1);
			memcpy(dim, t.dim, sizeof dim);
			dim[0] = t.dim[r - 1];
			dim[r - 1] = t.dim[0];
		} else {
			buf_puts(&a, "\"axes\": [");
			buf_puts(&b, "\"axes\": [");
			for (int i = 0; i < r; i++) {
				buf_printf(&a, "%s%d", i ? ", " : "", perm[i]);
				buf_printf(&b, "%s%d", i ? ", " : "", inv[i]);
			}
			buf_putc(&a, ']');
			buf_putc(&b, ']');
		}
		const char *op = swap ? "swap_dims" : "permute";
		int v = rg_op(rg, op, 1, &x, arena_strdup(rg->g->arena, a.data), t.dt, dim,
			      t.bound, t.exact);
		RgTensor tv = rg_get(rg, v);
		int u;
		if (ir_dtype_is_float(t.dt))
			u = rg_op(rg, "mul_scalar", 1, &v, fmt_scalar(rg, "scalar", 0.5), tv.dt,
				  tv.dim, tv.bound, tv.exact);
		else
			u = rg_op(rg, "add_scalar", 1, &v, fmt_scalar(rg, "scalar", 1), tv.dt,
				  tv.dim, tv.bound + 1, true);
		int w = rg_op(rg, op, 1, &u, arena_strdup(rg->g->arena, b.data), t.dt, t.dim,
			      rg->t[u].bound, rg->t[u].exact);
		buf_free(&a);
		buf_free(&b);
		return w;
	}
	case 2: {
		/* reshape to the reversed dims and back */
		for (int i = 0; i < r; i++)
			dim[i] = t.dim[r - 1 - i];
		Buf a = {0}, b = {0};
		buf_puts(&a, "\"shape\": ");
		shape_json(&a, r, dim);
		buf_puts(&b, "\"shape\": ");
		shape_json(&b, r, t.dim);
		int v = rg_op(rg, "reshape", 1, &x, arena_strdup(rg->g->arena, a.data), t.dt, dim,
			      t.bound, t.exact);
		int u = rg_unary(rg, ir_dtype_is_float(t.dt) ? "neg" : "abs", v, t.bound, t.exact);
		int w = rg_op(rg, "reshape", 1, &u, arena_strdup(rg->g->arena, b.data), t.dt,
			      t.dim, t.bound, t.exact);
		buf_free(&a);
		buf_free(&b);
		return w;
	}
	case 3: {
		bool any = false, fits = true;
		for (int i = 0; i < r; i++) {
			any |= t.dim[i] != rg->dim[i];
			fits &= t.dim[i] == rg->dim[i] || t.dim[i] == 1;
		}
		if (!any || !fits)
			return gen_unary(rg);
		Buf a = {0};
		buf_puts(&a, "\"shape\": ");
		shape_json(&a, r, rg->dim);
		int v = rg_op(rg, "expand", 1, &x, arena_strdup(rg->g->arena, a.data), t.dt,
			      rg->dim, t.bound, t.exact);
		buf_free(&a);
		return v;
	}
	default: {
		Buf a = {0};
		buf_puts(&a, "\"ranges\": [");
		for (int i = 0; i < r; i++) {
			int64_t lo = t.dim[i] > 2 ? rg_int(rg, (int)(t.dim[i] / 2)) : 0;
			int64_t hi = lo + 1 + rg_int(rg, (int)(t.dim[i] - lo));
			dim[i] = hi - lo;
			buf_printf(&a, "%s[%lld, %lld]", i ? ", " : "", (long long)lo, (long long)hi);
		}
		buf_putc(&a, ']');
		int v = rg_op(rg, "slice", 1, &x, arena_strdup(rg->g->arena, a.data), t.dt, dim,
			      t.bound, t.exact);
		buf_free(&a);
		return v;
	}
	}
}

void gen_random(GenGraph *g, uint64_t seed)
{
	Rg rg = {.g = g};
	host_rng_init(&rg.r, seed, 0x6772617068ULL);
	static const DType mains[] = {DT_F32, DT_F32, DT_F32, DT_F16, DT_BF16, DT_F64, DT_I32,
				      DT_I64};
	rg.main = mains[rg_int(&rg, 8)];
	rg.rank = 2 + rg_int(&rg, 2);
	int64_t n = 1;
	for (int i = 0; i < rg.rank; i++) {
		rg.dim[i] = 2 + rg_int(&rg, rg.rank == 2 ? 40 : 12);
		n *= rg.dim[i];
	}
	while (n > 4096) {
		n /= rg.dim[0];
		rg.dim[0] = 2;
		n *= 2;
	}
	int ninputs = 2 + rg_int(&rg, 2);
	for (int i = 0; i < ninputs; i++)
		rg_input(&rg, rg.main, i > 0);
	int target = 5 + rg_int(&rg, 26);
	int first = rg.n;
	while (g->nops < target) {
		int k = rg_int(&rg, 100);
		if (k < 20)
			gen_unary(&rg);
		else if (k < 42)
			gen_binary(&rg);
		else if (k < 56)
			gen_scalar(&rg);
		else if (k < 70)
			gen_select(&rg);
		else if (k < 78)
			gen_cast(&rg);
		else if (k < 89)
			gen_reduce(&rg);
		else if (k < 96)
			gen_view(&rg);
		else if (g->nops > 0)
			gen_sync(g);
	}
	/* outputs: the last result and a few others, distinct */
	int nout = 1 + rg_int(&rg, 3);
	bool *used = xcalloc((size_t)rg.n, sizeof *used);
	used[rg.n - 1] = true;
	gen_output(g, rg.t[rg.n - 1].name);
	for (int i = 1; i < nout && rg.n - first > 1; i++) {
		int k = first + rg_int(&rg, rg.n - first);
		if (used[k])
			continue;
		used[k] = true;
		gen_output(g, rg.t[k].name);
	}
	free(used);
	free(rg.t);
}
