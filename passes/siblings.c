/* siblings.c: matmuls that share their first operand, brought together before the
 * search (issue 22's horizontal GEMM fusion; docs/burn-fidelity.md row 18).
 *
 * Exporters write a layer's projections of one input apart: the query's matmul,
 * its bias add, its head split, then the key's, then the value's. The Matmul fuser
 * takes siblings (matmuls reading the anchor's first operand, each with its own
 * epilogue) into one launch (passes/fuser_matmul.c), but only where they come one
 * after the other in the stream. This pass moves each later sibling, with the
 * elementwise ops of its epilogue, up to right after the one before it: a new order
 * of the same ops, each still after every op it reads from, so no value changes.
 *
 * A sibling: a matmul of the same stream and segment whose first operand is the
 * anchor's, of the same float dtype, whose second operand has the anchor's shape
 * and is made before the anchor, at most IR_MM_GROUP_MAX in all.
 * Its epilogue: the later elementwise ops of its output's shape that read what it
 * or its epilogue made, and otherwise only tensors made before the anchor. Where an
 * op reads what two of them made (Llama's silu(gate) * up) nothing moves and the
 * later ones are marked lone (Op.lone), so that the fuser takes none of them as a
 * sibling: apart, the second's launch takes that op; together, it would run after
 * their launch and read both results from memory. Skipped under --burn-exact (burn
 * sees the graph as written); nothing moves in graphs read for every size or for
 * operands of at most SIB_MIN_ROWS rows (decode), where siblings the exporter wrote
 * one after the other still share a launch. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

enum { SIB_MIN_ROWS = 16 };

static bool same_shape(const Tensor *x, const Tensor *y)
{
	if (x->rank != y->rank)
		return false;
	for (int d = 0; d < x->rank; d++)
		if (x->dim[d] != y->dim[d])
			return false;
	return true;
}

/* Whether matmul b is a sibling of anchor a. */
static bool sibling(const Graph *g, const Op *a, const Op *b)
{
	if (b->kind != OP_MATMUL || b->in[0] != a->in[0] || b->stream != a->stream)
		return false;
	const Tensor *ba = &g->tensors[a->in[1]], *bb = &g->tensors[b->in[1]];
	if (ba->dtype != bb->dtype || ba->rank != bb->rank || b->in[1] == b->in[0])
		return false;
	return same_shape(ba, bb);
}

/* Append to out the ops after op m (up to `end`) that make matmul m's epilogue:
 * elementwise, of m's output shape, reading something m or the epilogue made and
 * otherwise only tensors made before op `before` (mine[t] == stamp: made by m or its
 * epilogue; an op reading another sibling's stays where it is). */
static int epilogue(const Graph *g, int m, int end, int before, int *mine, int stamp,
		    const bool *moved, int *out)
{
	int n = 0;
	const Tensor *y = &g->tensors[g->ops[m].out[0]];
	mine[g->ops[m].out[0]] = stamp;
	for (int i = m + 1; i < end; i++) {
		const Op *op = &g->ops[i];
		if (moved[i] || !ir_op_is_elementwise(op->kind) || op->nout != 1 ||
		    op->stream != g->ops[m].stream || !same_shape(&g->tensors[op->out[0]], y))
			continue;
		bool reads = false, ok = true;
		for (int k = 0; k < op->nin && ok; k++) {
			int t = op->in[k], p = g->tensors[t].producer;
			if (mine[t] == stamp)
				reads = true;
			else if (p >= before)
				ok = false;
		}
		if (!reads || !ok)
			continue;
		mine[op->out[0]] = stamp;
		out[n++] = i;
	}
	return n;
}

/* ---- packed projections cut apart ------------------------------------------
 *
 * A matmul by a constant weight whose result (or that plus a constant bias along
 * its last dim) is read only by slices of its last dim, each whole along every
 * other dim: the projection exporters write packed and then split (GPT-2's c_attn,
 * a timm block's qkv). Each slice becomes a matmul by its columns of the weight,
 * and an add of its part of the bias, that writes the slice's tensor. These are
 * siblings, so one launch writes q, k and v apart, where the packed matmul wrote
 * one tensor and three copies cut it; and the attention reads each through its
 * views in place. An element is the same dot product over the same K as before,
 * so no value changes. */

typedef struct {
	int m, add;              /* the matmul, its bias add (-1: none) */
	int resh;                /* a reshape after them that keeps the last dim (GPT-2's
				    Conv1D: a 2-D Gemm, then its rows as [B, S]), or -1 */
	int nsl, sl[IR_MM_GROUP_MAX]; /* the slices, in op order */
} Cut;

/* The one op reading tensor x, at or after op `from`, or NULL. */
static const Op *only_reader(const Graph *g, int from, int x, const int *nread)
{
	if (nread[x] != 1)
		return NULL;
	for (int j = from; j < g->nops; j++)
		for (int k = 0; k < g->ops[j].nin; k++)
			if (g->ops[j].in[k] == x)
				return &g->ops[j];
	return NULL;
}

/* Whether constant b adds along y's last dim only (every other dim 1). */
static bool bias_along_last(const Tensor *b, const Tensor *y)
{
	if (!b->data || b->dtype != y->dtype || b->rank < 1 || b->rank > y->rank ||
	    b->dim[b->rank - 1] != y->dim[y->rank - 1])
		return false;
	for (int d = 0; d < b->rank - 1; d++)
		if (b->dim[d] != 1)
			return false;
	return true;
}

/* Whether op s takes columns [a, e) of x's last dim and all of every other dim. */
static bool last_dim_slice(const Graph *g, const Op *s, int x, int64_t *a, int64_t *e)
{
	const Tensor *t = &g->tensors[x], *y = &g->tensors[s->out[0]];
	int r = t->rank;
	if (s->kind != OP_SLICE || !s->attr || s->attr->n != r || s->in[0] != x || y->rank != r)
		return false;
	for (int d = 0; d < r - 1; d++)
		if (s->attr->range[d][0] != 0 || s->attr->range[d][1] != t->dim[d] ||
		    y->dim[d] != t->dim[d])
			return false;
	*a = s->attr->range[r - 1][0];
	*e = s->attr->range[r - 1][1];
	return *a >= 0 && *a < *e && *e <= t->dim[r - 1] && y->dim[r - 1] == *e - *a;
}

/* The cut at matmul op i, or false. nread: reads of each tensor. */
static bool find_cut(const Graph *g, int i, const int *nread, Cut *c)
{
	const Op *m = &g->ops[i];
	if (m->kind != OP_MATMUL || m->in[0] == m->in[1])
		return false;
	const Tensor *w = &g->tensors[m->in[1]], *y = &g->tensors[m->out[0]];
	if (!w->data || w->rank < 2 || y->is_output)
		return false;
	for (int d = 0; d < w->rank - 2; d++)
		if (w->dim[d] != 1)
			return false;
	c->m = i;
	c->add = c->resh = -1;
	c->nsl = 0;
	int x = m->out[0];
	const Op *o = only_reader(g, i + 1, x, nread);
	if (o && o->kind == OP_ADD && o->nin == 2 && o->stream == m->stream) {
		int b = o->in[0] == x ? o->in[1] : o->in[0];
		const Tensor *z = &g->tensors[o->out[0]];
		if (b == x || !bias_along_last(&g->tensors[b], y) || z->is_output ||
		    z->rank != y->rank || memcmp(z->dim, y->dim, sizeof *z->dim * (size_t)y->rank))
			return false;
		c->add = (int)(o - g->ops);
		x = o->out[0];
		o = only_reader(g, c->add + 1, x, nread);
	}
	if (o && o->kind == OP_RESHAPE && o->stream == m->stream) {
		const Tensor *z = &g->tensors[o->out[0]];
		if (z->is_output || z->dim[z->rank - 1] != y->dim[y->rank - 1])
			return false;
		c->resh = (int)(o - g->ops);
		x = o->out[0];
	}
	if (nread[x] < 2 || nread[x] > IR_MM_GROUP_MAX)
		return false;
	for (int j = i + 1; j < g->nops; j++) {
		const Op *sj = &g->ops[j];
		bool reads = false;
		for (int k = 0; k < sj->nin; k++)
			reads |= sj->in[k] == x;
		int64_t a, e;
		if (!reads)
			continue;
		if (sj->stream != m->stream || !last_dim_slice(g, sj, x, &a, &e))
			return false;
		c->sl[c->nsl++] = j;
	}
	return c->nsl == nread[x];
}

/* A new constant: columns [a, e) of constant t's last dim. */
static int columns(Graph *g, Tensor *tens, int *nt, int t, int64_t a, int64_t e)
{
	const Tensor *src = &tens[t];
	size_t es = (size_t)ir_dtype_size(src->dtype);
	int r = src->rank;
	int64_t n = src->dim[r - 1], rows = 1;
	for (int d = 0; d < r - 1; d++)
		rows *= src->dim[d];
	size_t wb = (size_t)(e - a) * es;
	char *dst = arena_alloc_raw(g->arena, (size_t)rows * wb + 16);
	for (int64_t q = 0; q < rows; q++)
		memcpy(dst + (size_t)q * wb, (const char *)src->data + ((size_t)(q * n + a)) * es, wb);
	Tensor *c = &tens[*nt];
	*c = *src;
	c->dim[r - 1] = e - a;
	c->data = dst;
	c->src = NULL;
	c->is_output = false;
	c->role = ROLE_INPUT;
	c->producer = -1;
	c->name = arena_printf(g->arena, "%s[:%lld:%lld]", src->name, (long long)a, (long long)e);
	return (*nt)++;
}

static void unsplit(Graph *g, SiblingInfo *info)
{
	int n = g->nops;
	int *nread = calloc((size_t)g->ntensors + 1, sizeof *nread);
	int *at = malloc(sizeof *at * (size_t)n);   /* the cut made at op i, or -1 */
	bool *skip = calloc((size_t)n, sizeof *skip);
	Cut *cuts = malloc(sizeof *cuts * (size_t)n);
	int ncut = 0, extra = 0, newops = 0;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < g->ops[i].nin; k++)
			nread[g->ops[i].in[k]]++;
	for (int i = 0; i < n; i++) {
		at[i] = -1;
		Cut *c = &cuts[ncut];
		if (skip[i] || !find_cut(g, i, nread, c))
			continue;
		at[i] = ncut++;
		skip[i] = true;
		if (c->add >= 0)
			skip[c->add] = true;
		if (c->resh >= 0)
			skip[c->resh] = true;
		for (int k = 0; k < c->nsl; k++)
			skip[c->sl[k]] = true;
		extra += c->nsl * (1 + (c->add >= 0) * 2 + (c->resh >= 0));
		newops += c->nsl * (1 + (c->add >= 0) + (c->resh >= 0));
		info->nunsplit++;
		info->nparts += c->nsl;
	}
	if (ncut) {
		Arena *a = g->arena;
		Tensor *tens = ARENA_NEW(a, Tensor, g->ntensors + extra + 1);
		memcpy(tens, g->tensors, sizeof *tens * (size_t)g->ntensors);
		int nt = g->ntensors;
		int *inputs = ARENA_NEW(a, int, g->ninputs + extra + 1);
		memcpy(inputs, g->inputs, sizeof *inputs * (size_t)g->ninputs);
		int nin = g->ninputs;
		Op *ops = ARENA_NEW(a, Op, n + newops + 1);
		int k = 0;
		for (int i = 0; i < n; i++) {
			if (!skip[i]) {
				ops[k++] = g->ops[i];
				continue;
			}
			if (at[i] < 0)
				continue;
			const Cut *c = &cuts[at[i]];
			const Op *m = &g->ops[c->m], *ad = c->add >= 0 ? &g->ops[c->add] : NULL;
			const Op *rs = c->resh >= 0 ? &g->ops[c->resh] : NULL;
			for (int q = 0; q < c->nsl; q++) {
				const Op *sl = &g->ops[c->sl[q]];
				int r = g->tensors[sl->in[0]].rank;
				int64_t lo = sl->attr->range[r - 1][0], hi = sl->attr->range[r - 1][1];
				int out = sl->out[0];
				int w = columns(g, tens, &nt, m->in[1], lo, hi);
				inputs[nin++] = w;
				/* the part before the reshape: the product's shape, hi - lo wide */
				int flat = out;
				if (rs) {
					flat = nt++;
					tens[flat] = tens[m->out[0]];
					tens[flat].dim[tens[flat].rank - 1] = hi - lo;
					tens[flat].is_output = false;
					tens[flat].role = ROLE_INTERMEDIATE;
					tens[flat].name = arena_printf(a, "%s:rows", tens[out].name);
				}
				int mo = flat;
				if (ad) {
					/* the product's own tensor, then the bias add writes the part */
					mo = nt++;
					tens[mo] = tens[flat];
					tens[mo].is_output = false;
					tens[mo].role = ROLE_INTERMEDIATE;
					tens[mo].name = arena_printf(a, "%s:product", tens[out].name);
				}
				Op mm = *m;
				int *in = ARENA_NEW(a, int, 2);
				in[0] = m->in[0];
				in[1] = w;
				mm.in = in;
				mm.in_status = NULL;
				mm.out[0] = mo;
				mm.nout = 1;
				ops[k++] = mm;
				if (ad) {
					int bias = ad->in[0] == m->out[0] ? 1 : 0;
					int b = columns(g, tens, &nt, ad->in[bias], lo, hi);
					inputs[nin++] = b;
					Op add = *ad;
					int *ain = ARENA_NEW(a, int, 2);
					ain[bias] = b;
					ain[1 - bias] = mo;
					add.in = ain;
					add.in_status = NULL;
					add.out[0] = flat;
					add.nout = 1;
					ops[k++] = add;
				}
				if (rs) {
					/* the part's rows in the slice's shape */
					Op re = *rs;
					Attrs *ra = ARENA_NEW(a, Attrs, 1);
					*ra = *rs->attr;
					const Tensor *to = &tens[out];
					ra->n = to->rank;
					for (int d = 0; d < to->rank; d++) {
						ra->shape[d] = to->dim[d];
						ra->sym[d] = 0;
					}
					int *rin = ARENA_NEW(a, int, 1);
					rin[0] = flat;
					re.in = rin;
					re.in_status = NULL;
					re.attr = ra;
					re.out[0] = out;
					re.nout = 1;
					ops[k++] = re;
				}
			}
		}
		g->tensors = tens;
		g->ntensors = nt;
		g->inputs = inputs;
		g->ninputs = nin;
		g->ops = ops;
		g->nops = k;
		pass_compact(g, NULL);
		ir_finish(g);
	}
	free(nread);
	free(at);
	free(skip);
	free(cuts);
}

int pass_siblings(Graph *g, SiblingInfo *info)
{
	memset(info, 0, sizeof *info);
	if (!g->sym)
		unsplit(g, info);
	if (g->nops < 2)
		return 0;
	int n = g->nops;
	bool *moved = calloc((size_t)n, sizeof *moved);
	int *mine = calloc((size_t)g->ntensors + 1, sizeof *mine);
	int stamp = 0;
	int *order = malloc(sizeof *order * (size_t)n);
	int *after = malloc(sizeof *after * (size_t)n);   /* ops placed after op i */
	int *nafter = calloc((size_t)n, sizeof *nafter);
	int *start = calloc((size_t)n, sizeof *start);
	int *buf = malloc(sizeof *buf * (size_t)n);
	int used = 0;
	for (int i = 0; i < n; i++) {
		const Op *a = &g->ops[i];
		if (a->kind != OP_MATMUL || moved[i] || a->lone)
			continue;
		const Tensor *x = &g->tensors[a->in[0]];
		if (x->dtype != DT_F16 && x->dtype != DT_BF16 && x->dtype != DT_F32)
			continue;
		int64_t rows = 1;
		for (int d = 0; d < x->rank - 1; d++)
			rows *= x->dim[d];
		/* the segment's end: a sync ends it */
		int end = i + 1;
		while (end < n && g->ops[end].kind != OP_SYNC)
			end++;
		int members[IR_MM_GROUP_MAX], nm = 1;
		members[0] = i;
		for (int j = i + 1; j < end && nm < IR_MM_GROUP_MAX; j++)
			if (!moved[j] && !g->ops[j].lone && sibling(g, a, &g->ops[j]) &&
			    g->tensors[g->ops[j].in[1]].producer < i)
				members[nm++] = j;
		if (nm < 2)
			continue;
		/* the new order after the anchor: its epilogue, then each sibling and its
		 * epilogue (stamps s0 .. stamp mark what each made) */
		int k = 0, s0 = stamp + 1;
		for (int m = 0; m < nm; m++) {
			if (m > 0)
				buf[k++] = members[m];
			k += epilogue(g, members[m], end, i, mine, ++stamp, moved, buf + k);
		}
		/* an op reading what two of them made (Llama's silu(gate) * up) would run
		 * after their launch, its operands through memory, where apart the second
		 * matmul's launch takes it: the later ones stay lone, for the fuser too */
		bool mix = false;
		for (int j = i + 1; j < end && !mix; j++)
			for (int q = 0, seen = 0; q < g->ops[j].nin && !mix; q++) {
				int st = mine[g->ops[j].in[q]];
				if (st < s0)
					continue;
				mix = seen && seen != st;
				seen = st;
			}
		if (mix) {
			for (int m = 1; m < nm; m++)
				g->ops[members[m]].lone = true;
			info->nlone += nm - 1;
			continue;
		}
		/* tiny M: the fuser takes siblings that come one after the other, and a
		 * moved op would gain nothing the gemv kernel keeps; a graph read for
		 * every size keeps its order (its rows are a probe's) */
		if (rows <= SIB_MIN_ROWS || g->sym)
			continue;
		for (int q = 0; q < k; q++)
			moved[buf[q]] = true;
		start[i] = used;
		nafter[i] = k;
		memcpy(after + used, buf, sizeof *buf * (size_t)k);
		used += k;
		info->ngroups++;
		info->nmatmuls += nm;
	}
	if (info->ngroups) {
		int k = 0;
		for (int i = 0; i < n; i++) {
			if (moved[i])
				continue;
			order[k++] = i;
			for (int q = 0; q < nafter[i]; q++)
				order[k++] = after[start[i] + q];
		}
		Op *ops = ARENA_NEW(g->arena, Op, n);
		int *where = malloc(sizeof *where * (size_t)n);
		for (int q = 0; q < n; q++) {
			ops[q] = g->ops[order[q]];
			where[order[q]] = q;
		}
		for (int t = 0; t < g->ntensors; t++)
			if (g->tensors[t].producer >= 0)
				g->tensors[t].producer = where[g->tensors[t].producer];
		g->ops = ops;
		free(where);
		ir_finish(g);
	}
	free(moved);
	free(mine);
	free(order);
	free(after);
	free(nafter);
	free(start);
	free(buf);
	return 0;
}

void pass_siblings_summary(const SiblingInfo *info, Buf *out)
{
	if (info->nunsplit)
		buf_printf(out, "siblings: %d packed projection%s read only through slices of "
			   "the last dim cut into %d matmuls over the weight's columns (no "
			   "copies)\n", info->nunsplit, info->nunsplit == 1 ? "" : "s",
			   info->nparts);
	if (info->ngroups)
		buf_printf(out, "siblings: %d group%s of matmuls sharing their first operand "
			   "(%d matmuls) brought together, each group for one launch\n",
			   info->ngroups, info->ngroups == 1 ? "" : "s", info->nmatmuls);
	if (info->nlone)
		buf_printf(out, "siblings: %d matmul%s left lone: an op reads two of a group "
			   "(as silu(gate) * up does), so each keeps the launch it has\n",
			   info->nlone, info->nlone == 1 ? "" : "s");
}
