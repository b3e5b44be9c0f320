/* attention.c: `--attention fuse` (the default), the ops of a scaled dot-product
 * attention rewritten as one attention op (ir/ops.def), before the search.
 *
 * The chain it takes is what exporters write for softmax(q kt / c + bias) v, the
 * softmax spelled out along the last dim:
 *
 *     q' = mul_scalar(q, a) | div_scalar(q, a)        (optional; kt' the same: the
 *                                                       factors join the scale)
 *     s0 = matmul(q', kt')
 *     s1 = mul_scalar(s0, c) | div_scalar(s0, c)      (optional)
 *     x  = add(s1, bias) | add(bias, s1)               (optional)
 *        | where(mask, fill, s1)                       (a bool mask, a constant fill)
 *     mx = max_dim(x, last);  d = sub(x, mx);  e = exp(d)
 *     l  = sum(e, last);      p = div(e, l)
 *     p' = cast(...cast(p))                            (optional: through wider floats
 *                                                       back to p's dtype, exact)
 *     y  = matmul(p', v)
 *
 * and it becomes y = attention(q, kt, v[, bias | mask]; scalar c or 1/c, min fill).
 * A constant mask or bias that only hides the keys past a diagonal (key j of row i
 * where j > i + c, c >= 0: a causal mask) becomes attribute causal = c instead, and
 * the operand is dropped (causal_band): the kernel then walks only the keys a row
 * reaches.
 * The views in
 * front of q, kt and v stay as they are (the kernel reads them in place, as a
 * matmul does). Every intermediate must be read by the chain alone and be no
 * output, all of one float dtype and one stream with no sync between; where one
 * condition fails the ops stay as they are, and the reason is kept for `explain`. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* The chain found behind y = matmul(p, v): its ops, and the operands. */
typedef struct {
	int ops[32], nops;
	int q, kt, v, bias;      /* bias: a float bias or a bool mask; -1: none */
	double scale, fill;      /* fill: the masked scores */
	int guard[2];            /* where(is_nan(p), 0, p): the where, the is_nan; -1 */
	int kt_perm, kt_src;     /* ungroup: kt's permute, to read kt_src instead; -1 */
} Chain;

typedef struct {
	Graph *g;
	int *readers;            /* per tensor: reads by ops (an op reading it twice: 2) */
	AttentionInfo *info;
	AttentionMode mode;
} Aw;

static const Op *producer(const Aw *w, int t)
{
	int p = w->g->tensors[t].producer;
	return p < 0 ? NULL : &w->g->ops[p];
}

static bool last_axis(const Aw *w, const Op *op)
{
	return op->attr && op->attr->axis == w->g->tensors[op->in[0]].rank - 1;
}

static void why(Aw *w, const Op *y, const char *fmt, const char *detail)
{
	AttentionInfo *in = w->info;
	if (in->nwhy >= ATTENTION_MAX_WHY)
		return;
	char ref[128], reason[160];
	snprintf(reason, sizeof reason, fmt, detail);
	ir_op_ref(w->g, (int)(y - w->g->ops), ref, sizeof ref);
	snprintf(in->why[in->nwhy++], sizeof in->why[0], "%s: %s", ref, reason);
}

/* Element k of constant t as a double (bool: 0 or 1); false for integer dtypes. */
static bool element(const Tensor *t, int64_t k, double *v)
{
	const char *p = t->data;
	uint16_t h = 0;
	if (t->dtype == DT_BF16 || t->dtype == DT_F16)
		memcpy(&h, p + 2 * k, 2);
	switch (t->dtype) {
	case DT_BOOL: *v = p[k] != 0; return true;
	case DT_F32: { float f; memcpy(&f, p + 4 * k, 4); *v = f; return true; }
	case DT_F64: memcpy(v, p + 8 * k, 8); return true;
	case DT_BF16: {
		uint32_t u = (uint32_t)h << 16;
		float f;
		memcpy(&f, &u, 4);
		*v = f;
		return true;
	}
	case DT_F16: {
		int e = h >> 10 & 0x1f, m = h & 0x3ff;
		double x = e == 0x1f ? (m ? NAN : INFINITY) :
			   e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
		*v = h & 0x8000 ? -x : x;
		return true;
	}
	default: return false;
	}
}

/* The value of a constant all of whose elements are one value (a float dtype);
 * false for anything else. */
static bool constant_value(const Tensor *t, double *v)
{
	if (!t->data || !ir_dtype_is_float(t->dtype))
		return false;
	int64_t n = 1;
	for (int d = 0; d < t->rank; d++)
		n *= t->dim[d];
	for (int64_t i = 0; i < n; i++) {
		double x;
		element(t, i, &x);
		if (i > 0 && !(x == *v || (x != x && *v != *v)))
			return false;
		*v = x;
	}
	return n > 0;
}

/* Scores at or below this are taken as -inf: the weight exp(s - max) of such a
 * score is 0 in f32 unless every other score of its row is within about 104 of it
 * (docs/graph-format.md, attention). */
#define MASKED_AT -1e30

/* Whether the constant mask (or bias) of an attention with scores [.., m, n] hides
 * exactly the keys j > i + c of every row i, for one c >= 0, and nothing else: then
 * c, or -1 where it hides nothing at all (the operand then does nothing); -2 where
 * it is not such a mask. A mask hides where it is true (its fill at most
 * MASKED_AT); a bias where it is at most MASKED_AT, and must be 0 elsewhere. */
static int64_t causal_band(const Tensor *t, bool mask, double fill, int64_t m, int64_t n)
{
	int r = t->rank;
	if (!t->data || (mask && !(fill <= MASKED_AT)) || r < 2 || t->dim[r - 2] != m ||
	    t->dim[r - 1] != n || m < 1 || n < 1)
		return -2;
	int64_t lead = 1;
	for (int d = 0; d < r - 2; d++)
		lead *= t->dim[d];
	/* c from the first row: its first hidden key is c + 1 */
	int64_t c = n - 1;
	for (int64_t j = 0; j < n; j++) {
		double v;
		if (!element(t, j, &v))
			return -2;
		if (mask ? v != 0 : v <= MASKED_AT) {
			c = j - 1;
			break;
		}
	}
	if (c < 0)
		return -2;   /* row 0 would hide every key */
	bool hides = false;
	for (int64_t b = 0; b < lead; b++)
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++) {
				double v;
				element(t, (b * m + i) * n + j, &v);
				bool hid = j > i + c;
				hides |= hid;
				if (mask ? (v != 0) != hid : hid ? !(v <= MASKED_AT) : v != 0)
					return -2;
			}
	return hides ? c : -1;
}

/* Whether tensor t, made inside the chain, is read by it alone: want reads, and no
 * graph output. */
static bool private_to(const Aw *w, int t, int want)
{
	return w->readers[t] == want && !w->g->tensors[t].is_output;
}

/* Whether tensor *t is where(is_nan(p), 0, p), read once: the guard exporters put
 * after a softmax (transformers' Llama), for rows whose weights are NaN (no key
 * visible, or a NaN score). *t becomes p, and the two ops are kept in c->guard;
 * the attention op then carries zero_nan, which gives such a row 0. */
static bool nan_guard(const Aw *w, int *t, Chain *c)
{
	const Op *wh = producer(w, *t);
	if (c->guard[0] >= 0 || !wh || wh->kind != OP_WHERE || !private_to(w, *t, 1))
		return false;
	const Op *isn = producer(w, wh->in[0]);
	const Tensor *pt = &w->g->tensors[wh->in[2]], *wt = &w->g->tensors[*t];
	double z;
	if (pt->rank != wt->rank || memcmp(pt->dim, wt->dim, sizeof *pt->dim * (size_t)pt->rank))
		return false;   /* the where would widen p */
	if (!isn || isn->kind != OP_IS_NAN || isn->in[0] != wh->in[2] ||
	    !private_to(w, wh->in[0], 1) || !private_to(w, wh->in[2], 2) ||
	    !constant_value(&w->g->tensors[wh->in[1]], &z) || z != 0)
		return false;
	c->guard[0] = (int)(wh - w->g->ops);
	c->guard[1] = (int)(isn - w->g->ops);
	*t = wh->in[2];
	return true;
}

/* The grouped-query expand of k or v: x = reshape(expand(reshape(t))), t of
 * [..., KVH, S, D] given a unit dim after KVH, expanded to G and merged into
 * [..., KVH * G, S, D], each intermediate read once. Returns t (the attention reads
 * it as a grouped operand, ir/infer.c) and adds the three ops to c; -1 where x is
 * not that. */
static int grouped(const Aw *w, int x, Chain *c, int *gdim)
{
	const Graph *g = w->g;
	const Op *r2 = producer(w, x);
	if (!r2 || r2->kind != OP_RESHAPE || !private_to(w, x, 1) || !private_to(w, r2->in[0], 1))
		return -1;
	const Op *ex = producer(w, r2->in[0]);
	if (!ex || ex->kind != OP_EXPAND || !private_to(w, ex->in[0], 1))
		return -1;
	const Op *r1 = producer(w, ex->in[0]);
	if (!r1 || r1->kind != OP_RESHAPE)
		return -1;
	const Tensor *t = &g->tensors[r1->in[0]], *u = &g->tensors[ex->in[0]];
	const Tensor *e = &g->tensors[ex->out[0]], *xt = &g->tensors[x];
	int r = t->rank;
	if (r < 3 || u->rank != r + 1 || e->rank != r + 1 || xt->rank != r)
		return -1;
	int j = -1;   /* the grouped dim of t */
	for (int d = 0; d < r - 2 && j < 0; d++)
		if (u->dim[d + 1] == 1 && e->dim[d + 1] > 1)
			j = d;
	if (j < 0)
		return -1;
	for (int d = 0; d < r; d++) {
		int ud = d <= j ? d : d + 1;
		if (u->dim[ud] != t->dim[d] || e->dim[ud] != t->dim[d])
			return -1;
		if (xt->dim[d] != (d == j ? t->dim[d] * e->dim[j + 1] : t->dim[d]))
			return -1;
	}
	if (c->nops + 3 > (int)(sizeof c->ops / sizeof c->ops[0]))
		return -1;
	*gdim = j;
	c->ops[c->nops++] = (int)(r2 - g->ops);
	c->ops[c->nops++] = (int)(ex - g->ops);
	c->ops[c->nops++] = (int)(r1 - g->ops);
	return r1->in[0];
}

/* An operand of the scores' matmul scaled on its own (the exporters' SDPA writes
 * q * sqrt(c) and kt * sqrt(c)): *t becomes the unscaled tensor, the op joins the
 * chain, and the factor is returned for the attention's scale; 1 where *t is not
 * such a product read by the matmul alone. */
static double unscale(const Aw *w, int *t, Chain *c)
{
	const Op *p = producer(w, *t);
	if (!p || (p->kind != OP_MUL_SCALAR && p->kind != OP_DIV_SCALAR) || !private_to(w, *t, 1))
		return 1;
	c->ops[c->nops++] = (int)(p - w->g->ops);
	*t = p->in[0];
	return p->kind == OP_MUL_SCALAR ? p->attr->scalar : 1 / p->attr->scalar;
}

/* The chain behind the matmul y, or false (with a reason when y reads a softmax). */
static bool match(Aw *w, const Op *y, Chain *c)
{
	Graph *g = w->g;
	memset(c, 0, sizeof *c);
	c->bias = -1;
	c->scale = 1;
	c->guard[0] = c->guard[1] = -1;
	/* casts that widen and come back (Llama's softmax output to f32 and back to
	 * bf16) change nothing: taken into the chain; so does a NaN guard on either
	 * side of them (nan_guard) */
	int pin = y->in[0], ncast = 0, casts[3];
	DType pt = g->tensors[pin].dtype;
	int preads = nan_guard(w, &pin, c) ? 2 : 1;   /* the reads of pin */
	for (const Op *cs = producer(w, pin); cs && cs->kind == OP_CAST && ncast < 3 &&
	     private_to(w, pin, preads); cs = producer(w, pin)) {
		casts[ncast++] = (int)(cs - g->ops);
		pin = cs->in[0];
		preads = 1;
	}
	if (nan_guard(w, &pin, c))
		preads = 2;
	/* back at p's dtype, every dtype between holding p's values exactly */
	bool exact = g->tensors[pin].dtype == pt;
	for (int k = 0; k < ncast; k++) {
		DType d = g->tensors[g->ops[casts[k]].out[0]].dtype;
		exact &= d == pt || (d == DT_F64 && ir_dtype_is_float(pt)) ||
			 (d == DT_F32 && (pt == DT_BF16 || pt == DT_F16));
	}
	if (!exact) {
		const Op *d = producer(w, pin);
		if (d && d->kind == OP_DIV)
			why(w, y, "the softmax's weights are rounded by a %s before it", "cast");
		return false;
	}
	const Op *div = producer(w, pin);
	if (!div || div->kind != OP_DIV)
		return false;
	const Op *ex = producer(w, div->in[0]), *sum = producer(w, div->in[1]);
	if (!ex || ex->kind != OP_EXP || !sum || sum->kind != OP_SUM || sum->in[0] != div->in[0] ||
	    !last_axis(w, sum))
		return false;
	const Op *sub = producer(w, ex->in[0]);
	if (!sub || sub->kind != OP_SUB)
		return false;
	const Op *mx = producer(w, sub->in[1]);
	if (!mx || mx->kind != OP_MAX_DIM || mx->in[0] != sub->in[0] || !last_axis(w, mx))
		return false;
	/* from here on y reads a softmax: say why it is not taken */
	int x = sub->in[0];
	const Op *sc = producer(w, x);
	c->nops = 0;
	if (sc && sc->kind == OP_WHERE) {
		/* where(mask, fill, scores): a bool mask, a constant fill */
		const Tensor *fill = &g->tensors[sc->in[1]];
		if (!constant_value(fill, &c->fill)) {
			why(w, y, "the mask's fill is not %s", "one constant value");
			return false;
		}
		if (!private_to(w, sc->in[2], 1)) {
			why(w, y, "the scores before the mask are read %s", "elsewhere");
			return false;
		}
		c->bias = sc->in[0];
		c->ops[c->nops++] = (int)(sc - g->ops);
		sc = producer(w, sc->in[2]);
	} else if (sc && sc->kind == OP_ADD) {
		const Op *a0 = producer(w, sc->in[0]), *a1 = producer(w, sc->in[1]);
		bool left = a0 && (a0->kind == OP_MATMUL || a0->kind == OP_MUL_SCALAR ||
				   a0->kind == OP_DIV_SCALAR);
		bool right = a1 && (a1->kind == OP_MATMUL || a1->kind == OP_MUL_SCALAR ||
				    a1->kind == OP_DIV_SCALAR);
		int s = left ? 0 : right ? 1 : -1;
		if (s < 0) {
			why(w, y, "the scores %s are neither a matmul nor a scaled matmul",
			    "plus a bias");
			return false;
		}
		c->bias = sc->in[1 - s];
		if (!private_to(w, sc->in[s], 1)) {
			why(w, y, "the scores before the bias are read %s", "elsewhere");
			return false;
		}
		c->ops[c->nops++] = (int)(sc - g->ops);
		sc = producer(w, sc->in[s]);
	}
	if (sc && (sc->kind == OP_MUL_SCALAR || sc->kind == OP_DIV_SCALAR)) {
		double k = sc->attr->scalar;
		c->scale = sc->kind == OP_MUL_SCALAR ? k : 1 / k;
		if (!private_to(w, sc->in[0], 1)) {
			why(w, y, "the unscaled scores are read %s", "elsewhere");
			return false;
		}
		c->ops[c->nops++] = (int)(sc - g->ops);
		sc = producer(w, sc->in[0]);
	}
	if (!sc || sc->kind != OP_MATMUL) {
		why(w, y, "the softmax does not read scores made by a matmul%s",
		    c->bias >= 0 ? " (and a bias)" : "");
		return false;
	}
	c->ops[c->nops++] = (int)(sc - g->ops);
	c->q = sc->in[0];
	c->kt = sc->in[1];
	c->v = y->in[1];
	if (c->q != c->kt) {
		c->scale *= unscale(w, &c->q, c);
		c->scale *= unscale(w, &c->kt, c);
	}
	/* grouped-query attention: v, and kt through its transpose, read before their
	 * expand (not with --attention keep's kernels: only where it fuses) */
	c->kt_perm = c->kt_src = -1;
	if (!g->sym) {
		int j, gv = grouped(w, c->v, c, &j);
		if (gv >= 0)
			c->v = gv;
		const Op *pk = producer(w, c->kt);
		if (pk && pk->kind == OP_PERMUTE && private_to(w, c->kt, 1) &&
		    private_to(w, pk->in[0], 1)) {
			/* the transpose keeps the grouped dim among the batch dims */
			int nops = c->nops, gk = grouped(w, pk->in[0], c, &j);
			int r = g->tensors[c->kt].rank;
			for (int d = r - 2; d < r && gk >= 0; d++)
				if (pk->attr->axes[d] == j) {
					gk = -1;
					c->nops = nops;
				}
			if (gk >= 0) {
				c->kt_perm = (int)(pk - g->ops);
				c->kt_src = gk;
			}
		}
	}
	const Op *rest[] = {mx, sub, ex, sum, div};
	for (int i = 0; i < 5; i++)
		c->ops[c->nops++] = (int)(rest[i] - g->ops);
	for (int k = 0; k < ncast; k++)
		c->ops[c->nops++] = casts[k];
	for (int k = 0; k < 2 && c->guard[0] >= 0; k++)
		c->ops[c->nops++] = c->guard[k];
	/* the softmax's tensors: x read by max_dim and sub, e by sum and div, p by the
	 * next op (the guard's two) */
	if (!private_to(w, x, 2) || !private_to(w, mx->out[0], 1) ||
	    !private_to(w, sub->out[0], 1) || !private_to(w, ex->out[0], 2) ||
	    !private_to(w, sum->out[0], 1) || !private_to(w, div->out[0], preads)) {
		why(w, y, "a tensor of the softmax is read %s or is an output", "outside it");
		return false;
	}
	const Tensor *tq = &g->tensors[c->q];
	int ins[4] = {c->q, c->kt, c->v, c->bias};
	for (int k = 0; k < 4; k++) {
		if (ins[k] < 0)
			continue;
		const Tensor *t = &g->tensors[ins[k]];
		bool mask = k == 3 && t->dtype == DT_BOOL;
		if ((t->dtype != tq->dtype && !mask) || t->rank != tq->rank) {
			why(w, y, "its operands differ in dtype or rank%s", "");
			return false;
		}
	}
	if (!ir_dtype_is_float(tq->dtype)) {
		why(w, y, "its dtype is not a float%s", "");
		return false;
	}
	/* the default: only what the flash kernel runs (ATTENTION_AUTO) */
	bool half = tq->dtype == DT_F16 || tq->dtype == DT_BF16 ||
		    (w->mode == ATTENTION_AUTO_HALF && tq->dtype == DT_F32);
	int r = tq->rank;
	int64_t hd = tq->dim[r - 1], vd = g->tensors[c->v].dim[r - 1];
	if (w->mode == ATTENTION_AUTO_TF32 && tq->dtype == DT_F32) {
		if (hd > 64 || vd > 64) {
			why(w, y, "its head dims pass 64, past the tf32 kernel's on every arch%s: "
			    "it runs as matmul, softmax, matmul (--attention fuse fuses it anyway)",
			    "");
			return false;
		}
		half = true;
	}
	if (w->mode != ATTENTION_FUSE && !half) {
		why(w, y, "%s attention has no fused kernel yet (f16 and bf16 do): it runs as "
		    "matmul, softmax, matmul (--attention fuse fuses it anyway), or in tf32 "
		    "under --allow-tf32", ir_dtype_name(tq->dtype));
		return false;
	}
	if (w->mode != ATTENTION_FUSE && (hd > 128 || vd > 128)) {
		why(w, y, "its head dims pass 128%s, past the fused kernel's: it runs as matmul, "
		    "softmax, matmul (--attention fuse fuses it anyway)", "");
		return false;
	}
	/* one stream, no sync between the first op and y */
	int first = (int)(y - g->ops);
	for (int i = 0; i < c->nops; i++) {
		if (g->ops[c->ops[i]].stream != y->stream) {
			why(w, y, "its ops run on %s streams", "several");
			return false;
		}
		if (c->ops[i] < first)
			first = c->ops[i];
	}
	for (int i = first; i < (int)(y - g->ops); i++)
		if (g->ops[i].kind == OP_SYNC) {
			why(w, y, "a sync lies %s its ops", "between");
			return false;
		}
	return true;
}

/* Keep the ops not dropped and the tensors something still uses, renumbered in
 * order (the graph's inputs stay, constants only when read or outputs); drop may be
 * NULL (every op stays). */
void pass_compact(Graph *g, const bool *drop)
{
	Arena *a = g->arena;
	Op *ops = ARENA_NEW(a, Op, g->nops + 1);
	int nops = 0;
	for (int i = 0; i < g->nops; i++)
		if (!drop || !drop[i])
			ops[nops++] = g->ops[i];
	bool *used = ARENA_NEW(a, bool, g->ntensors + 1);
	int *map = ARENA_NEW(a, int, g->ntensors + 1);
	for (int i = 0; i < nops; i++) {
		for (int k = 0; k < ops[i].nin; k++)
			used[ops[i].in[k]] = true;
		for (int k = 0; k < ops[i].nout; k++)
			used[ops[i].out[k]] = true;
	}
	for (int i = 0; i < g->noutputs; i++)
		used[g->outputs[i]] = true;
	for (int i = 0; i < g->ninputs; i++)
		if (!g->tensors[g->inputs[i]].data)
			used[g->inputs[i]] = true;
	Tensor *nt = ARENA_NEW(a, Tensor, g->ntensors + 1);
	int n = 0;
	for (int t = 0; t < g->ntensors; t++) {
		map[t] = -1;
		if (used[t]) {
			map[t] = n;
			nt[n] = g->tensors[t];
			nt[n++].producer = -1;
		}
	}
	for (int i = 0; i < nops; i++) {
		for (int k = 0; k < ops[i].nin; k++)
			ops[i].in[k] = map[ops[i].in[k]];
		for (int k = 0; k < ops[i].nout; k++) {
			ops[i].out[k] = map[ops[i].out[k]];
			nt[ops[i].out[k]].producer = i;
		}
	}
	int nin = 0;
	for (int i = 0; i < g->ninputs; i++)
		if (used[g->inputs[i]])
			g->inputs[nin++] = map[g->inputs[i]];
	for (int i = 0; i < g->noutputs; i++)
		g->outputs[i] = map[g->outputs[i]];
	g->ninputs = nin;
	g->tensors = nt;
	g->ntensors = n;
	g->ops = ops;
	g->nops = nops;
}

int pass_attention(Graph *g, AttentionMode mode, AttentionInfo *info)
{
	memset(info, 0, sizeof *info);
	if (mode == ATTENTION_KEEP)
		return 0;
	Aw w = {.g = g, .info = info, .mode = mode};
	w.readers = ARENA_NEW(g->arena, int, g->ntensors + 1);
	for (int i = 0; i < g->nops; i++)
		for (int k = 0; k < g->ops[i].nin; k++)
			w.readers[g->ops[i].in[k]]++;
	bool *drop = ARENA_NEW(g->arena, bool, g->nops + 1);
	for (int i = 0; i < g->nops; i++) {
		Op *y = &g->ops[i];
		Chain c;
		if (y->kind != OP_MATMUL || !match(&w, y, &c))
			continue;
		bool taken = false;
		for (int k = 0; k < c.nops; k++)
			taken |= drop[c.ops[k]];
		if (taken)
			continue;
		for (int k = 0; k < c.nops; k++)
			drop[c.ops[k]] = true;
		Attrs *at = ARENA_NEW(g->arena, Attrs, 1);
		at->has = A_SCALAR;
		at->scalar = c.scale;
		if (c.guard[0] >= 0) {
			at->has |= A_ZERO_NAN;
			at->zero_nan = true;
		}
		if (c.bias >= 0 && g->tensors[c.bias].dtype == DT_BOOL) {
			at->has |= A_MIN;
			at->min = c.fill;
		}
		if (c.bias >= 0 && !g->sym) {
			const Tensor *tb = &g->tensors[c.bias];
			int r = tb->rank;
			int64_t band = causal_band(tb, tb->dtype == DT_BOOL, c.fill,
						   g->tensors[c.q].dim[r - 2],
						   g->tensors[c.kt].dim[r - 1]);
			if (band >= 0) {
				at->has = (at->has & ~(unsigned)A_MIN) | A_CAUSAL;
				at->causal = band + 1;
				info->ncausal++;
			}
			if (band >= -1)
				c.bias = -1;
		}
		if (c.kt_perm >= 0) {
			/* kt's transpose reads the ungrouped k: its result's grouped dim
			 * shrinks to k's */
			Op *pk = &g->ops[c.kt_perm];
			int *pin = ARENA_NEW(g->arena, int, 1);
			pin[0] = c.kt_src;
			pk->in = pin;
			pk->in_status = NULL;
			const Tensor *src = &g->tensors[c.kt_src];
			Tensor *kt = &g->tensors[pk->out[0]];
			for (int d = 0; d < kt->rank; d++)
				kt->dim[d] = src->dim[pk->attr->axes[d]];
		}
		int nin = c.bias >= 0 ? 4 : 3;
		int *in = ARENA_NEW(g->arena, int, nin);
		in[0] = c.q, in[1] = c.kt, in[2] = c.v;
		if (nin == 4)
			in[3] = c.bias;
		y->kind = OP_ATTENTION;
		y->nin = nin;
		y->in = in;
		y->in_status = NULL;
		y->attr = at;
		info->nfused++;
	}
	if (!info->nfused)
		return 0;
	pass_compact(g, drop);
	ir_finish(g);
	return 0;
}

void pass_attention_summary(const AttentionInfo *info, Buf *out)
{
	if (info->nfused)
		buf_printf(out, "attention: %d fused (--attention keep leaves them apart)\n",
			   info->nfused);
	if (info->ncausal)
		buf_printf(out, "attention: %d of them causal: a constant mask hid the keys past "
			   "a diagonal; each row walks only the keys it sees\n", info->ncausal);
	for (int i = 0; i < info->nwhy; i++)
		buf_printf(out, "attention: the matmul after a softmax stays apart: %s\n",
			   info->why[i]);
}
