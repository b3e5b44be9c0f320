/* precision.c: `--precision bf16|f16`, an f32 graph rewritten to compute in a
 * 16-bit float dtype L before the search (docs/precision.md).
 *
 * The rewrite is a walk over the ops in graph order that gives each op a mode,
 * as torch's autocast and TensorRT's --bf16 do:
 * - 'F' (kept; 'K' when --keep-f32 names it): the op kinds of default_keep (sums, means and products, which
 *   accumulate and whose results leave L's range or precision first: a variance,
 *   a softmax denominator; exp, log, log1p and the powers, whose results overflow
 *   f16) and the ops --keep-f32 names compute in f32: their operands are cast up;
 * - 'L': matmul and conv2d always, and every other op none of whose operands is
 *   an f32 result, compute in L;
 * - 'P' (promoted): an elementwise op, view, join or reduction that reads an f32
 *   result computes in f32 too (a norm after its mean, a softmax's division by
 *   its sum), until a matmul or conv2d casts back to L. Graph inputs and
 *   constants do not promote: they are cast to the mode of the op that reads
 *   them, as a 0-dim tensor does in torch.
 * Only tensors that were f32 change: integer, bool, f64, f16 and bf16 tensors and
 * the ops that make them stay as they are (a cast to f32 becomes a cast to L).
 *
 * The modes are decided first, over the whole graph, so that the rewrite knows
 * in which dtypes each tensor is read. Casts are ops of the graph, so the search
 * fuses them like any other elementwise op: the casts of an op's result right
 * after the op (fused on write into its kernel), the cast of a graph input or
 * constant before its first reader that needs it, one per tensor and dtype,
 * reused by later readers. Graph inputs and outputs keep their names and dtypes
 * (an output made in L is written by a cast from NAME:L). A constant that some op
 * reads in L is converted here, once, rounded to nearest even (saturated at L's
 * largest finite value, counted), so the weights file holds L's bytes; one of a
 * single element that an op reads in f32 (an epsilon) stays f32.
 *
 * Beside the converted graph the pass builds its shadow (PrecisionInfo.shadow):
 * the same ops and tensors with every converted tensor back in f32 and converted
 * constants holding their f32 data. It computes exactly what the original graph
 * computes, and `--check` runs it through the interpreter with the converted
 * graph's dtypes as the dtypes stored (host/bounds.c, docs/tolerances.md). */
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* ORDER: docs/precision.md lists these. */
static const char default_keep[] = "sum,mean,prod,exp,log,log1p,pow,powf,pow_scalar";

const char *pass_precision_default_keep(void)
{
	return default_keep;
}

int pass_precision_parse(const char *s, DType *to)
{
	if (!strcmp(s, "bf16"))
		*to = DT_BF16;
	else if (!strcmp(s, "f16"))
		*to = DT_F16;
	else
		return -1;
	return 0;
}

/* ---- rounding f32 to bf16 and f16 -------------------------------------------- */

/* Written here, apart from host/host.c's, so that --check (which rounds with
 * host_round) also catches a wrong conversion of the weights. */

static uint32_t f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

/* Round to nearest even; a finite value beyond the range saturates (*sat). */
static uint16_t to_bf16(float f, bool *sat)
{
	uint32_t u = f32_bits(f);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);   /* NaN stays a quiet NaN */
	if ((u & 0x7fffffffu) == 0x7f800000u)
		return (uint16_t)(u >> 16);
	uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
	if ((r & 0x7fffu) == 0x7f80u) {          /* rounded up to infinity */
		*sat = true;
		r = (r & 0x8000u) | 0x7f7fu;
	}
	return (uint16_t)r;
}

static uint16_t to_f16(float f, bool *sat)
{
	uint32_t u = f32_bits(f);
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
	double a = fabs((double)f);
	if (isnan(f))
		return sign | 0x7e00;
	if (isinf(f))
		return sign | 0x7c00;
	if (a < 0x1p-14)   /* subnormal: a multiple of 2^-24 (1024·2^-24 is the smallest normal) */
		return sign | (uint16_t)nearbyint(a * 0x1p24);
	int e;
	frexp(a, &e);      /* a = m·2^e, m in [0.5, 1) */
	e -= 1;            /* a in [2^e, 2^(e+1)) */
	double q = nearbyint(ldexp(a, 10 - e));   /* 1024 .. 2048 */
	if (q == 2048) {
		q = 1024;
		e++;
	}
	if (e > 15) {
		*sat = true;
		return sign | 0x7bff;   /* 65504 */
	}
	return sign | (uint16_t)(((e + 15) << 10) | ((int)q - 1024));
}

/* ---- the rewrite ------------------------------------------------------------- */

typedef struct {
	Graph *g;              /* the graph being rewritten (its old arrays in src) */
	DType to;
	Tensor *src_t;         /* the original tensors and ops */
	Tensor *t;             /* the new tensors: the original ids first */
	int nt, capt;
	Op *ops;               /* the new ops */
	char *mode;
	int nops, capo;
	int *cur;              /* per original tensor: the id holding its value now */
	int *cast[2];          /* per original tensor: its cast to L [0] / to f32 [1]; -1 */
	const char *sep;       /* between a name and its dtype in a cast's tensor name */
} Rw;

static int new_tensor(Rw *w, const Tensor *like, DType dt, const char *suffix)
{
	if (w->nt == w->capt) {
		w->capt *= 2;
		Tensor *n = ARENA_NEW(w->g->arena, Tensor, w->capt);
		memcpy(n, w->t, sizeof *n * (size_t)w->nt);
		w->t = n;
	}
	Tensor *t = &w->t[w->nt];
	*t = *like;
	t->dtype = dt;
	t->role = ROLE_INTERMEDIATE;
	t->is_output = false;
	t->data = NULL;
	t->src = NULL;
	t->producer = -1;
	t->name = arena_printf(w->g->arena, "%s%s%s", like->name, w->sep, suffix);
	return w->nt++;
}

/* ":" (x:bf16), or as many more colons as make the names of cast tensors new. */
static const char *unused_separator(const Graph *g)
{
	static const char *const dts[] = {"bf16", "f16", "f32"};
	for (int n = 1;; n++) {
		char *sep = arena_alloc(g->arena, (size_t)n + 1);
		memset(sep, ':', (size_t)n);
		bool taken = false;
		for (int t = 0; t < g->ntensors && !taken; t++) {
			const char *name = g->tensors[t].name;
			size_t len = strlen(name);
			for (int k = 0; k < 3 && !taken; k++) {
				size_t dl = strlen(dts[k]);
				taken = len >= dl + (size_t)n && !strcmp(name + len - dl, dts[k]) &&
					!strncmp(name + len - dl - (size_t)n, sep, (size_t)n);
			}
		}
		if (!taken)
			return sep;
	}
}

static Op *push_op(Rw *w, const Op *op, char mode)
{
	if (w->nops == w->capo) {
		w->capo *= 2;
		Op *n = ARENA_NEW(w->g->arena, Op, w->capo);
		memcpy(n, w->ops, sizeof *n * (size_t)w->nops);
		w->ops = n;
		char *m = ARENA_NEW(w->g->arena, char, w->capo);
		memcpy(m, w->mode, (size_t)w->nops);
		w->mode = m;
	}
	w->ops[w->nops] = *op;
	w->mode[w->nops] = mode;
	return &w->ops[w->nops++];
}

/* A cast op from tensor `from` to dtype dt writing tensor `to`, at the end. */
static void push_cast(Rw *w, int from, int to, DType dt, const Op *near)
{
	Attrs *at = ARENA_NEW(w->g->arena, Attrs, 1);
	at->has = A_DTYPE;
	at->dtype = dt;
	Op c = {.kind = OP_CAST, .stream = near->stream, .nin = 1, .nout = 1,
		.in = ARENA_NEW(w->g->arena, int, 1), .attr = at, .line = near->line,
		.col = near->col, .name = "--precision"};
	c.in[0] = from;
	c.out[0] = to;
	w->t[to].producer = w->nops;
	push_op(w, &c, 'C');
}

/* Original tensor x in dtype dt (L or f32), casting it before `near` if needed. */
static int operand_as(Rw *w, int x, DType dt, const Op *near)
{
	int id = w->cur[x];
	if (w->t[id].dtype == dt)
		return id;
	int k = dt == DT_F32;
	if (w->cast[k][x] < 0) {
		w->cast[k][x] = new_tensor(w, &w->src_t[x], dt, ir_dtype_name(dt));
		push_cast(w, id, w->cast[k][x], dt, near);
	}
	return w->cast[k][x];
}

static bool kind_low(OpKind k)
{
	return k == OP_MATMUL || k == OP_CONV2D;
}

static int64_t numel(const Tensor *t)
{
	int64_t n = 1;
	for (int k = 0; k < t->rank; k++)
		n *= t->dim[k];
	return n;
}

/* Convert constant t (f32) to L in place; counts into info. */
static void convert_constant(Rw *w, Tensor *t, PrecisionInfo *info)
{
	int64_t n = numel(t);
	const float *src = t->data;
	uint16_t *dst = arena_alloc_raw(w->g->arena, (size_t)n * 2 + 16);
	for (int64_t i = 0; i < n; i++) {
		bool sat = false;
		dst[i] = w->to == DT_BF16 ? to_bf16(src[i], &sat) : to_f16(src[i], &sat);
		info->nsaturated += sat;
		info->nflushed += src[i] != 0 && (dst[i] & 0x7fff) == 0;
	}
	t->data = dst;
	t->dtype = w->to;
	info->nconst++;
	info->const_bytes[0] += n * 4;
	info->const_bytes[1] += n * 2;
}

/* ---- --keep-f32 ------------------------------------------------------------------ */

static bool has_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* Mark keep[i] for each op that entry e names; 0, or -1 with *d set. */
static int keep_entry(const Graph *g, const char *e, bool *keep, bool *kinds, Diag *d)
{
	int k = ir_op_lookup(e);
	if (k >= 0) {
		kinds[k] = true;
		return 0;
	}
	char tail;
	int idx;
	if (sscanf(e, "ops[%d%c", &idx, &tail) == 2 && tail == ']' &&
	    !strcmp(strchr(e, ']'), "]")) {
		if (idx < 0 || idx >= g->nops || g->ops[idx].kind == OP_SYNC) {
			diag_set(d, g->file, 0, 0, "--keep-f32: '%s' names no op: the graph has "
				 "ops[0] to ops[%d] (syncs excluded)", e, g->nops - 1);
			return -1;
		}
		keep[idx] = true;
		return 0;
	}
	bool found = false;
	for (int i = 0; i < g->nops; i++) {
		const char *n = g->ops[i].name;
		if (n && (has_glob(e) ? !fnmatch(e, n, 0) : !strcmp(e, n))) {
			keep[i] = true;
			found = true;
		}
	}
	if (found)
		return 0;
	/* the nearest op kind or op name */
	int nc = 0;
	const char **cand = ARENA_NEW(g->arena, const char *, OP_COUNT + g->nops + 1);
	for (int i = 0; i < OP_COUNT; i++)
		if (i != OP_SYNC)
			cand[nc++] = ir_ops[i].file;
	for (int i = 0; i < g->nops; i++)
		if (g->ops[i].name)
			cand[nc++] = g->ops[i].name;
	const char *near = has_glob(e) ? NULL : closest_word(e, cand, nc);
	if (near)
		diag_set(d, g->file, 0, 0, "--keep-f32: no op kind and no op named '%s'; did you "
			 "mean '%s'?", e, near);
	else
		diag_set(d, g->file, 0, 0, "--keep-f32: no op kind and no op named '%s' (an "
			 "entry is an op kind such as softmax's 'exp', an op's name, a pattern "
			 "of names such as '*Softmax*', or ops[N])", e);
	return -1;
}

/* keep[i]: op i named by --keep-f32 (ops[N], a name, a pattern); kinds[k]: kind k
 * kept, by default or by the list; user[k]: by the list. */
static int parse_keep(const Graph *g, const char *list, bool *keep, bool *kinds, bool *user,
		      Diag *d)
{
	char *all = arena_printf(g->arena, "%s,%s", default_keep, list ? list : "");
	bool defaults = true;
	for (const char *p = list; p && *p;) {   /* `none` anywhere drops the defaults */
		size_t n = strcspn(p, ",");
		if (n == 4 && !strncmp(p, "none", 4))
			defaults = false;
		p += n + (p[n] == ',');
	}
	if (!defaults)
		all = arena_strdup(g->arena, list);
	char *save = NULL;
	int ndef = defaults ? (int)strlen(default_keep) : -1;
	for (char *e = strtok_r(all, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
		bool from_list = e - all > ndef;
		while (*e == ' ')
			e++;
		size_t n = strlen(e);
		while (n && e[n - 1] == ' ')
			e[--n] = 0;
		if (!*e || !strcmp(e, "none"))
			continue;
		bool kk[OP_COUNT] = {false};
		if (keep_entry(g, e, keep, kk, d))
			return -1;
		for (int k = 0; k < OP_COUNT; k++) {
			kinds[k] = kinds[k] || kk[k];
			user[k] = user[k] || (kk[k] && from_list);
		}
	}
	return 0;
}

/* ---- the pass -------------------------------------------------------------------- */

/* The mode of op: 'F' (kept), 'L', 'P', or 0 when it touches no f32 tensor. now[t]
 * is the dtype each original tensor has so far; only results promote (inputs,
 * views of inputs (pass) and constants are converted to whatever their readers
 * compute in). */
static char op_mode(const Graph *g, const DType *now, const bool *pass, const Op *op,
		    bool kept)
{
	bool touches = g->tensors[op->out[0]].dtype == DT_F32;
	bool promote = false;
	for (int k = 0; k < op->nin; k++) {
		const Tensor *x = &g->tensors[op->in[k]];
		if (x->dtype != DT_F32)
			continue;
		touches = true;
		promote = promote || (x->producer >= 0 && !pass[op->in[k]] &&
				      now[op->in[k]] == DT_F32);
	}
	if (!touches)
		return 0;
	if (kept)
		return 'F';
	if (kind_low(op->kind))
		return 'L';
	return promote ? 'P' : 'L';
}

/* Per op: a view whose result (not a graph output) only matmuls and convs read (as
 * operands they compute in L), or views like it. Such a view computes in L too,
 * so that the cast to L of its operand comes right after the op that made it
 * (casts_after) and runs in that op's kernel (a norm's, before a layer's
 * projections), not as a launch of its own between the view and the matmuls,
 * where it kept the first projection from its siblings (passes/siblings.c). */
static bool *low_views(const Graph *g, const bool *keep, const bool *kinds)
{
	bool *lview = ARENA_NEW(g->arena, bool, g->nops + 1);
	bool *other = ARENA_NEW(g->arena, bool, g->ntensors + 1);  /* read otherwise */
	bool *read = ARENA_NEW(g->arena, bool, g->ntensors + 1);
	for (int t = 0; t < g->ntensors; t++)
		other[t] = g->tensors[t].is_output;
	for (int i = g->nops - 1; i >= 0; i--) {
		const Op *op = &g->ops[i];
		if (op->kind == OP_SYNC)
			continue;
		bool kept = keep[i] || kinds[op->kind];
		if (ir_ops[op->kind].family == FAM_VIEW && op->nin == 1 && op->nout == 1)
			lview[i] = !kept && read[op->out[0]] && !other[op->out[0]] &&
				   g->tensors[op->out[0]].dtype == DT_F32;
		bool low = !kept && (kind_low(op->kind) || lview[i]);
		for (int k = 0; k < op->nin; k++) {
			read[op->in[k]] = true;
			other[op->in[k]] = other[op->in[k]] || !low;
		}
	}
	return lview;
}

/* After op (new index) has made original tensor y: the casts of y its later
 * readers need, right away, so that the search can fuse them into y's kernel. */
static void casts_after(Rw *w, int y, const bool *need, const Op *op)
{
	for (int k = 0; k < 2; k++)
		if (need[k] && w->src_t[y].dtype == DT_F32)
			operand_as(w, y, k ? DT_F32 : w->to, op);
}

int pass_precision(Graph *g, const PrecisionOptions *o, PrecisionInfo *info, Diag *d)
{
	Arena *a = g->arena;
	memset(info, 0, sizeof *info);
	info->to = o->to;
	info->keep = o->keep;
	bool *keep = ARENA_NEW(a, bool, g->nops + 1);
	bool kinds[OP_COUNT] = {false}, user[OP_COUNT] = {false};
	if (parse_keep(g, o->keep, keep, kinds, user, d))
		return -1;

	/* first the mode of every op, and which dtypes each tensor is read in
	 * (need[2t]: L, need[2t + 1]: f32) */
	char *mode = ARENA_NEW(a, char, g->nops + 1);
	DType *now = ARENA_NEW(a, DType, g->ntensors + 1);
	bool *need = ARENA_NEW(a, bool, 2 * (size_t)g->ntensors + 2);
	bool *pass = ARENA_NEW(a, bool, g->ntensors + 1);
	for (int t = 0; t < g->ntensors; t++) {
		now[t] = g->tensors[t].dtype;
		pass[t] = g->tensors[t].producer < 0 && !g->tensors[t].data;
	}
	bool *lview = low_views(g, keep, kinds);
	for (int i = 0; i < g->nops; i++) {
		const Op *op = &g->ops[i];
		if (op->kind == OP_SYNC)
			continue;
		bool kept = keep[i] || kinds[op->kind];
		char m;
		if (ir_ops[op->kind].family == FAM_VIEW && !kept && pass[op->in[0]] &&
		    g->tensors[op->in[0]].dtype == DT_F32) {
			/* a view of an input stays f32 and, like the input, is cast
			 * where it is read in L (an input's reshape before a norm) */
			m = 'P';
			pass[op->out[0]] = true;
		} else if (lview[i] && !kept) {
			/* read by matmuls alone: a view in L, the cast before it
			 * (right after the op that makes its operand, in its kernel) */
			m = 'L';
		} else {
			m = op_mode(g, now, pass, op, kept);
		}
		if (m == 'F' && (keep[i] || user[op->kind]))
			m = 'K';   /* kept by --keep-f32 */
		mode[i] = m;
		if (!m)
			continue;
		DType dt = m == 'L' ? o->to : DT_F32;
		for (int k = 0; k < op->nin && op->kind != OP_CAST; k++)
			if (g->tensors[op->in[k]].dtype == DT_F32)
				need[2 * op->in[k] + (dt == DT_F32)] = true;
		if (g->tensors[op->out[0]].dtype == DT_F32)
			now[op->out[0]] = dt;
		info->nlow += m == 'L';
		info->nkept += m == 'F' || m == 'K';
		info->npromoted += m == 'P';
	}

	Rw w = {.g = g, .to = o->to, .src_t = g->tensors, .sep = unused_separator(g)};
	w.capt = g->ntensors * 2 + 16;
	w.t = ARENA_NEW(a, Tensor, w.capt);
	memcpy(w.t, g->tensors, sizeof *w.t * (size_t)g->ntensors);
	w.nt = g->ntensors;
	w.capo = g->nops * 2 + 16;
	w.ops = ARENA_NEW(a, Op, w.capo);
	w.mode = ARENA_NEW(a, char, w.capo);
	w.cur = ARENA_NEW(a, int, g->ntensors + 1);
	w.cast[0] = ARENA_NEW(a, int, g->ntensors + 1);
	w.cast[1] = ARENA_NEW(a, int, g->ntensors + 1);
	const void **orig_data = ARENA_NEW(a, const void *, g->ntensors + 1);
	for (int t = 0; t < g->ntensors; t++) {
		w.cur[t] = t;
		w.cast[0][t] = w.cast[1][t] = -1;
		Tensor *x = &w.t[t];
		orig_data[t] = x->data;
		/* a constant some op reads in L is converted once, here; one of a
		 * single element (an epsilon, a scale) only when no op reads it in
		 * f32, where it stays exact */
		if (x->data && x->dtype == DT_F32 && need[2 * t] &&
		    (numel(x) > 1 || !need[2 * t + 1]))
			convert_constant(&w, x, info);
	}

	for (int i = 0; i < g->nops; i++) {
		const Op *op = &g->ops[i];
		char m = mode[i];
		if (!m) {
			if (op->kind != OP_SYNC)
				w.t[op->out[0]].producer = w.nops;
			push_op(&w, op, 0);
			continue;
		}
		DType dt = m == 'L' ? o->to : DT_F32;
		int *in = ARENA_NEW(a, int, op->nin + 1);
		for (int k = 0; k < op->nin; k++) {
			int x = op->in[k];
			in[k] = x;
			if (w.src_t[x].dtype != DT_F32)
				continue;
			/* a cast reads any dtype: its operand is never cast again */
			in[k] = op->kind == OP_CAST ? w.cur[x] : operand_as(&w, x, dt, op);
		}
		int y = op->out[0];
		bool conv = w.src_t[y].dtype == DT_F32 && dt != DT_F32;
		Op n = *op;
		n.in = in;
		n.in_status = NULL;
		if (conv && op->kind == OP_CAST) {
			Attrs *at = ARENA_NEW(a, Attrs, 1);
			*at = *op->attr;
			at->dtype = dt;
			n.attr = at;
		}
		if (conv && w.src_t[y].is_output) {
			/* the output keeps its name and dtype: the op writes y:L, a cast y */
			int low = new_tensor(&w, &w.src_t[y], dt, ir_dtype_name(dt));
			n.out[0] = low;
			w.t[low].producer = w.nops;
			push_op(&w, &n, m);
			push_cast(&w, low, y, DT_F32, op);
			w.cur[y] = low;
			w.cast[1][y] = y;
		} else {
			if (conv)
				w.t[y].dtype = dt;
			w.t[y].producer = w.nops;
			push_op(&w, &n, m);
		}
		casts_after(&w, y, &need[2 * y], op);
	}
	for (int i = 0; i < w.nops; i++)
		info->ncasts += w.mode[i] == 'C';

	/* the shadow: the same ops and tensors, every converted tensor in f32 */
	Graph *s = ARENA_NEW(a, Graph, 1);
	Tensor *st = ARENA_NEW(a, Tensor, w.nt + 1);
	Op *so = ARENA_NEW(a, Op, w.nops + 1);
	info->store = ARENA_NEW(a, DType, w.nt + 1);
	memcpy(st, w.t, sizeof *st * (size_t)w.nt);
	memcpy(so, w.ops, sizeof *so * (size_t)w.nops);
	for (int t = 0; t < w.nt; t++) {
		info->store[t] = w.t[t].dtype;
		/* converted: an f32 tensor now in L, or a cast to L inserted here */
		bool was_f32 = t < g->ntensors ? g->tensors[t].dtype == DT_F32 : true;
		if (!was_f32 || w.t[t].dtype != o->to)
			continue;
		st[t].dtype = DT_F32;
		if (t < g->ntensors && orig_data[t])
			st[t].data = orig_data[t];
	}
	for (int i = 0; i < w.nops; i++) {
		Op *op = &so[i];
		if (op->kind != OP_CAST || st[op->out[0]].dtype == op->attr->dtype)
			continue;
		Attrs *at = ARENA_NEW(a, Attrs, 1);
		*at = *op->attr;
		at->dtype = st[op->out[0]].dtype;
		op->attr = at;
	}
	info->mode = w.mode;

	g->tensors = w.t;
	g->ntensors = w.nt;
	g->ops = w.ops;
	g->nops = w.nops;
	ir_finish(g);
	*s = *g;
	s->tensors = st;
	s->ops = so;
	/* the shadow shares the converted graph's operand lists and segments */
	for (int i = 0; i < s->nops; i++)
		so[i].in_status = g->ops[i].in_status;
	info->shadow = s;
	return 0;
}

void pass_precision_summary(const Graph *g, const PrecisionInfo *info, Buf *out)
{
	if (info->to == DT_F32)
		return;
	const char *l = ir_dtype_name(info->to);
	buf_printf(out, "precision: %s (--precision): %d op%s compute in %s, %d kept in f32 "
		   "(kept kinds %s%s%s), %d in f32 after an f32 result; %d cast%s inserted",
		   l, info->nlow, info->nlow == 1 ? "" : "s", l, info->nkept,
		   info->keep && strstr(info->keep, "none") ? "" : default_keep,
		   info->keep ? "; --keep-f32 " : "", info->keep ? info->keep : "",
		   info->npromoted, info->ncasts, info->ncasts == 1 ? "" : "s");
	if (info->nconst)
		buf_printf(out, "; %d constant%s converted, %lld -> %lld bytes", info->nconst,
			   info->nconst == 1 ? "" : "s", (long long)info->const_bytes[0],
			   (long long)info->const_bytes[1]);
	if (info->nsaturated)
		buf_printf(out, "; %lld constant element%s beyond %s's range saturated",
			   (long long)info->nsaturated, info->nsaturated == 1 ? "" : "s", l);
	if (info->nflushed)
		buf_printf(out, "; %lld non-zero constant element%s became 0",
			   (long long)info->nflushed, info->nflushed == 1 ? "" : "s");
	buf_printf(out, "\n");
	for (int i = 0; i < g->nops; i++) {
		char m = info->mode[i], ref[300];
		if (m != 'K')
			continue;
		buf_printf(out, "  kept in f32: %s %s\n", ir_op_ref(g, i, ref, sizeof ref),
			   ir_ops[g->ops[i].kind].file);
	}
}
