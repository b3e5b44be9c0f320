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

int pass_siblings(Graph *g, SiblingInfo *info)
{
	memset(info, 0, sizeof *info);
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
	if (info->ngroups)
		buf_printf(out, "siblings: %d group%s of matmuls sharing their first operand "
			   "(%d matmuls) brought together, each group for one launch\n",
			   info->ngroups, info->ngroups == 1 ? "" : "s", info->nmatmuls);
	if (info->nlone)
		buf_printf(out, "siblings: %d matmul%s left lone: an op reads two of a group "
			   "(as silu(gate) * up does), so each keeps the launch it has\n",
			   info->nlone, info->nlone == 1 ? "" : "s");
}
