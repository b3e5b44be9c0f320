/* row_order.c: a matmul computes its rows in the order its reader wants them
 * (passes.h, pass_row_order; before the search, not under --burn-exact).
 *
 * A matmul by a weight W [K, N] treats its rows apart: reordering the rows of its
 * first operand reorders the rows of its result the same way, and a bias added
 * along the last dim goes with them. nn.MultiheadAttention's export (torchvision's
 * ViT) works in [seq, batch, dim]: the attention's result, [batch, heads, seq,
 * head], is permuted to [seq, batch, heads, head] and flattened into the output
 * projection's rows, and the projection's result is reshaped to [seq, batch, dim]
 * and transposed back to [batch, seq, dim] for the residual add. The transpose
 * after it is a copy of the result (with the add in it); the permute in front is
 * one more.
 *
 * Here the permute after the matmul moves in front of it: the operand's rows are
 * read in the order the transpose would put the result's (one permute of the
 * attention's result, [batch, seq, heads, head], which the attention's launch
 * writes as it merges the heads), and the result is the transposed tensor itself,
 * through a reshape: the residual add becomes the matmul's epilogue. It applies
 * where
 *   - the result (or that plus a bias along its last dim) is read only by a chain
 *     of views whose end keeps the last dim and moves rows (view_map.c: every
 *     element once, the last dim N with step 1, the rest steps of N);
 *   - the first operand is a chain of views of a tensor T that holds a permute or
 *     a swap_dims (it is a copy already), and the operand with its rows in the new
 *     order is one permute of T's elements.
 * Each element is the same dot product over the same K, so no value changes. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

enum { RO_CHAIN = 8 };   /* views on either side of the matmul, at most */

typedef struct {
	int m, add;              /* the matmul, its bias add (-1: none) */
	int nchain, chain[RO_CHAIN]; /* the views after it, in op order */
	int z;                   /* the tensor they make */
	int t;                   /* the tensor under the operand's views */
	int rank;                /* the permute of T: reshape T to R, permute by P */
	int64_t R[IR_MAX_RANK];
	int P[IR_MAX_RANK];
	bool reshape_t, permute_t;
} Move;

/* The one op reading tensor x, or -1. */
static int only_reader(const VmReaders *rd, int x)
{
	return rd->first[x + 1] - rd->first[x] == 1 ? rd->op[rd->first[x]] : -1;
}

/* Whether b adds along y's last dim only (every other dim 1). */
static bool bias_along_last(const Tensor *b, const Tensor *y)
{
	if (b->rank < 1 || b->rank > y->rank || b->dim[b->rank - 1] != y->dim[y->rank - 1])
		return false;
	for (int d = 0; d < b->rank - 1; d++)
		if (b->dim[d] != 1)
			return false;
	return true;
}

static bool find_move(const Graph *g, const VmReaders *rd, const bool *skip, int i, Move *mv)
{
	const Op *m = &g->ops[i];
	if (m->kind != OP_MATMUL || m->in[0] == m->in[1])
		return false;
	const Tensor *w = &g->tensors[m->in[1]], *a = &g->tensors[m->in[0]];
	const Tensor *y = &g->tensors[m->out[0]];
	if (w->rank < 2 || a->rank < 2 || a->rank != y->rank || y->is_output)
		return false;
	for (int d = 0; d < w->rank - 2; d++)
		if (w->dim[d] != 1)
			return false;
	memset(mv, 0, sizeof *mv);
	mv->m = i;
	mv->add = -1;
	int x = m->out[0];
	int o = only_reader(rd, x);
	if (o >= 0 && g->ops[o].kind == OP_ADD && g->ops[o].nin == 2 &&
	    g->ops[o].stream == m->stream) {
		const Op *ad = &g->ops[o];
		int b = ad->in[0] == x ? ad->in[1] : ad->in[0];
		const Tensor *z = &g->tensors[ad->out[0]];
		if (b != x && g->tensors[b].data && bias_along_last(&g->tensors[b], y) && !z->is_output &&
		    z->rank == y->rank && !memcmp(z->dim, y->dim, sizeof *z->dim * (size_t)y->rank)) {
			mv->add = o;
			x = ad->out[0];
		}
	}
	/* the chain after it: views, each result read once, and where they end */
	const Tensor *xt = &g->tensors[x];
	int64_t n = xt->dim[xt->rank - 1], k = a->dim[a->rank - 1];
	ViewMap zm, am;
	vm_dense(&zm, xt);
	/* the operand's map replays the chain with its last dim K */
	int u = x;
	bool moves = false;
	for (;;) {
		int r = only_reader(rd, u);
		if (r < 0 || !vm_kind(g->ops[r].kind) || g->ops[r].stream != m->stream)
			break;
		const Op *v = &g->ops[r];
		const Tensor *vt = &g->tensors[v->out[0]];
		if (mv->nchain == RO_CHAIN || vt->is_output || v->kind == OP_SLICE ||
		    vt->dim[vt->rank - 1] != n || !vm_apply(&zm, g, v))
			return false;
		if (v->kind == OP_PERMUTE && v->attr->axes[vt->rank - 1] != vt->rank - 1)
			return false;
		if (v->kind == OP_SWAP_DIMS && (v->attr->axes[0] == vt->rank - 1 ||
						v->attr->axes[1] == vt->rank - 1))
			return false;
		moves |= v->kind != OP_RESHAPE;
		mv->chain[mv->nchain++] = r;
		u = v->out[0];
	}
	if (!moves || u == x)
		return false;
	mv->z = u;
	/* the end reads rows of x: its last dim is x's, step 1; the rest steps of N */
	int64_t ze[VM_SUB], zs[VM_SUB];
	int nz = vm_subdims(&zm, ze, zs);
	if (nz < 1 || zm.off != 0 || zs[nz - 1] != 1 || ze[nz - 1] != n)
		return false;
	for (int q = 0; q < nz - 1; q++)
		if (zs[q] % n != 0)
			return false;
	/* the operand: views of T, one of them a copy */
	int t = m->in[0];
	int up[RO_CHAIN], nup = 0;
	bool copy = false;
	while (g->tensors[t].producer >= 0 && nup < RO_CHAIN) {
		const Op *p = &g->ops[g->tensors[t].producer];
		if (!vm_kind(p->kind) || p->stream != m->stream)
			break;
		copy |= p->kind == OP_PERMUTE || p->kind == OP_SWAP_DIMS;
		up[nup++] = g->tensors[t].producer;
		t = p->in[0];
	}
	/* T and the views to it must outlive the earlier moves (one of them may have
	 * replaced the matmul that made T) */
	bool gone = g->tensors[t].producer >= 0 && skip[g->tensors[t].producer];
	for (int q = 0; q < nup; q++)
		gone |= skip[up[q]];
	if (!copy || gone)
		return false;
	vm_dense(&am, &g->tensors[t]);
	for (int q = nup - 1; q >= 0; q--)
		if (!vm_apply(&am, g, &g->ops[up[q]]))
			return false;
	for (int c = 0; c < mv->nchain; c++) {
		const Op *v = &g->ops[mv->chain[c]];
		const Tensor *vt = &g->tensors[v->out[0]];
		bool ok;
		if (v->kind == OP_RESHAPE) {
			int64_t dims[IR_MAX_RANK];
			memcpy(dims, vt->dim, sizeof *dims * (size_t)vt->rank);
			dims[vt->rank - 1] = k;
			ok = vm_reshape(&am, dims, vt->rank);
		} else {
			ok = vm_apply(&am, g, v);
		}
		if (!ok)
			return false;
	}
	/* the operand in the new order: a permute of T's elements */
	int64_t ae[VM_SUB], as[VM_SUB];
	int na = vm_subdims(&am, ae, as);
	int64_t numel = 1;
	const Tensor *tt = &g->tensors[t];
	for (int d = 0; d < tt->rank; d++)
		numel *= tt->dim[d];
	if (na < 1 || na > IR_MAX_RANK || !vm_dense_permute(na, ae, as, am.off, numel, mv->R, mv->P))
		return false;
	mv->t = t;
	mv->rank = na;
	mv->permute_t = false;
	for (int d = 0; d < na; d++)
		mv->permute_t |= mv->P[d] != d;
	mv->reshape_t = tt->rank != na || memcmp(tt->dim, mv->R, sizeof *mv->R * (size_t)na);
	return true;
}

static void emit_move(Rebuild *o, const Move *mv)
{
	const Graph *g = o->g;
	const Op *m = &g->ops[mv->m], *ad = mv->add >= 0 ? &g->ops[mv->add] : NULL;
	int a = m->in[0], src = mv->t;
	const Tensor *at = &o->tens[a];
	if (mv->reshape_t) {
		int r = rb_tensor(o, mv->t, ":rows");
		o->tens[r].rank = mv->rank;
		memcpy(o->tens[r].dim, mv->R, sizeof *mv->R * (size_t)mv->rank);
		rb_view(o, m, OP_RESHAPE, src, r, mv->R, NULL, mv->rank);
		src = r;
	}
	if (mv->permute_t) {
		int q = rb_tensor(o, src, ":reordered");
		for (int d = 0; d < mv->rank; d++)
			o->tens[q].dim[d] = mv->R[mv->P[d]];
		rb_view(o, m, OP_PERMUTE, src, q, NULL, mv->P, mv->rank);
		src = q;
	}
	/* a constant weight takes the reordered result's rank (leading 1s, the same
	 * bytes), so that the product is that result and its epilogue runs on it;
	 * another keeps the operand's rows, and a reshape makes the result */
	const Tensor *zt = &o->tens[mv->z], *wt = &o->tens[m->in[1]];
	bool direct = wt->data && zt->rank >= 2;
	if (ad) {
		const Tensor *bt = &o->tens[ad->in[ad->in[0] == m->out[0] ? 1 : 0]];
		direct &= bt->rank == zt->rank || bt->data;
	}
	int w = m->in[1];
	if (direct && wt->rank != zt->rank) {
		w = o->nt++;
		o->tens[w] = *wt;
		o->tens[w].rank = zt->rank;
		for (int d = 0; d < zt->rank; d++)
			o->tens[w].dim[d] = d < zt->rank - 2 ? 1 : wt->dim[wt->rank - zt->rank + d];
		o->tens[w].name = arena_printf(g->arena, "%s:rank%d", wt->name, zt->rank);
		o->inputs[o->nin++] = w;
	}
	int a2 = rb_tensor(o, a, ":reordered");
	if (direct) {
		o->tens[a2].rank = zt->rank;
		memcpy(o->tens[a2].dim, zt->dim, sizeof *zt->dim * (size_t)zt->rank);
		o->tens[a2].dim[zt->rank - 1] = at->dim[at->rank - 1];
	}
	rb_view(o, m, OP_RESHAPE, src, a2, o->tens[a2].dim, NULL, o->tens[a2].rank);
	int y = direct && !ad ? mv->z : rb_tensor(o, direct ? mv->z : m->out[0], ":reordered");
	Op mm = *m;
	int *in = ARENA_NEW(g->arena, int, 2);
	in[0] = a2;
	in[1] = w;
	mm.in = in;
	mm.in_status = NULL;
	mm.out[0] = y;
	o->ops[o->k++] = mm;
	if (ad) {
		int x = direct ? mv->z : rb_tensor(o, ad->out[0], ":reordered");
		Op add = *ad;
		int *ain = ARENA_NEW(g->arena, int, 2);
		int bias = ad->in[0] == m->out[0] ? 1 : 0, b = ad->in[bias];
		const Tensor *bt = &o->tens[b];
		if (direct && bt->rank != zt->rank) {
			/* the bias too, in the result's rank */
			int b2 = o->nt++;
			o->tens[b2] = *bt;
			o->tens[b2].rank = zt->rank;
			for (int d = 0; d < zt->rank; d++)
				o->tens[b2].dim[d] = d < zt->rank - bt->rank ? 1 : bt->dim[d - (zt->rank - bt->rank)];
			o->tens[b2].name = arena_printf(g->arena, "%s:rank%d", bt->name, zt->rank);
			o->inputs[o->nin++] = b2;
			b = b2;
		}
		ain[bias] = b;
		ain[1 - bias] = y;
		add.in = ain;
		add.in_status = NULL;
		add.out[0] = x;
		o->ops[o->k++] = add;
		y = x;
	}
	if (!direct)
		rb_view(o, &g->ops[mv->chain[mv->nchain - 1]], OP_RESHAPE, y, mv->z, zt->dim, NULL,
			  zt->rank);
}

/* Drop the views whose results nothing reads, last first. */
void pass_drop_dead_views(Graph *g)
{
	int *nread = calloc((size_t)g->ntensors + 1, sizeof *nread);
	bool *drop = calloc((size_t)g->nops + 1, sizeof *drop);
	bool any = false;
	for (int i = 0; i < g->nops; i++)
		for (int k = 0; k < g->ops[i].nin; k++)
			nread[g->ops[i].in[k]]++;
	for (int i = g->nops - 1; i >= 0; i--) {
		const Op *op = &g->ops[i];
		int y = op->out[0];
		if (!vm_kind(op->kind) || nread[y] || g->tensors[y].is_output)
			continue;
		drop[i] = any = true;
		nread[op->in[0]]--;
	}
	if (any) {
		pass_compact(g, drop);
		ir_finish(g);
	}
	free(nread);
	free(drop);
}

int pass_row_order(Graph *g, int *nmoved)
{
	*nmoved = 0;
	if (g->sym)
		return 0;
	int n = g->nops;
	VmReaders rd;
	vm_readers(g, &rd);
	bool *skip = calloc((size_t)n + 1, sizeof *skip);
	int *at = malloc(sizeof *at * ((size_t)n + 1));
	Move *mv = NULL;
	int nmv = 0, cap = 0;
	for (int i = 0; i < n; i++) {
		at[i] = -1;
		Move c;
		if (skip[i] || !find_move(g, &rd, skip, i, &c))
			continue;
		bool taken = c.add >= 0 && skip[c.add];
		for (int q = 0; q < c.nchain; q++)
			taken |= skip[c.chain[q]];
		if (taken)
			continue;
		if (nmv == cap) {
			cap = cap ? 2 * cap : 16;
			mv = realloc(mv, sizeof *mv * (size_t)cap);
		}
		mv[nmv] = c;
		at[i] = nmv++;
		skip[i] = true;
		if (c.add >= 0)
			skip[c.add] = true;
		for (int q = 0; q < c.nchain; q++)
			skip[c.chain[q]] = true;
	}
	if (nmv) {
		Rebuild o;
		rb_begin(&o, g, 7 * nmv, 2 * nmv, 4 * nmv);
		for (int i = 0; i < n; i++) {
			if (!skip[i])
				o.ops[o.k++] = g->ops[i];
			else if (at[i] >= 0)
				emit_move(&o, &mv[at[i]]);
		}
		rb_finish(&o);
		*nmoved = nmv;
	}
	vm_readers_free(&rd);
	free(skip);
	free(at);
	free(mv);
	return 0;
}
