/* explain.c: `fusec explain`: why each op was or was not fused, from the record.
 *
 * For each op: its segment and step, the kernel that runs it (fused by which fuser,
 * or un-fused), the block it was settled in and, for every fuser of that block,
 * whether it was ready, its score, and the op it closed on with the reason. An op
 * executed through a cache hit was decided when its plan was explored; the op at
 * the same place of the exploring step stands in for it.
 *
 * One walk (decide) gathers the facts of an op; the text and the JSON renderers
 * only print them, so the two cannot disagree. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "search.h"

typedef struct {
	int step, launch;      /* where the op ran */
	int block_ev;          /* EV_BLOCK event that settled it, -1 none */
} OpInfo2;

/* The facts about one op, as both renderers need them. */
typedef struct {
	int op;
	bool sync, executed;
	const Step *st;
	int step;
	const Kernel *kern;
	int src;               /* the op whose exploration decided it (cache hits) */
	int decided_step;      /* step that explored the plan, -1 when the op's own */
	const Event *block;    /* NULL: no block record */
	int block_ev;
	bool taken;            /* in the settled part of its block */
	const char *why;       /* why it is not fused, NULL when fused */
	const int *readers;    /* a sunk view (passes.h, pass_view_sink): the kernels
				  that read through it; NULL otherwise */
	int nreaders;
	int nhwc;              /* NHWCRelayout: the tensor kept channel-last that its
				  launch writes (the trace) or reads (the pool), -1 */
	bool nhwc_pool;        /* the op's launch is the pool */
	const Kernel *nhwc_other; /* the kernel of the other launch of the pair */
} Facts;

/* Per op: the kernels (Schedule.kernels) whose launches read through it, when it is
 * a view that launches nothing (views.c). */
typedef struct {
	int *n, **k;
} ViewReaders;

static ViewReaders view_readers(const Schedule *s)
{
	const Graph *g = s->g;
	int no = g->nops ? g->nops : 1;
	ViewReaders r = {xcalloc((size_t)no, sizeof(int)), xcalloc((size_t)no, sizeof(int *))};
	ViewSink *vs = pass_view_sink(s);
	int *chain = xmalloc(sizeof *chain * (size_t)no);
	for (int i = 0; i < s->nsteps && vs->nsunk; i++)
		for (int k = 0; k < s->steps[i].nlaunch; k++) {
			const Launch *l = &s->steps[i].launch[k];
			if (l->nops == 1 && vs->sunk[l->ops[0]])
				continue;
			int n = pass_view_chain(vs, l, chain);
			for (int c = 0; c < n; c++) {
				int o = chain[c];
				bool have = false;
				for (int q = 0; q < r.n[o]; q++)
					have |= r.k[o][q] == l->kernel;
				if (have)
					continue;
				r.k[o] = xrealloc(r.k[o], sizeof **r.k * (size_t)(r.n[o] + 1));
				r.k[o][r.n[o]++] = l->kernel;
			}
		}
	free(chain);
	pass_view_sink_free(vs);
	return r;
}

static void view_readers_free(ViewReaders *r, int nops)
{
	for (int i = 0; i < nops; i++)
		free(r->k[i]);
	free(r->k);
	free(r->n);
}

#define GUARD_WHY "the cached plan needs shape ids this segment lacks; run unfused"

static const char *step_kind(const Step *st)
{
	switch (st->kind) {
	case STEP_EXPLORED: return "explored";
	case STEP_CACHE_HIT: return "cache hit";
	case STEP_UNFUSED: return "unfused";
	}
	return "?";
}

static void decide(const Schedule *s, const OpInfo2 *info, int op, Facts *f)
{
	const Graph *g = s->g;
	memset(f, 0, sizeof *f);
	f->op = op;
	f->src = op;
	f->decided_step = -1;
	f->block_ev = -1;
	f->sync = g->ops[op].kind == OP_SYNC;
	if (f->sync)
		return;
	const OpInfo2 *in = &info[op];
	if (in->step < 0) {
		f->why = "never executed";
		return;
	}
	f->executed = true;
	f->step = in->step;
	f->st = &s->steps[in->step];
	const Launch *l = &f->st->launch[in->launch];
	f->kern = &s->kernels[l->kernel];
	f->nhwc = -1;
	if (f->kern->fuser == pass_nhwc_fuser()) {
		f->nhwc_pool = l->nops == 1 && pass_op_is_pool(g->ops[l->ops[0]].kind);
		int tr = f->nhwc_pool ? in->launch - 1 : in->launch;
		if (tr >= 0 && (f->nhwc = pass_nhwc_relayout(s, f->st, tr)) >= 0)
			f->nhwc_other = &s->kernels[f->st->launch[f->nhwc_pool ? tr : tr + 1].kernel];
	}
	if (f->st->kind == STEP_UNFUSED) {
		f->why = "max_explorations reached; cache misses run unfused";
		return;
	}
	if (f->st->kind == STEP_CACHE_HIT) {
		int pos = -1;
		for (int i = 0; i < f->st->nops; i++)
			if (f->st->ops[i] == op)
				pos = i;
		for (int i = 0; i < s->nsteps; i++)
			if (s->steps[i].plan == f->st->plan && s->steps[i].kind == STEP_EXPLORED) {
				f->src = s->steps[i].ops[pos];
				f->decided_step = i;
				break;
			}
	}
	int bev = info[f->src].block_ev;
	if (bev < 0) {
		if (f->kern->fuser < 0)
			f->why = "no block record";
		return;
	}
	f->block_ev = bev;
	f->block = &s->rec->ev[bev];
	for (int i = bev + 1; i < s->rec->n && s->rec->ev[i].kind == EV_BLOCK_OP; i++)
		if (s->rec->ev[i].op == f->src)
			f->taken = s->rec->ev[i].c;
	if (f->kern->fuser < 0 && f->block->c >= 0 && f->taken)
		f->why = "run alone";
	else if (f->kern->fuser < 0)
		f->why = "no fuser was ready with a score above 0";
}

/* The fuser events of the block that f->block opened. */
#define EACH_FUSER(s, f, i, fe)                                                           \
	for (int i = (f)->block_ev + 1; i < (s)->rec->n; i++)                             \
		for (const Event *fe = &(s)->rec->ev[i]; fe; fe = NULL)                     \
			if (fe->kind == EV_BLOCK_OP) {                                      \
			} else if (fe->kind != EV_BLOCK_FUSER || fe->a != (f)->block->a) {  \
				break;                                                      \
			} else

/* ---- text ----------------------------------------------------------------------- */

static void op_head(const Graph *g, int op, Buf *b)
{
	char k[96], ref[256];
	buf_printf(b, "op %d %s [%s]", op, ir_op_display(g, &g->ops[op], k, sizeof k),
		   ir_op_ref(g, op, ref, sizeof ref));
}

/* A kernel of one reshape launches nothing: its input is in memory, so the plan
 * makes the result an alias of its buffer (codegen/lower.c, alias_launch). */
static bool kernel_is_alias(const Graph *g, const Kernel *k)
{
	return k->nops == 1 && g->ops[k->ops[0]].kind == OP_RESHAPE;
}

static void explain_text(const Schedule *s, const Facts *f, Buf *b)
{
	const Graph *g = s->g;
	op_head(g, f->op, b);
	if (f->sync) {
		buf_puts(b, ": sync, drains every stream\n");
		return;
	}
	if (!f->executed) {
		buf_puts(b, ": never executed\n");
		return;
	}
	const Step *st = f->st;
	buf_printf(b, "\n  segment %d (stream %d), step %d (%s, %s", st->segment, st->stream,
		   f->step, step_kind(st), st->mode == MODE_SYNC ? "sync" : "lazy");
	if (st->plan >= 0)
		buf_printf(b, ", plan #%d", st->plan);
	buf_puts(b, ")\n");
	const Kernel *kern = f->kern;
	if (kern->fuser >= 0)
		buf_printf(b, "  kernel %s: fused %s (score=%llu, %d ops)\n", kern->name,
			   pass_fuser_name(kern->fuser), (unsigned long long)kern->score, kern->nops);
	else
		buf_printf(b, "  kernel %s: un-fused\n", kern->name);
	if (f->readers) {
		buf_puts(b, "  view: no kernel; read through by kernel");
		for (int i = 0; i < f->nreaders; i++)
			buf_printf(b, "%s %s", i ? "," : "", s->kernels[f->readers[i]].name);
		buf_putc(b, '\n');
	} else if (f->nhwc >= 0) {
		buf_printf(b, "  layout: %s %s channel-last (NHWC), %s kernel %s\n",
			   f->nhwc_pool ? "reads" : "writes", g->tensors[f->nhwc].name,
			   f->nhwc_pool ? "written so by" : "for the pool's", f->nhwc_other->name);
	} else if (kernel_is_alias(g, kern)) {
		buf_puts(b, "  alias: the reshape launches nothing; its result shares its input's "
			 "buffer\n");
	}
	if (st->guarded || st->kind == STEP_UNFUSED) {
		buf_printf(b, "  why: %s\n", f->why);
		if (!st->guarded)
			return;
	}
	if (f->decided_step >= 0)
		buf_printf(b, "  decided when plan #%d was explored (step %d, op %d)\n", st->plan,
			   f->decided_step, f->src);
	if (!f->block) {
		buf_puts(b, "  no block record\n");
		return;
	}
	const Event *e = f->block;
	buf_printf(b, "  block %d: %d op%s;", e->a, e->b, e->b == 1 ? "" : "s");
	if (e->c >= 0)
		buf_printf(b, " winner %s (score=%llu, took %d)\n", pass_fuser_name(e->c),
			   (unsigned long long)e->score, e->d);
	else
		buf_printf(b, " no fuser ready with a score above 0; unfusable head of %d settled\n",
			   e->d);
	if (!f->taken)
		buf_puts(b, "  not in the settled part of this block: searched again\n");
	EACH_FUSER(s, f, i, fe) {
		buf_printf(b, "    %-17s %s score=%llu, %d op%s", pass_fuser_name(fe->b),
			   fe->c & BF_READY ? "ready    " : "not ready", (unsigned long long)fe->score,
			   fe->d, fe->d == 1 ? "" : "s");
		if (fe->c & BF_CLOSED) {
			char k[96], ref[256];
			buf_printf(b, ", closed on op %d %s [%s] (%s)", fe->op,
				   ir_op_display(g, &g->ops[fe->op], k, sizeof k),
				   ir_op_ref(g, fe->op, ref, sizeof ref), pass_close_reason(fe->reason));
		} else {
			buf_puts(b, ", open");
		}
		if (e->c == fe->b && f->taken)
			buf_puts(b, "  <- took it");
		buf_putc(b, '\n');
	}
	if (kern->fuser < 0)
		buf_printf(b, "  why: %s\n", f->why);
}

/* ---- JSON ----------------------------------------------------------------------- */

static void add_op_ids(cJSON *o, const Graph *g, int op)
{
	char k[96];
	const Op *x = &g->ops[op];
	cJSON_AddNumberToObject(o, "op", op);
	cJSON_AddStringToObject(o, "kind", ir_op_display(g, x, k, sizeof k));
	cJSON_AddStringToObject(o, "op_type", ir_ops[x->kind].file);
	if (x->name)
		cJSON_AddStringToObject(o, "name", x->name);
	else
		cJSON_AddNullToObject(o, "name");
	if (x->nout)
		cJSON_AddStringToObject(o, "out", g->tensors[x->out[0]].name);
	else
		cJSON_AddNullToObject(o, "out");
	cJSON_AddNumberToObject(o, "line", x->line);
}

static cJSON *explain_json(const Schedule *s, const Facts *f)
{
	const Graph *g = s->g;
	cJSON *o = cJSON_CreateObject();
	add_op_ids(o, g, f->op);
	if (f->sync || !f->executed) {
		cJSON_AddNullToObject(o, "kernel");
		cJSON_AddBoolToObject(o, "fused", false);
		cJSON_AddStringToObject(o, "why_not_fused", f->sync ? "sync" : f->why);
		return o;
	}
	const Step *st = f->st;
	cJSON_AddNumberToObject(o, "segment", st->segment);
	cJSON_AddNumberToObject(o, "stream", st->stream);
	cJSON_AddNumberToObject(o, "step", f->step);
	cJSON_AddStringToObject(o, "step_kind", step_kind(st));
	cJSON_AddStringToObject(o, "mode", st->mode == MODE_SYNC ? "sync" : "lazy");
	if (st->plan >= 0)
		cJSON_AddNumberToObject(o, "plan", st->plan);
	else
		cJSON_AddNullToObject(o, "plan");
	cJSON_AddStringToObject(o, "kernel", f->kern->name);
	cJSON_AddBoolToObject(o, "fused", f->kern->fuser >= 0);
	if (f->kern->fuser >= 0) {
		cJSON_AddStringToObject(o, "fuser", pass_fuser_name(f->kern->fuser));
		cJSON_AddNumberToObject(o, "score", (double)f->kern->score);
	} else {
		cJSON_AddNullToObject(o, "fuser");
		cJSON_AddNullToObject(o, "score");
	}
	cJSON_AddNumberToObject(o, "kernel_ops", f->kern->nops);
	cJSON_AddBoolToObject(o, "alias", !f->readers && kernel_is_alias(g, f->kern));
	if (f->nhwc >= 0) {
		cJSON *nh = cJSON_AddObjectToObject(o, "channel_last");
		cJSON_AddStringToObject(nh, "tensor", g->tensors[f->nhwc].name);
		cJSON_AddStringToObject(nh, f->nhwc_pool ? "written_by" : "read_by",
					f->nhwc_other->name);
	}
	if (f->readers) {
		cJSON *rd = cJSON_AddArrayToObject(o, "read_through_by");
		for (int i = 0; i < f->nreaders; i++)
			cJSON_AddItemToArray(rd, cJSON_CreateString(s->kernels[f->readers[i]].name));
	}
	if (f->why)
		cJSON_AddStringToObject(o, "why_not_fused", st->guarded ? GUARD_WHY : f->why);
	else
		cJSON_AddNullToObject(o, "why_not_fused");
	if (f->decided_step >= 0) {
		cJSON *d = cJSON_AddObjectToObject(o, "decided_by");
		cJSON_AddNumberToObject(d, "step", f->decided_step);
		cJSON_AddNumberToObject(d, "op", f->src);
	}
	if (!f->block) {
		cJSON_AddNullToObject(o, "block");
		return o;
	}
	const Event *e = f->block;
	cJSON *blk = cJSON_AddObjectToObject(o, "block");
	cJSON_AddNumberToObject(blk, "id", e->a);
	cJSON_AddNumberToObject(blk, "ops", e->b);
	if (e->c >= 0)
		cJSON_AddStringToObject(blk, "winner", pass_fuser_name(e->c));
	else
		cJSON_AddNullToObject(blk, "winner");
	cJSON_AddNumberToObject(blk, "score", (double)e->score);
	cJSON_AddNumberToObject(blk, "took", e->d);
	cJSON_AddBoolToObject(blk, "settled", f->taken);
	cJSON *fusers = cJSON_AddArrayToObject(o, "fusers");
	EACH_FUSER(s, f, i, fe) {
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "fuser", pass_fuser_name(fe->b));
		cJSON_AddBoolToObject(x, "ready", fe->c & BF_READY);
		cJSON_AddNumberToObject(x, "score", (double)fe->score);
		cJSON_AddNumberToObject(x, "ops", fe->d);
		if (fe->c & BF_CLOSED) {
			cJSON *c = cJSON_AddObjectToObject(x, "closed");
			cJSON_AddStringToObject(c, "reason", pass_close_reason(fe->reason));
			add_op_ids(c, g, fe->op);
		} else {
			cJSON_AddNullToObject(x, "closed");
		}
		cJSON_AddBoolToObject(x, "took_it", e->c == fe->b && f->taken);
		cJSON_AddItemToArray(fusers, x);
	}
	return o;
}

void pass_explain_ex(const Schedule *s, int op, bool json, Buf *b)
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
	ViewReaders vr = view_readers(s);
	cJSON *root = NULL, *ops = NULL;
	if (json) {
		root = cJSON_CreateObject();
		cJSON_AddStringToObject(root, "format", "fusec-explain/1");
		cJSON_AddStringToObject(root, "graph", g->name);
		ops = cJSON_AddArrayToObject(root, "ops");
	}
	for (int i = 0; i < g->nops; i++) {
		if (op >= 0 && op != i)
			continue;
		Facts f;
		decide(s, info, i, &f);
		if (vr.n[i]) {
			f.readers = vr.k[i];
			f.nreaders = vr.n[i];
		}
		if (json)
			cJSON_AddItemToArray(ops, explain_json(s, &f));
		else
			explain_text(s, &f, b);
	}
	if (json) {
		char *text = cJSON_Print(root);
		buf_puts(b, text);
		buf_putc(b, '\n');
		cJSON_free(text);
		cJSON_Delete(root);
	}
	free(info);
	view_readers_free(&vr, g->nops);
}

void pass_explain(const Schedule *s, int op, Buf *b)
{
	pass_explain_ex(s, op, false, b);
}
