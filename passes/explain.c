/* explain.c: `fusec explain`: why each op was or was not fused, from the record.
 *
 * For each op: its segment and step, the kernel that runs it (fused by which fuser,
 * or un-fused), the block it was settled in and, for every fuser of that block,
 * whether it was ready, its score, and the op it closed on with the reason. An op
 * executed through a cache hit was decided when its plan was explored; the op at
 * the same place of the exploring step stands in for it. */
#include <stdlib.h>
#include <string.h>

#include "search.h"

typedef struct {
	int step, launch;      /* where the op ran */
	int block_ev;          /* EV_BLOCK event that settled it, -1 none */
} OpInfo2;

static const char *step_kind(const Step *st)
{
	switch (st->kind) {
	case STEP_EXPLORED: return "explored";
	case STEP_CACHE_HIT: return "cache hit";
	case STEP_UNFUSED: return "unfused";
	}
	return "?";
}

static void explain_op(const Schedule *s, const OpInfo2 *info, int op, Buf *b)
{
	const Graph *g = s->g;
	char k[96];
	const Op *o = &g->ops[op];
	buf_printf(b, "op %d %s", op, ir_op_display(g, o, k, sizeof k));
	if (o->kind == OP_SYNC) {
		buf_puts(b, ": sync, drains every stream\n");
		return;
	}
	const OpInfo2 *in = &info[op];
	if (in->step < 0) {
		buf_puts(b, ": never executed\n");
		return;
	}
	const Step *st = &s->steps[in->step];
	buf_printf(b, "\n  segment %d (stream %d), step %d (%s, %s", st->segment, st->stream,
		   in->step, step_kind(st), st->mode == MODE_SYNC ? "sync" : "lazy");
	if (st->plan >= 0)
		buf_printf(b, ", plan #%d", st->plan);
	buf_puts(b, ")\n");
	const Launch *l = &st->launch[in->launch];
	const Kernel *kern = &s->kernels[l->kernel];
	if (kern->fuser >= 0)
		buf_printf(b, "  kernel %s: fused %s (score=%llu, %d ops)\n", kern->name,
			   pass_fuser_name(kern->fuser), (unsigned long long)kern->score, kern->nops);
	else
		buf_printf(b, "  kernel %s: un-fused\n", kern->name);
	if (st->guarded)
		buf_puts(b, "  why: the cached plan needs shape ids this segment lacks; run unfused\n");
	if (st->kind == STEP_UNFUSED) {
		buf_puts(b, "  why: max_explorations reached; cache misses run unfused\n");
		return;
	}
	int src = op;
	if (st->kind == STEP_CACHE_HIT) {
		int pos = -1;
		for (int i = 0; i < st->nops; i++)
			if (st->ops[i] == op)
				pos = i;
		for (int i = 0; i < s->nsteps; i++)
			if (s->steps[i].plan == st->plan && s->steps[i].kind == STEP_EXPLORED) {
				src = s->steps[i].ops[pos];
				buf_printf(b, "  decided when plan #%d was explored (step %d, op %d)\n",
					   st->plan, i, src);
				break;
			}
	}
	int bev = info[src].block_ev;
	if (bev < 0) {
		buf_puts(b, "  no block record\n");
		return;
	}
	const Event *e = &s->rec->ev[bev];
	buf_printf(b, "  block %d: %d op%s;", e->a, e->b, e->b == 1 ? "" : "s");
	if (e->c >= 0)
		buf_printf(b, " winner %s (score=%llu, took %d)\n", pass_fuser_name(e->c),
			   (unsigned long long)e->score, e->d);
	else
		buf_printf(b, " no fuser ready with a score above 0; unfusable head of %d settled\n",
			   e->d);
	bool taken = false;
	for (int i = bev + 1; i < s->rec->n && s->rec->ev[i].kind == EV_BLOCK_OP; i++)
		if (s->rec->ev[i].op == src)
			taken = s->rec->ev[i].c;
	if (!taken)
		buf_puts(b, "  not in the settled part of this block: searched again\n");
	for (int i = bev + 1; i < s->rec->n; i++) {
		const Event *f = &s->rec->ev[i];
		if (f->kind == EV_BLOCK_OP)
			continue;
		if (f->kind != EV_BLOCK_FUSER || f->a != e->a)
			break;
		buf_printf(b, "    %-17s %s score=%llu, %d op%s", pass_fuser_name(f->b),
			   f->c & BF_READY ? "ready    " : "not ready", (unsigned long long)f->score,
			   f->d, f->d == 1 ? "" : "s");
		if (f->c & BF_CLOSED)
			buf_printf(b, ", closed on op %d %s (%s)", f->op,
				   ir_op_display(g, &g->ops[f->op], k, sizeof k),
				   pass_close_reason(f->reason));
		else
			buf_puts(b, ", open");
		if (e->c == f->b && taken)
			buf_puts(b, "  <- took it");
		buf_putc(b, '\n');
	}
	if (kern->fuser < 0 && e->c >= 0 && taken)
		buf_puts(b, "  why: run alone\n");
	else if (kern->fuser < 0)
		buf_puts(b, "  why: no fuser was ready with a score above 0\n");
}

void pass_explain(const Schedule *s, int op, Buf *b)
{
	const Graph *g = s->g;
	OpInfo2 *info = xmalloc(sizeof(OpInfo2) * (size_t)(g->nops ? g->nops : 1));
	for (int i = 0; i < g->nops; i++)
		info[i] = (OpInfo2){-1, -1, -1};
	for (int i = 0; i < s->nsteps; i++)
		for (int k = 0; k < s->steps[i].nlaunch; k++)
			for (int j = 0; j < s->steps[i].launch[k].nops; j++) {
				int o = s->steps[i].launch[k].ops[j];
				info[o].step = i;
				info[o].launch = k;
			}
	int cur = -1;
	for (int i = 0; i < s->rec->n; i++) {
		const Event *e = &s->rec->ev[i];
		if (e->kind == EV_BLOCK)
			cur = i;
		else if (e->kind == EV_BLOCK_OP && e->op >= 0 && (e->c || info[e->op].block_ev < 0))
			info[e->op].block_ev = cur;
	}
	for (int i = 0; i < g->nops; i++)
		if (op < 0 || op == i)
			explain_op(s, info, i, b);
	free(info);
}
