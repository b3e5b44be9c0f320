/* rebuild.c: a graph rewritten op by op (passes.h, Rebuild). The passes that cut,
 * reorder or rotate matmuls before the search (siblings.c, row_order.c, rotary.c)
 * copy the ops they keep into new arrays, emit their new ops and tensors beside
 * them, and install the result: the ops in order, the unused tensors dropped. */
#include <string.h>

#include "passes.h"

void rb_begin(Rebuild *o, Graph *g, int tensors, int inputs, int ops)
{
	Arena *a = g->arena;
	memset(o, 0, sizeof *o);
	o->g = g;
	o->tens = ARENA_NEW(a, Tensor, g->ntensors + tensors + 1);
	memcpy(o->tens, g->tensors, sizeof *o->tens * (size_t)g->ntensors);
	o->nt = g->ntensors;
	o->inputs = ARENA_NEW(a, int, g->ninputs + inputs + 1);
	memcpy(o->inputs, g->inputs, sizeof *o->inputs * (size_t)g->ninputs);
	o->nin = g->ninputs;
	o->ops = ARENA_NEW(a, Op, g->nops + ops + 1);
}

int rb_tensor(Rebuild *o, int like, const char *suffix)
{
	int t = o->nt++;
	o->tens[t] = o->tens[like];
	o->tens[t].is_output = false;
	o->tens[t].role = ROLE_INTERMEDIATE;
	o->tens[t].data = NULL;
	o->tens[t].src = NULL;
	o->tens[t].producer = -1;
	o->tens[t].name = arena_printf(o->g->arena, "%s%s", o->tens[like].name, suffix);
	return t;
}

void rb_view(Rebuild *o, const Op *near, OpKind kind, int x, int y, const int64_t *shape,
	     const int *axes, int n)
{
	Arena *a = o->g->arena;
	Attrs *at = ARENA_NEW(a, Attrs, 1);
	at->has = kind == OP_RESHAPE ? A_SHAPE : A_AXES;
	at->n = n;
	for (int d = 0; d < n; d++) {
		if (kind == OP_RESHAPE)
			at->shape[d] = shape[d];
		else
			at->axes[d] = axes[d];
	}
	Op op = {.kind = kind, .stream = near->stream, .nin = 1, .nout = 1,
		 .in = ARENA_NEW(a, int, 1), .attr = at, .line = near->line, .col = near->col,
		 .name = near->name};
	op.in[0] = x;
	op.out[0] = y;
	o->ops[o->k++] = op;
}

void rb_finish(Rebuild *o)
{
	Graph *g = o->g;
	g->tensors = o->tens;
	g->ntensors = o->nt;
	g->inputs = o->inputs;
	g->ninputs = o->nin;
	g->ops = o->ops;
	g->nops = o->k;
	pass_compact(g, NULL);
	ir_finish(g);
	pass_drop_dead_views(g);
}
