/* rotary.c: rotate_half of a projection computed as a projection (passes.h,
 * pass_rotary; before the search, not under --burn-exact).
 *
 * Rotary position embeddings (Llama and the models after it) rotate q and k as
 * q * cos + rotate_half(q) * sin, where rotate_half(t) = cat(-t[..., h:], t[..., :h])
 * along the head dim of 2h. Exported, that is two slices, a neg and a cat: three
 * kernels a tensor (the search fuses none of them: a cat closes every fuser), each
 * writing half or all of q again, before the multiply and add.
 *
 * When t is a chain of views of a projection y = x W (+ b) whose last dim is the
 * head dim, each head's 2h columns of y contiguous (view_map.c: t's last dim steps
 * 1, every other dim and the offset whole multiples of 2h), rotate_half(t) is the
 * same chain of views of x W' (+ b'), W' the columns of W moved by h within each
 * block of 2h and negated where they came from the second half. Column c of x W'
 * is the dot product of column c -+ h of x W with every product negated: the same
 * value, negated exactly (an exact zero's sign aside: a sum that cancels gives +0
 * either way, where neg would turn it into -0). So the cat becomes one more matmul of x, a sibling of
 * the projection (passes/siblings.c puts it in the projection's launch), and the
 * multiply and add read both through their views in one kernel. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

enum { ROT_CHAIN = 8 };

typedef struct {
	int cat, neg;            /* the ops replaced */
	int m, add;              /* the projection: its matmul, its bias add (-1: none) */
	int nchain, chain[ROT_CHAIN]; /* the views from the projection to t */
	int64_t h;               /* half the head dim */
} Rot;

static int producer_op(const Graph *g, int t, OpKind kind)
{
	int p = g->tensors[t].producer;
	return p >= 0 && g->ops[p].kind == kind ? p : -1;
}

/* Whether slice op s takes [a, e) of the last dim of its input and all of every
 * other dim. */
static bool half_slice(const Graph *g, const Op *s, int64_t a, int64_t e)
{
	const Tensor *t = &g->tensors[s->in[0]];
	int r = t->rank;
	if (!s->attr || s->attr->n > r)
		return false;
	for (int d = 0; d < s->attr->n; d++) {
		int64_t lo = s->attr->range[d][0], hi = s->attr->range[d][1];
		if (d == r - 1 ? lo != a || hi != e : lo != 0 || hi != t->dim[d])
			return false;
	}
	return s->attr->n == r || (a == 0 && e == t->dim[r - 1]);
}

static bool find_rot(const Graph *g, const int *nread, int i, Rot *rt)
{
	const Op *c = &g->ops[i];
	const Tensor *ct = &g->tensors[c->out[0]];
	if (c->kind != OP_CAT || c->nin != 2 || !c->attr || c->attr->axis != ct->rank - 1)
		return false;
	int ng = producer_op(g, c->in[0], OP_NEG);
	int s1 = producer_op(g, c->in[1], OP_SLICE);
	if (ng < 0 || s1 < 0 || nread[c->in[0]] != 1 || g->tensors[c->in[0]].is_output)
		return false;
	int s2 = producer_op(g, g->ops[ng].in[0], OP_SLICE);
	if (s2 < 0 || g->ops[s1].in[0] != g->ops[s2].in[0])
		return false;
	int t = g->ops[s1].in[0];
	const Tensor *tt = &g->tensors[t];
	int64_t hd = tt->dim[tt->rank - 1], h = hd / 2;
	if (hd < 2 || hd % 2 || !half_slice(g, &g->ops[s1], 0, h) ||
	    !half_slice(g, &g->ops[s2], h, hd) || !ir_dtype_is_float(tt->dtype))
		return false;
	memset(rt, 0, sizeof *rt);
	rt->cat = i;
	rt->neg = ng;
	rt->h = h;
	/* up the views to the projection */
	int up[ROT_CHAIN], nup = 0, y = t;
	for (;;) {
		int p = g->tensors[y].producer;
		if (p < 0 || !vm_kind(g->ops[p].kind) || g->ops[p].kind == OP_SLICE)
			break;
		if (nup == ROT_CHAIN)
			return false;
		up[nup++] = p;
		y = g->ops[p].in[0];
	}
	rt->add = producer_op(g, y, OP_ADD);
	int mo = y;
	if (rt->add >= 0) {
		const Op *ad = &g->ops[rt->add];
		int k = g->tensors[ad->in[0]].producer >= 0 &&
			g->ops[g->tensors[ad->in[0]].producer].kind == OP_MATMUL ? 0 : 1;
		const Tensor *b = &g->tensors[ad->in[1 - k]];
		if (!b->data || b->dim[b->rank - 1] != g->tensors[y].dim[g->tensors[y].rank - 1])
			return false;
		for (int d = 0; d < b->rank - 1; d++)
			if (b->dim[d] != 1)
				return false;
		mo = ad->in[k];
	}
	rt->m = producer_op(g, mo, OP_MATMUL);
	if (rt->m < 0)
		return false;
	const Op *m = &g->ops[rt->m];
	const Tensor *w = &g->tensors[m->in[1]], *yt = &g->tensors[y];
	if (!w->data || w->rank < 2 || m->in[0] == m->in[1] || w->dtype != tt->dtype ||
	    m->stream != c->stream)
		return false;
	for (int d = 0; d < w->rank - 2; d++)
		if (w->dim[d] != 1)
			return false;
	/* t's last dim is the head dim: each head's columns of y contiguous */
	ViewMap vm;
	vm_dense(&vm, yt);
	for (int q = nup - 1; q >= 0; q--) {
		if (!vm_apply(&vm, g, &g->ops[up[q]]))
			return false;
		rt->chain[rt->nchain++] = up[q];
	}
	int64_t ext[IR_MAX_RANK], str[IR_MAX_RANK];
	if (!vm_strided(&vm, ext, str) || yt->dim[yt->rank - 1] % hd || vm.off % hd ||
	    str[tt->rank - 1] != 1)
		return false;
	for (int d = 0; d < tt->rank - 1; d++)
		if (ext[d] > 1 && str[d] % hd)
			return false;
	return true;
}

/* Constant t with the columns of its last dim moved by h within each block of 2h,
 * those from the second half negated (the sign bit flipped). */
static int rotated(Rebuild *o, int t, int64_t h)
{
	const Tensor *src = &o->tens[t];
	size_t es = (size_t)ir_dtype_size(src->dtype);
	int64_t n = src->dim[src->rank - 1], rows = 1;
	for (int d = 0; d < src->rank - 1; d++)
		rows *= src->dim[d];
	unsigned char *dst = arena_alloc_raw(o->g->arena, (size_t)(rows * n) * es + 16);
	const unsigned char *s = src->data;
	for (int64_t r = 0; r < rows; r++)
		for (int64_t c = 0; c < n; c++) {
			int64_t d = c % (2 * h), from = d < h ? c + h : c - h;
			unsigned char *e = dst + (size_t)(r * n + c) * es;
			memcpy(e, s + (size_t)(r * n + from) * es, es);
			if (d < h)
				e[es - 1] ^= 0x80;   /* little-endian: the sign bit */
		}
	int id = o->nt++;
	Tensor *w = &o->tens[id];
	*w = *src;
	w->data = dst;
	w->src = NULL;
	w->is_output = false;
	w->role = ROLE_INPUT;
	w->producer = -1;
	w->name = arena_printf(o->g->arena, "%s:rotated", src->name);
	o->inputs[o->nin++] = id;
	return id;
}

/* The views chain[from..to) of rotation r applied to y, each writing a new tensor
 * (the last one writing last, when last >= 0); returns the last one's tensor. */
static int rot_views(Rebuild *o, const Rot *r, int from, int to, int y, int last)
{
	const Graph *g = o->g;
	for (int q = from; q < to; q++) {
		Op v = g->ops[r->chain[q]];
		int out = q == to - 1 && last >= 0 ? last : rb_tensor(o, v.out[0], ":rotated");
		v.in = ARENA_NEW(g->arena, int, 1);
		v.in[0] = y;
		v.in_status = NULL;
		v.out[0] = out;
		o->ops[o->k++] = v;
		y = out;
	}
	return y;
}

int pass_rotary(Graph *g, int *nrot)
{
	*nrot = 0;
	if (g->sym)
		return 0;
	int n = g->nops;
	int *nread = calloc((size_t)g->ntensors + 1, sizeof *nread);
	for (int i = 0; i < n; i++)
		for (int k = 0; k < g->ops[i].nin; k++)
			nread[g->ops[i].in[k]]++;
	Rot *rt = NULL;
	int nrt = 0, cap = 0;
	int *at = malloc(sizeof *at * ((size_t)n + 1));
	bool *drop = calloc((size_t)n + 1, sizeof *drop);
	for (int i = 0; i < n; i++) {
		Rot r;
		at[i] = -1;
		if (g->ops[i].kind != OP_CAT || !find_rot(g, nread, i, &r))
			continue;
		if (nrt == cap) {
			cap = cap ? 2 * cap : 16;
			rt = realloc(rt, sizeof *rt * (size_t)cap);
		}
		rt[nrt] = r;
		at[i] = nrt++;
		drop[r.neg] = true;
	}
	if (nrt) {
		Rebuild o;
		rb_begin(&o, g, nrt * (4 + ROT_CHAIN), 2 * nrt, nrt * (2 + ROT_CHAIN));
		int *made = malloc(sizeof *made * (size_t)nrt);   /* each rotation's product */
		for (int i = 0; i < n; i++) {
			if (drop[i])
				continue;
			if (at[i] < 0)
				o.ops[o.k++] = g->ops[i];
			/* the rotated projection right after the projection (its bias add
			 * after the add), then every view of the chain but the last; that
			 * one where the cat was */
			for (int q = 0; q < nrt; q++) {
				const Rot *r = &rt[q];
				const Op *m = &g->ops[r->m], *ad = r->add >= 0 ? &g->ops[r->add] : NULL;
				if (i == r->m) {
					int w = rotated(&o, m->in[1], r->h);
					Op mm = *m;
					mm.in = ARENA_NEW(g->arena, int, 2);
					mm.in[0] = m->in[0];
					mm.in[1] = w;
					mm.in_status = NULL;
					mm.out[0] = made[q] = rb_tensor(&o, m->out[0], ":rotated");
					o.ops[o.k++] = mm;
				}
				if (ad && i == r->add) {
					int side = ad->in[0] == m->out[0] ? 1 : 0;
					Op add = *ad;
					add.in = ARENA_NEW(g->arena, int, 2);
					add.in[side] = rotated(&o, ad->in[side], r->h);
					add.in[1 - side] = made[q];
					add.in_status = NULL;
					add.out[0] = made[q] = rb_tensor(&o, ad->out[0], ":rotated");
					o.ops[o.k++] = add;
				}
				if (i == (ad ? r->add : r->m))
					made[q] = rot_views(&o, r, 0, r->nchain - 1, made[q], -1);
			}
			if (at[i] < 0)
				continue;
			const Rot *r = &rt[at[i]];
			int y = made[at[i]], cat = g->ops[i].out[0];
			if (r->nchain > 0) {
				rot_views(&o, r, r->nchain - 1, r->nchain, y, cat);
			} else {
				/* the projection is t itself: a reshape to the same shape */
				const Tensor *ct = &o.tens[cat];
				rb_view(&o, &g->ops[i], OP_RESHAPE, y, cat, ct->dim, NULL, ct->rank);
			}
		}
		free(made);
		rb_finish(&o);
		*nrot = nrt;
	}
	free(nread);
	free(at);
	free(drop);
	free(rt);
	return 0;
}
