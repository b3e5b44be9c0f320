/* view_map.c: where a chain of views reads its source (passes.h, ViewMap).
 *
 * A view's element i of its result is one element of its input; a chain of them,
 * one element of the tensor the chain starts from. Where that map is strided (each
 * dim of the result steps by a fixed number of the source's elements, from an
 * offset) a pass can see what the chain reads as a whole: siblings.c asks which
 * columns of a packed projection a chain of head splits reads, and whether the
 * chain is then one reshape and one permute of the columns it reads.
 *
 * One step at a time is not enough: nn.MultiheadAttention's export reshapes q of
 * [seq, batch, dim] to [seq, batch * heads, head], which no strides describe (batch
 * and heads are not neighbours in memory), and a later transpose and reshape give
 * [batch, heads, seq, head], which strides do. So a dim here is a product of
 * sub-dims, outer first, each with its own extent and stride: a reshape that merges
 * dims keeps their sub-dims apart, and one that splits a dim again takes them back
 * (splitting a sub-dim where the split falls inside it). The map is strided when,
 * at the end, each dim's sub-dims fold into one. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

void vm_dense(ViewMap *v, const Tensor *t)
{
	memset(v, 0, sizeof *v);
	v->rank = t->rank;
	int64_t s = 1;
	for (int d = t->rank - 1; d >= 0; d--) {
		v->ext[d] = t->dim[d];
		v->str[d] = s;
		s *= t->dim[d];
	}
	for (int d = 0; d <= t->rank; d++)
		v->first[d] = d;
}

/* The sub-dims of every dim, outer first, unit ones left out: e[], s[]. */
static int flatten(const ViewMap *v, int64_t *e, int64_t *s)
{
	int n = 0;
	for (int k = 0; k < v->first[v->rank]; k++)
		if (v->ext[k] != 1) {
			e[n] = v->ext[k];
			s[n++] = v->str[k];
		}
	return n;
}

bool vm_reshape(ViewMap *v, const int64_t *dims, int rank)
{
	int64_t e[VM_SUB], s[VM_SUB];
	int n = flatten(v, e, s), k = 0, q = 0;
	ViewMap w;
	memset(&w, 0, sizeof w);
	w.rank = rank;
	w.off = v->off;
	for (int d = 0; d < rank; d++) {
		w.first[d] = q;
		int64_t need = dims[d];
		if (need < 1)
			return false;
		while (need > 1) {
			if (k >= n || q >= VM_SUB)
				return false;
			if (e[k] <= need) {
				if (need % e[k])
					return false;
				w.ext[q] = e[k];
				w.str[q++] = s[k];
				need /= e[k++];
			} else {
				/* the split falls inside sub-dim k: its outer part here */
				if (e[k] % need)
					return false;
				e[k] /= need;
				w.ext[q] = need;
				w.str[q++] = s[k] * e[k];
				need = 1;
			}
		}
	}
	w.first[rank] = q;
	if (k != n)
		return false;
	*v = w;
	return true;
}

bool vm_permute(ViewMap *v, const int *axes, int n)
{
	if (n != v->rank)
		return false;
	ViewMap w;
	memset(&w, 0, sizeof w);
	w.rank = n;
	w.off = v->off;
	int q = 0;
	bool seen[IR_MAX_RANK] = {0};
	for (int d = 0; d < n; d++) {
		int a = axes[d];
		if (a < 0 || a >= n || seen[a])
			return false;
		seen[a] = true;
		w.first[d] = q;
		for (int k = v->first[a]; k < v->first[a + 1]; k++) {
			w.ext[q] = v->ext[k];
			w.str[q++] = v->str[k];
		}
	}
	w.first[n] = q;
	*v = w;
	return true;
}

/* Dim d to [a, e): the outer sub-dims fixed or narrowed, as far as the range
 * allows; false where it cuts across sub-dims. */
static bool slice_dim(ViewMap *v, int d, int64_t a, int64_t e)
{
	int64_t ext[VM_SUB], str[VM_SUB];
	int n = 0;
	for (int k = v->first[d]; k < v->first[d + 1]; k++)
		if (v->ext[k] != 1) {
			ext[n] = v->ext[k];
			str[n++] = v->str[k];
		}
	int o = 0;   /* the outermost sub-dim still to cut */
	for (;;) {
		if (o == n)
			return a == 0 && e == 1;
		int64_t inner = 1;
		for (int k = o + 1; k < n; k++)
			inner *= ext[k];
		if (a % inner == 0 && e % inner == 0) {
			v->off += a / inner * str[o];
			ext[o] = (e - a) / inner;
			break;
		}
		if (a / inner != (e - 1) / inner)
			return false;
		v->off += a / inner * str[o];
		int64_t base = a / inner * inner;
		a -= base;
		e -= base;
		o++;
	}
	/* write dim d's sub-dims back (fewer or as many as before) */
	int at = v->first[d], was = v->first[d + 1] - at, now = n - o;
	int64_t te[VM_SUB], ts[VM_SUB];
	int tail = v->first[v->rank] - v->first[d + 1];
	memcpy(te, v->ext + v->first[d + 1], sizeof *te * (size_t)tail);
	memcpy(ts, v->str + v->first[d + 1], sizeof *ts * (size_t)tail);
	memcpy(v->ext + at, ext + o, sizeof *ext * (size_t)now);
	memcpy(v->str + at, str + o, sizeof *str * (size_t)now);
	memcpy(v->ext + at + now, te, sizeof *te * (size_t)tail);
	memcpy(v->str + at + now, ts, sizeof *ts * (size_t)tail);
	for (int k = d + 1; k <= v->rank; k++)
		v->first[k] += now - was;
	return true;
}

bool vm_apply(ViewMap *v, const Graph *g, const Op *op)
{
	const Tensor *y = &g->tensors[op->out[0]];
	const Attrs *at = op->attr;
	switch (op->kind) {
	case OP_RESHAPE:
		return vm_reshape(v, y->dim, y->rank);
	case OP_PERMUTE:
		return at && vm_permute(v, at->axes, at->n);
	case OP_SWAP_DIMS: {
		if (!at || at->axes[0] < 0 || at->axes[0] >= v->rank || at->axes[1] < 0 ||
		    at->axes[1] >= v->rank)
			return false;
		int axes[IR_MAX_RANK];
		for (int d = 0; d < v->rank; d++)
			axes[d] = d;
		axes[at->axes[0]] = at->axes[1];
		axes[at->axes[1]] = at->axes[0];
		return vm_permute(v, axes, v->rank);
	}
	case OP_SLICE:
		if (!at || at->n > v->rank || y->rank != v->rank)
			return false;
		for (int d = 0; d < at->n; d++) {
			int64_t a = at->range[d][0], e = at->range[d][1];
			if (a < 0 || e <= a || e - a != y->dim[d] || !slice_dim(v, d, a, e))
				return false;
		}
		return true;
	default:
		return false;
	}
}

int vm_subdims(const ViewMap *v, int64_t *ext, int64_t *str)
{
	int n = 0;
	for (int d = 0; d < v->rank; d++) {
		int at = n;
		for (int k = v->first[d]; k < v->first[d + 1]; k++) {
			if (v->ext[k] == 1)
				continue;
			if (n > at && str[n - 1] == v->ext[k] * v->str[k]) {
				ext[n - 1] *= v->ext[k];
				str[n - 1] = v->str[k];
			} else {
				ext[n] = v->ext[k];
				str[n++] = v->str[k];
			}
		}
	}
	return n;
}

bool vm_strided(const ViewMap *v, int64_t *ext, int64_t *str)
{
	for (int d = 0; d < v->rank; d++) {
		int64_t e = 1, s = 0;
		for (int k = v->first[d]; k < v->first[d + 1]; k++) {
			if (v->ext[k] == 1)
				continue;
			if (e == 1) {
				e = v->ext[k];
				s = v->str[k];
			} else if (s == v->ext[k] * v->str[k]) {
				e *= v->ext[k];
				s = v->str[k];
			} else {
				return false;
			}
		}
		ext[d] = e;
		str[d] = s;
	}
	return true;
}

bool vm_dense_permute(int rank, const int64_t *ext, const int64_t *str, int64_t off,
		      int64_t numel, int64_t *R, int *P)
{
	int order[IR_MAX_RANK], n = 0;
	for (int d = 0; d < rank; d++)
		if (ext[d] != 1) {
			int k = n++;
			while (k > 0 && str[order[k - 1]] < str[d]) {
				order[k] = order[k - 1];
				k--;
			}
			order[k] = d;
		}
	int64_t want = 1;
	for (int k = n - 1; k >= 0; k--) {
		if (str[order[k]] != want)
			return false;
		want *= ext[order[k]];
	}
	if (off != 0 || want != numel)
		return false;
	for (int d = 0; d < rank; d++)
		if (ext[d] == 1)
			order[n++] = d;
	/* R's dim k is dim order[k]; the permute's result dim d is R's dim P[d] */
	for (int k = 0; k < rank; k++) {
		R[k] = ext[order[k]];
		P[order[k]] = k;
	}
	return true;
}

bool vm_kind(OpKind k)
{
	return k == OP_RESHAPE || k == OP_PERMUTE || k == OP_SWAP_DIMS || k == OP_SLICE;
}

void vm_readers(const Graph *g, VmReaders *r)
{
	int nt = g->ntensors;
	r->first = calloc((size_t)nt + 2, sizeof *r->first);
	for (int i = 0; i < g->nops; i++)
		for (int k = 0; k < g->ops[i].nin; k++)
			r->first[g->ops[i].in[k] + 1]++;
	for (int t = 0; t <= nt; t++)
		r->first[t + 1] += r->first[t];
	r->op = malloc(sizeof *r->op * ((size_t)r->first[nt + 1] + 1));
	int *at = malloc(sizeof *at * ((size_t)nt + 1));
	memcpy(at, r->first, sizeof *at * ((size_t)nt + 1));
	for (int i = 0; i < g->nops; i++)
		for (int k = 0; k < g->ops[i].nin; k++)
			r->op[at[g->ops[i].in[k]]++] = i;
	free(at);
}

void vm_readers_free(VmReaders *r)
{
	free(r->first);
	free(r->op);
}
