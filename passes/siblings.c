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

enum {
	CUT_LEAVES = 12,         /* tensors a cut's view tree hands to other ops */
	CUT_VIEWS = 48,          /* view ops of the tree */
};

typedef struct {
	int m, add;              /* the matmul, its bias add (-1: none) */
	int resh;                /* a reshape after them that keeps the last dim (GPT-2's
				    Conv1D: a 2-D Gemm, then its rows as [B, S]), or -1 */
	int nsl, sl[IR_MM_GROUP_MAX]; /* the slices, in op order */
	/* or the view tree (find_tree): the parts' columns [lo, hi) of the last dim,
	 * by lo; each leaf tensor, its part, and the reshape R and permute P that read
	 * it from its part's matmul */
	bool tree;
	int np;
	int64_t lo[IR_MM_GROUP_MAX], hi[IR_MM_GROUP_MAX];
	int nleaf, leaf[CUT_LEAVES], part[CUT_LEAVES];
	int64_t R[CUT_LEAVES][IR_MAX_RANK];
	int P[CUT_LEAVES][IR_MAX_RANK];
	bool plain[CUT_LEAVES];  /* the permute moves only 1s: one reshape */
	int nview, view[CUT_VIEWS];
	int rows_of;             /* the parts' matmuls read tensor T reshaped to the
				    operand's shape: the operand is T's rows reordered
				    by views (rows_in_order), or -1 */
} Cut;

/* The one op reading tensor x, or NULL. */
static const Op *only_reader(const Graph *g, int x, const VmReaders *rd)
{
	return rd->first[x + 1] - rd->first[x] == 1 ? &g->ops[rd->op[rd->first[x]]] : NULL;
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

/* The projection at matmul op i: a constant weight, and its bias add when one
 * follows; the tensor they make (c->m, c->add set), or -1. */
static int projection(const Graph *g, int i, const VmReaders *rd, Cut *c)
{
	const Op *m = &g->ops[i];
	if (m->kind != OP_MATMUL || m->in[0] == m->in[1])
		return -1;
	const Tensor *w = &g->tensors[m->in[1]], *y = &g->tensors[m->out[0]];
	if (!w->data || w->rank < 2 || y->is_output)
		return -1;
	for (int d = 0; d < w->rank - 2; d++)
		if (w->dim[d] != 1)
			return -1;
	memset(c, 0, sizeof *c);
	c->rows_of = -1;
	c->m = i;
	c->add = c->resh = -1;
	int x = m->out[0];
	const Op *o = only_reader(g, x, rd);
	if (o && o->kind == OP_ADD && o->nin == 2 && o->stream == m->stream) {
		int b = o->in[0] == x ? o->in[1] : o->in[0];
		const Tensor *z = &g->tensors[o->out[0]];
		if (b == x || !bias_along_last(&g->tensors[b], y) || z->is_output ||
		    z->rank != y->rank || memcmp(z->dim, y->dim, sizeof *z->dim * (size_t)y->rank))
			return -1;
		c->add = (int)(o - g->ops);
		x = o->out[0];
	}
	return x;
}

/* The cut of projection x read by slices of its last dim, through the reshape
 * find_cut allows, or false. */
static bool find_slices(const Graph *g, int x, const VmReaders *rd, const int *nread, Cut *c)
{
	const Op *m = &g->ops[c->m];
	const Tensor *y = &g->tensors[m->out[0]];
	const Op *o = only_reader(g, x, rd);
	if (o && o->kind == OP_RESHAPE && o->stream == m->stream) {
		const Tensor *z = &g->tensors[o->out[0]];
		if (z->is_output || z->dim[z->rank - 1] != y->dim[y->rank - 1])
			return false;
		c->resh = (int)(o - g->ops);
		x = o->out[0];
	}
	if (nread[x] < 2 || nread[x] > IR_MM_GROUP_MAX)
		return false;
	for (int k = rd->first[x]; k < rd->first[x + 1]; k++) {
		const Op *sj = &g->ops[rd->op[k]];
		int64_t a, e;
		if (sj->stream != m->stream || !last_dim_slice(g, sj, x, &a, &e))
			return false;
		c->sl[c->nsl++] = rd->op[k];
	}
	return c->nsl == nread[x];
}

/* Leaf u, read as map w of projection x [..., N]: its part's columns, and how it
 * reads that part (a dense [..., hi - lo]) as a reshape and a permute. */
static bool leaf_of(const Graph *g, Cut *c, int x, int u, const ViewMap *w)
{
	const Tensor *xt = &g->tensors[x], *ut = &g->tensors[u];
	int64_t n = xt->dim[xt->rank - 1], rows = 1;
	for (int d = 0; d < xt->rank - 1; d++)
		rows *= xt->dim[d];
	int64_t ext[IR_MAX_RANK], str[IR_MAX_RANK];
	if (c->nleaf == CUT_LEAVES || !vm_strided(w, ext, str))
		return false;
	int64_t row0 = w->off / n, lo = w->off % n, hi = lo + 1;
	bool col[IR_MAX_RANK];
	for (int d = 0; d < ut->rank; d++) {
		col[d] = ext[d] > 1 && str[d] % n != 0;
		if (col[d] && str[d] > n)
			return false;
		if (col[d])
			hi += (ext[d] - 1) * str[d];
	}
	if (hi > n)
		return false;
	int p = 0;
	while (p < c->np && (c->lo[p] != lo || c->hi[p] != hi)) {
		if (lo < c->hi[p] && c->lo[p] < hi)
			return false;   /* overlapping parts */
		p++;
	}
	if (p == c->np) {
		if (c->np == IR_MM_GROUP_MAX)
			return false;
		c->lo[p] = lo;
		c->hi[p] = hi;
		c->np++;
	}
	int64_t wd = hi - lo, s[IR_MAX_RANK];
	for (int d = 0; d < ut->rank; d++)
		s[d] = col[d] || ext[d] == 1 ? str[d] : str[d] / n * wd;
	int q = c->nleaf;
	if (!vm_dense_permute(ut->rank, ext, s, row0 * wd, rows * wd, c->R[q], c->P[q]))
		return false;
	c->plain[q] = true;
	int64_t last = -1;
	for (int d = 0; d < ut->rank; d++)
		if (ext[d] > 1) {
			c->plain[q] &= last < 0 || s[d] < last;
			last = s[d];
		}
	c->leaf[q] = u;
	c->part[q] = p;
	c->nleaf++;
	return true;
}

/* Where matmul m's operand A [..., K] is a chain of views of a tensor T that
 * reorders T's rows of K (nn.MultiheadAttention's export transposes [batch, seq,
 * dim] to [seq, batch, dim] in front of the in-projection): T, and in *x the map
 * of the result onto the result of T's rows in their own order (row_order.c moves
 * the views after a matmul in front; this moves them after, where the cut's views
 * take them in). -1 where A is not such a chain or its rows are in order. */
static int rows_in_order(const Graph *g, const Op *m, const Tensor *xt, const bool *skip,
			 ViewMap *x)
{
	const Tensor *a = &g->tensors[m->in[0]];
	int64_t k = a->dim[a->rank - 1], n = xt->dim[xt->rank - 1];
	int t = m->in[0], up[8], nup = 0;
	while (g->tensors[t].producer >= 0 && nup < 8) {
		const Op *p = &g->ops[g->tensors[t].producer];
		if (!vm_kind(p->kind) || p->stream != m->stream)
			break;
		up[nup++] = g->tensors[t].producer;
		t = p->in[0];
	}
	/* T and the views to it must outlive the earlier cuts */
	bool gone = g->tensors[t].producer >= 0 && skip[g->tensors[t].producer];
	for (int q = 0; q < nup; q++)
		gone |= skip[up[q]];
	if (gone)
		return -1;
	if (nup == 0 || a->rank != xt->rank)
		return -1;
	ViewMap am;
	vm_dense(&am, &g->tensors[t]);
	for (int q = nup - 1; q >= 0; q--)
		if (!vm_apply(&am, g, &g->ops[up[q]]))
			return -1;
	int64_t e[VM_SUB], s[VM_SUB], R[IR_MAX_RANK];
	int P[IR_MAX_RANK], ns = vm_subdims(&am, e, s);
	int last = a->rank - 1;
	/* the last dim one step-1 sub-dim of K, the rest whole rows */
	int nlast = 0;
	for (int j = am.first[last]; j < am.first[last + 1]; j++)
		nlast += am.ext[j] != 1;
	if (ns < 2 || ns > IR_MAX_RANK || nlast != 1 || e[ns - 1] != k || s[ns - 1] != 1)
		return -1;
	int64_t numel = 1;
	for (int d = 0; d < g->tensors[t].rank; d++)
		numel *= g->tensors[t].dim[d];
	bool moved = false;
	for (int j = 0; j < ns - 1; j++) {
		if (s[j] % k)
			return -1;
		moved |= j > 0 && s[j] > s[j - 1];
	}
	if (!moved || !vm_dense_permute(ns, e, s, am.off, numel, R, P))
		return -1;
	/* the same sub-dims over the result's rows of N */
	*x = am;
	for (int j = 0; j < am.first[am.rank]; j++)
		if (j >= am.first[last])
			x->ext[j] = x->ext[j] == 1 ? 1 : n;
		else
			x->str[j] = x->str[j] / k * n;
	for (int j = am.first[last]; j < am.first[last + 1]; j++)
		x->str[j] = 1;
	return t;
}

/* The cut of projection x read only through views (reshapes, permutes, slices)
 * each of whose results that another op reads takes columns of x's last dim as a
 * reshape and a permute of them: nn.MultiheadAttention's packed in-projection,
 * reshaped to [seq, batch, 3, dim], transposed and indexed, each of q, k and v
 * then split into heads. */
static bool find_tree(const Graph *g, int x, const VmReaders *rd, const bool *skip, Cut *c)
{
	const Op *m = &g->ops[c->m];
	const Tensor *xt = &g->tensors[x];
	if (xt->rank < 1 || rd->first[x + 1] == rd->first[x])
		return false;
	int q[CUT_VIEWS + 1];
	ViewMap *map = malloc(sizeof *map * (CUT_VIEWS + 1));
	int nq = 1;
	q[0] = x;
	c->rows_of = rows_in_order(g, m, xt, skip, &map[0]);
	if (c->rows_of < 0)
		vm_dense(&map[0], xt);
	bool ok = true;
	c->tree = true;
	for (int h = 0; h < nq && ok; h++) {
		int u = q[h];
		bool leaf = false;
		for (int k = rd->first[u]; k < rd->first[u + 1] && ok; k++) {
			const Op *r = &g->ops[rd->op[k]];
			if (r->stream != m->stream) {
				ok = false;
			} else if (vm_kind(r->kind)) {
				const Tensor *y = &g->tensors[r->out[0]];
				ok = nq <= CUT_VIEWS && !y->is_output && y->dtype == xt->dtype;
				if (ok) {
					map[nq] = map[h];
					ok = vm_apply(&map[nq], g, r);
					c->view[c->nview++] = rd->op[k];
					q[nq++] = r->out[0];
				}
			} else {
				ok = u != x;
				leaf = true;
			}
		}
		if (ok && leaf)
			ok = leaf_of(g, c, x, u, &map[h]);
	}
	free(map);
	if (!ok || c->np < 2)
		return false;
	/* the parts by their columns, left to right */
	int order[IR_MM_GROUP_MAX], at[IR_MM_GROUP_MAX];
	for (int p = 0; p < c->np; p++) {
		int k = p;
		while (k > 0 && c->lo[order[k - 1]] > c->lo[p]) {
			order[k] = order[k - 1];
			k--;
		}
		order[k] = p;
	}
	int64_t lo[IR_MM_GROUP_MAX], hi[IR_MM_GROUP_MAX];
	for (int k = 0; k < c->np; k++) {
		at[order[k]] = k;
		lo[k] = c->lo[order[k]];
		hi[k] = c->hi[order[k]];
	}
	memcpy(c->lo, lo, sizeof lo);
	memcpy(c->hi, hi, sizeof hi);
	for (int l = 0; l < c->nleaf; l++)
		c->part[l] = at[c->part[l]];
	return true;
}

/* The cut at matmul op i, or false. */
static bool find_cut(const Graph *g, int i, const VmReaders *rd, const int *nread,
		     const bool *skip, Cut *c)
{
	int x = projection(g, i, rd, c);
	if (x < 0)
		return false;
	if (find_slices(g, x, rd, nread, c))
		return true;
	int add = c->add;
	memset(c, 0, sizeof *c);
	c->m = i;
	c->add = add;
	c->resh = -1;
	return find_tree(g, x, rd, skip, c);
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

/* Part [lo, hi) of the projection: its matmul (and bias add) into tensor `out`,
 * or into a new tensor like x (out < 0); the product before the add named after
 * tensor `name` (out's when -1). Returns the tensor written. */
static int emit_part(Rebuild *o, const Op *m, const Op *ad, int x, int64_t lo, int64_t hi, int out,
		     int name, int a0)
{
	Arena *a = o->g->arena;
	if (out < 0) {
		out = rb_tensor(o, x, arena_printf(a, "[:%lld:%lld]", (long long)lo, (long long)hi));
		o->tens[out].dim[o->tens[out].rank - 1] = hi - lo;
	}
	int w = columns(o->g, o->tens, &o->nt, m->in[1], lo, hi);
	o->inputs[o->nin++] = w;
	int mo = out;
	if (ad) {
		/* the product, then the add writes out */
		mo = rb_tensor(o, out, "");
		o->tens[mo].name = arena_printf(a, "%s:product", o->tens[name < 0 ? out : name].name);
	}
	Op mm = *m;
	int *in = ARENA_NEW(a, int, 2);
	in[0] = a0;
	in[1] = w;
	mm.in = in;
	mm.in_status = NULL;
	mm.out[0] = mo;
	mm.nout = 1;
	o->ops[o->k++] = mm;
	if (ad) {
		int bias = ad->in[0] == m->out[0] ? 1 : 0;
		int b = columns(o->g, o->tens, &o->nt, ad->in[bias], lo, hi);
		o->inputs[o->nin++] = b;
		Op add = *ad;
		int *ain = ARENA_NEW(a, int, 2);
		ain[bias] = b;
		ain[1 - bias] = mo;
		add.in = ain;
		add.in_status = NULL;
		add.out[0] = out;
		add.nout = 1;
		o->ops[o->k++] = add;
	}
	return out;
}

/* Cut c's ops, in place of its matmul. */
static void emit_cut(Rebuild *o, const Cut *c)
{
	const Graph *g = o->g;
	const Op *m = &g->ops[c->m], *ad = c->add >= 0 ? &g->ops[c->add] : NULL;
	const Op *rs = c->resh >= 0 ? &g->ops[c->resh] : NULL;
	int x = ad ? ad->out[0] : m->out[0];
	if (c->tree) {
		int a0 = m->in[0];
		if (c->rows_of >= 0) {
			/* T's rows in their own order, in the operand's shape */
			const Tensor *at = &o->tens[m->in[0]], *tt = &o->tens[c->rows_of];
			a0 = c->rows_of;
			if (tt->rank != at->rank || memcmp(tt->dim, at->dim, sizeof *at->dim * (size_t)at->rank)) {
				a0 = rb_tensor(o, m->in[0], ":in_order");
				rb_view(o, m, OP_RESHAPE, c->rows_of, a0, at->dim, NULL, at->rank);
			}
		}
		for (int p = 0; p < c->np; p++) {
			int y = emit_part(o, m, ad, x, c->lo[p], c->hi[p], -1, -1, a0);
			const Tensor *yt = &o->tens[y];
			for (int l = 0; l < c->nleaf; l++) {
				if (c->part[l] != p)
					continue;
				int u = c->leaf[l];
				const Tensor *ut = &o->tens[u];
				const Op *near = &g->ops[ut->producer];
				if (c->plain[l]) {
					rb_view(o, near, OP_RESHAPE, y, u, ut->dim, NULL, ut->rank);
					continue;
				}
				int src = y;
				if (yt->rank != ut->rank ||
				    memcmp(yt->dim, c->R[l], sizeof *yt->dim * (size_t)ut->rank)) {
					src = rb_tensor(o, u, ":rows");
					memcpy(o->tens[src].dim, c->R[l], sizeof *c->R[l] * (size_t)ut->rank);
					rb_view(o, near, OP_RESHAPE, y, src, c->R[l], NULL, ut->rank);
				}
				rb_view(o, near, OP_PERMUTE, src, u, NULL, c->P[l], ut->rank);
			}
		}
		return;
	}
	for (int q = 0; q < c->nsl; q++) {
		const Op *sl = &g->ops[c->sl[q]];
		int r = g->tensors[sl->in[0]].rank;
		int64_t lo = sl->attr->range[r - 1][0], hi = sl->attr->range[r - 1][1];
		int out = sl->out[0];
		/* the part before the reshape: the product's shape, hi - lo wide */
		int flat = out;
		if (rs) {
			flat = rb_tensor(o, m->out[0], "");
			o->tens[flat].dim[o->tens[flat].rank - 1] = hi - lo;
			o->tens[flat].name = arena_printf(g->arena, "%s:rows", o->tens[out].name);
		}
		emit_part(o, m, ad, x, lo, hi, flat, out, m->in[0]);
		if (rs) {
			/* the part's rows in the slice's shape */
			const Tensor *to = &o->tens[out];
			rb_view(o, rs, OP_RESHAPE, flat, out, to->dim, NULL, to->rank);
		}
	}
}

static void unsplit(Graph *g, SiblingInfo *info)
{
	int n = g->nops;
	int *nread = calloc((size_t)g->ntensors + 1, sizeof *nread);
	int *at = malloc(sizeof *at * (size_t)n);   /* the cut made at op i, or -1 */
	bool *skip = calloc((size_t)n, sizeof *skip);
	int ncut = 0, cap = 0, extra = 0, newops = 0;
	Cut *cuts = NULL, c;
	VmReaders rd;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < g->ops[i].nin; k++)
			nread[g->ops[i].in[k]]++;
	vm_readers(g, &rd);
	for (int i = 0; i < n; i++) {
		at[i] = -1;
		if (skip[i] || g->ops[i].kind != OP_MATMUL || !find_cut(g, i, &rd, nread, skip, &c))
			continue;
		bool taken = false;   /* an op of it in an earlier cut */
		for (int v = 0; v < c.nview; v++)
			taken |= skip[c.view[v]];
		if (taken || (c.add >= 0 && skip[c.add]))
			continue;
		if (ncut == cap) {
			cap = cap ? 2 * cap : 16;
			cuts = realloc(cuts, sizeof *cuts * (size_t)cap);
		}
		cuts[ncut] = c;
		at[i] = ncut++;
		skip[i] = true;
		if (c.add >= 0)
			skip[c.add] = true;
		if (c.resh >= 0)
			skip[c.resh] = true;
		for (int k = 0; k < c.nsl; k++)
			skip[c.sl[k]] = true;
		for (int v = 0; v < c.nview; v++)
			skip[c.view[v]] = true;
		int parts = c.tree ? c.np : c.nsl;
		extra += parts * 4 + c.nleaf + 1;
		newops += parts * 3 + c.nleaf * 2 + 1;
		info->nunsplit++;
		info->nparts += parts;
	}
	if (ncut) {
		Rebuild o;
		rb_begin(&o, g, extra, extra, newops);
		for (int i = 0; i < n; i++) {
			if (!skip[i])
				o.ops[o.k++] = g->ops[i];
			else if (at[i] >= 0)
				emit_cut(&o, &cuts[at[i]]);
		}
		rb_finish(&o);
	}
	vm_readers_free(&rd);
	free(nread);
	free(at);
	free(skip);
	free(cuts);
}

int pass_siblings(Graph *g, SiblingInfo *info)
{
	memset(info, 0, sizeof *info);
	pass_rotary(g, &info->nrot);
	pass_row_order(g, &info->nrows);
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
	if (info->nrot)
		buf_printf(out, "rotary: %d rotate_half%s of a projection computed as a matmul by "
			   "the weight's columns rotated (no slices, neg or cat)\n", info->nrot,
			   info->nrot == 1 ? "" : "s");
	if (info->nrows)
		buf_printf(out, "rows: %d matmul%s each computing its rows in the order the "
			   "views after it wanted (one permute in front instead of one after)\n",
			   info->nrows, info->nrows == 1 ? "" : "s");
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
