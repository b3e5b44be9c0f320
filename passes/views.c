/* views.c: un-fused views that launch nothing (passes.h, pass_view_sink).
 *
 * The search leaves some views alone in a launch of their own (burn never fuses a
 * single-use view; permute, expand and slice close its fusers). In burn such a view
 * is metadata: the handle gets new strides and the next kernel reads through them.
 * Here every tensor in memory is dense and in C order, so instead the view sinks
 * into the kernels that read its result: each reading launch gets the view's op
 * (and the views it reads in turn) in front of its own ops, and its kernel, built
 * from that longer op list, reads the view's input buffer through the view's index
 * arithmetic, as it does for a view the search fused. The view's launch gets no
 * kernel and its result no buffer. This is decided after the search, from the
 * schedule alone: no search decision changes.
 *
 * A lone view sinks when its result is not a graph output and every op reading it
 * runs in a launch that can take it (pass_view_sink's comment); otherwise it keeps
 * its copy kernel (a reshape whose input is in memory stays an alias, as before). The
 * decision walks the launches backwards, so a view's readers are decided before it:
 * a view read by a view launch sinks only when that one does. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* A launch of exactly one view op. */
static bool view_launch(const Graph *g, const Launch *l)
{
	return l->nops == 1 && ir_ops[g->ops[l->ops[0]].kind].family == FAM_VIEW;
}

/* Whether launch l (not a lone view) may read the result y of view op v through
 * it. 0: no; 1: yes, the view may come after other sunk views; 2: yes, as a
 * transposed operand of l's matmul, read straight from memory (the view's input
 * must be in memory: no view before it may sink). mm_taken: sunk views l's matmul
 * already takes. */
static int consumer_takes(const Graph *g, const Launch *l, const Op *v, int y, int mm_taken)
{
	int mm = -1, lead = 0;
	for (int k = 0; k < l->nops; k++) {
		const Op *op = &g->ops[l->ops[k]];
		OpFamily f = ir_ops[op->kind].family;
		/* a cat or a gather reads its operands through the evaluator
		 * (codegen/kernel_join_window.c), so through views in front of it
		 * too: an embedding's index expanded to the table's width (the
		 * importer's Gather) is read in place */
		if ((f == FAM_JOIN && op->kind != OP_CAT && op->kind != OP_GATHER) ||
		    f == FAM_MODULE || f == FAM_CONTROL)
			return 0;
		if (f == FAM_MATMUL) {
			if (mm >= 0)
				return 0;
			mm = k;
		} else if (mm < 0) {
			if (op->kind != OP_SWAP_DIMS && op->kind != OP_PERMUTE)
				lead = -1;
			else if (lead >= 0)
				lead++;
		}
	}
	if (mm < 0)
		return 1;
	/* the matmul kernel's leading operand views (codegen/matmul_shape.c,
	 * cg_matmul_index): at most two swap_dims / full permutes (three in front of
	 * an attention op: q, kt and v), each reading memory, each result an operand
	 * of the matmul and read by nothing else */
	const Op *m = &g->ops[l->ops[mm]];
	bool att = m->kind == OP_ATTENTION;
	if (lead < 0 || lead + mm_taken + 1 > (att ? 3 : 2))
		return 0;
	if (v->kind != OP_SWAP_DIMS && v->kind != OP_PERMUTE)
		return 0;
	if (v->kind == OP_PERMUTE && (!v->attr || v->attr->n != g->tensors[y].rank))
		return 0;
	if (m->in[0] != y && m->in[1] != y && !(att && m->in[2] == y))
		return 0;
	for (int k = 0; k < l->nops; k++) {
		if (k == mm)
			continue;
		const Op *op = &g->ops[l->ops[k]];
		for (int j = 0; j < op->nin; j++)
			if (op->in[j] == y)
				return 0;
	}
	return 2;
}

/* Whether input j of op is its first operand naming that tensor (an op reading a
 * tensor twice counts as one reader). */
static bool first_read(const Op *op, int j)
{
	for (int q = 0; q < j; q++)
		if (op->in[q] == op->in[j])
			return false;
	return true;
}

ViewSink *pass_view_sink(const Schedule *s)
{
	const Graph *g = s->g;
	int no = g->nops ? g->nops : 1, nt = g->ntensors ? g->ntensors : 1;
	ViewSink *v = xcalloc(1, sizeof *v);
	v->g = g;
	v->sunk = xcalloc((size_t)no, sizeof *v->sunk);
	v->producer = xmalloc(sizeof *v->producer * (size_t)nt);
	v->pos = xmalloc(sizeof *v->pos * (size_t)no);
	v->mark = xcalloc((size_t)no, sizeof *v->mark);
	for (int t = 0; t < nt; t++)
		v->producer[t] = -1;
	for (int i = 0; i < g->nops; i++) {
		v->pos[i] = -1;
		for (int j = 0; j < g->ops[i].nout; j++)
			v->producer[g->ops[i].out[j]] = i;
	}

	/* the launches in execution order, and where each op runs */
	int nl = 0;
	for (int i = 0; i < s->nsteps; i++)
		nl += s->steps[i].nlaunch;
	const Launch **ls = xmalloc(sizeof *ls * (size_t)(nl ? nl : 1));
	int *where = xmalloc(sizeof *where * (size_t)no);
	for (int i = 0; i < g->nops; i++)
		where[i] = -1;
	nl = 0;
	int p = 0;
	for (int i = 0; i < s->nsteps; i++)
		for (int k = 0; k < s->steps[i].nlaunch; k++) {
			const Launch *l = &s->steps[i].launch[k];
			for (int j = 0; j < l->nops; j++) {
				where[l->ops[j]] = nl;
				v->pos[l->ops[j]] = p++;
			}
			ls[nl++] = l;
		}

	/* the ops reading each tensor (each op once) */
	int *rstart = xcalloc((size_t)nt + 1, sizeof *rstart);
	for (int i = 0; i < g->nops; i++)
		for (int j = 0; j < g->ops[i].nin; j++) {
			if (first_read(&g->ops[i], j))
				rstart[g->ops[i].in[j] + 1]++;
		}
	for (int t = 0; t < nt; t++)
		rstart[t + 1] += rstart[t];
	int *rop = xmalloc(sizeof *rop * (size_t)(rstart[nt] ? rstart[nt] : 1));
	int *fill = xmalloc(sizeof *fill * (size_t)nt);
	memcpy(fill, rstart, sizeof *fill * (size_t)nt);
	for (int i = 0; i < g->nops; i++)
		for (int j = 0; j < g->ops[i].nin; j++) {
			if (first_read(&g->ops[i], j))
				rop[fill[g->ops[i].in[j]]++] = i;
		}

	bool *direct = xcalloc((size_t)no, sizeof *direct);   /* read straight by a matmul */
	int *mm_taken = xcalloc((size_t)(nl ? nl : 1), sizeof *mm_taken);
	for (int li = nl - 1; li >= 0; li--) {
		const Launch *l = ls[li];
		if (!view_launch(g, l))
			continue;
		int vo = l->ops[0];
		const Op *op = &g->ops[vo];
		int y = op->out[0];
		if (g->tensors[y].is_output || g->tensors[y].role == ROLE_INPUT ||
		    rstart[y + 1] == rstart[y])
			continue;
		bool ok = true, needs_memory = false;
		for (int r = rstart[y]; r < rstart[y + 1] && ok; r++) {
			int rl = where[rop[r]];
			if (rl < 0 || rl <= li) {
				ok = false;
			} else if (view_launch(g, ls[rl])) {
				/* a sunk view passes it on; one that keeps its copy kernel
				 * reads through it as any kernel does, but for a reshape,
				 * which stays an alias of its input in memory */
				int w = ls[rl]->ops[0];
				ok = v->sunk[w] ? !direct[w] : g->ops[w].kind != OP_RESHAPE;
			} else {
				int how = consumer_takes(g, ls[rl], op, y, mm_taken[rl]);
				ok = how > 0;
				needs_memory |= how == 2;
			}
		}
		if (!ok)
			continue;
		v->sunk[vo] = true;
		direct[vo] = needs_memory;
		for (int r = rstart[y]; r < rstart[y + 1]; r++) {
			int rl = where[rop[r]];
			if (!view_launch(g, ls[rl]) &&
			    consumer_takes(g, ls[rl], op, y, mm_taken[rl]) == 2)
				mm_taken[rl]++;
		}
	}
	/* a reshape of a tensor in memory stays an alias (codegen/lower.c): nothing to
	 * read through, and its readers keep their kernels */
	for (int li = 0; li < nl; li++) {
		const Launch *l = ls[li];
		if (!view_launch(g, l) || !v->sunk[l->ops[0]])
			continue;
		const Op *op = &g->ops[l->ops[0]];
		int in = v->producer[op->in[0]];
		if (op->kind == OP_RESHAPE && (in < 0 || !v->sunk[in]))
			v->sunk[l->ops[0]] = false;
	}
	for (int i = 0; i < g->nops; i++)
		v->nsunk += v->sunk[i];

	free(ls);
	free(where);
	free(rstart);
	free(rop);
	free(fill);
	free(direct);
	free(mm_taken);
	return v;
}

static int by_pos(const void *a, const void *b, void *arg)
{
	const int *pos = arg;
	int x = pos[*(const int *)a], y = pos[*(const int *)b];
	return (x > y) - (x < y);
}

static void add_chain(ViewSink *v, int t, int *out, int *n)
{
	int p = v->producer[t];
	while (p >= 0 && v->sunk[p] && v->mark[p] != v->stamp) {
		v->mark[p] = v->stamp;
		out[(*n)++] = p;
		p = v->producer[v->g->ops[p].in[0]];
	}
}

int pass_view_chain(ViewSink *v, const Launch *l, int *out)
{
	if (!v->nsunk)
		return 0;
	v->stamp++;
	int n = 0;
	for (int k = 0; k < l->nops; k++) {
		const Op *op = &v->g->ops[l->ops[k]];
		for (int j = 0; j < op->nin; j++)
			add_chain(v, op->in[j], out, &n);
	}
	/* execution order (insertion sort: chains are short) */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && by_pos(&out[j - 1], &out[j], v->pos) > 0; j--) {
			int t = out[j];
			out[j] = out[j - 1];
			out[j - 1] = t;
		}
	return n;
}

void pass_view_sink_free(ViewSink *v)
{
	if (!v)
		return;
	free(v->sunk);
	free(v->producer);
	free(v->pos);
	free(v->mark);
	free(v);
}
