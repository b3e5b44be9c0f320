/* explain.c: `fusec explain`: why each op was or was not fused, from the record.
 *
 * For each op: its segment and step, the kernel that runs it (fused by which fuser,
 * or un-fused), the block it was settled in and, for every fuser of that block,
 * whether it was ready, its score, and the op it closed on with the reason. An op
 * executed through a cache hit was decided when its plan was explored; the op at
 * the same place of the exploring step stands in for it.
 *
 * Kernels are named as the plan and the PTX name them (kernels[].name, the PTX
 * .entry, what a profiler shows) when the caller lowered the schedule and passes
 * each launch's entry (cmd/explain.c); the search's unit (fusec_k<plan>_<n>, the
 * plan's launches[].unit) is shown beside it.
 *
 * An op that no fuser took gets one `why:` line that sums up, in words, what each
 * fuser of its block said about it (why_fusers): it refused the op, stopped before
 * it, or took it but was not ready, scored 0 or was outscored; fusers that said the
 * same are named together. An op that launches nothing (a reshape alias, a view
 * read through by its readers) says so first.
 *
 * One walk (decide) gathers the facts of an op; the text and the JSON renderers
 * only print them, so the two cannot disagree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "search.h"

typedef struct {
	int step, launch;      /* where the op ran */
	int block_ev;          /* EV_BLOCK event that settled it, -1 none */
} OpInfo2;

/* What one fuser of the op's block said about it. */
typedef enum {
	V_REFUSED,             /* closed on the op itself */
	V_BEFORE,              /* closed on an earlier op of the block: never saw it */
	V_NOT_READY,           /* took it, but was not ready */
	V_SCORE0,              /* took it, ready, but saves nothing */
	V_OUTSCORED,           /* took it, but another fuser scored higher */
	V_OTHER,               /* took it (its kernel ended before the op) */
} Verdict;

static const char *const verdict_names[] = {
	"refused", "stopped_before", "not_ready", "score_0", "outscored", "other",
};

typedef struct {
	int fuser;
	Verdict v;
	int reason;            /* CloseReason when closed, else CR_NONE */
	char text[360];        /* in words (a fuser's words and a close reason) */
} FuserWhy;

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
	int nhwc_other_flat;   /* its launch, as an index into the entry names */
	int flat;              /* the op's launch: index over every step's launches */
	FuserWhy fw[8];        /* why_fusers, for an op no fuser took */
	int nfw;
	char why_buf[1600];    /* the `why:` line built from fw */
} Facts;

/* The name of each launch's kernel, per launch in schedule order (steps, then
 * their launches): the PTX entry when the caller gave them (NULL for a launch that
 * launches nothing), else the search's unit. */
typedef struct {
	bool entries;          /* names are PTX entries */
	const char **name;     /* per flat launch */
	int *first;            /* per step: the flat index of its first launch */
} Names;

/* Per op: the launches (flat indices) that read through it, one per kernel, when it
 * is a view that launches nothing (views.c). */
typedef struct {
	int *n, **k;
} ViewReaders;

static ViewReaders view_readers(const Schedule *s, const Names *nm)
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
			int flat = nm->first[i] + k;
			const char *name = nm->name[flat];
			for (int c = 0; c < n && name; c++) {
				int o = chain[c];
				bool have = false;
				for (int q = 0; q < r.n[o]; q++)
					have |= !strcmp(nm->name[r.k[o][q]], name);
				if (have)
					continue;
				r.k[o] = xrealloc(r.k[o], sizeof **r.k * (size_t)(r.n[o] + 1));
				r.k[o][r.n[o]++] = flat;
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

/* ---- why no fuser took an op ------------------------------------------------------ */

/* The op as the user wrote it: "conv2d". */
static const char *op_word(const Graph *g, int op)
{
	return ir_ops[g->ops[op].kind].file;
}

static bool reduce_fuser(const char *fname)
{
	return !strcmp(fname, "Reduce") || !strcmp(fname, "ReduceBroadcasted");
}

/* The words for a reason a fuser closes, "%s" standing for the op's word; NULL
 * where they depend on the fuser or the op (reason_words), or are the record's
 * own (pass_close_reason). */
static const char *const reason_text[CR_COUNT_] = {
	[CR_SHAPE] = "%s's shape does not match the kernel's",
	[CR_BINDINGS] = "%s would make the kernel bind more buffers than --max-bindings",
	[CR_VIEW_INTERMEDIATE] = "%s is a view of a tensor computed inside the kernel",
	[CR_VIEW_UNSUPPORTED] = "%s is a view it cannot fuse",
	[CR_SECOND_MATMUL] = "a second matmul",
	[CR_SECOND_REDUCTION] = "a second reduction",
	[CR_BROADCAST] = "%s broadcasts the reduced value back",
	[CR_AXIS] = "%s reduces another axis than the last",
	[CR_VIEW_FIRST_USE] = "a %s of a tensor the kernel does not read yet cannot start or "
			      "join it",
	[CR_VIEW_RANK] = "a reshape to a lower rank",
	[CR_POOL_TAKEN] = "it ended at the pool after the trace",
	[CR_AFTER_ATTENTION] = "after an attention op only one permute of its output (the "
			       "last axis kept) joins it; %s does not",
	[CR_SIBLINGS_MIX] = "%s reads the results of two of its matmuls (it runs one "
			    "matmul's tile at a time)",
};

/* Why fuser `fuser` closed on op (of kind k), in words. */
static void reason_words(const Graph *g, int fuser, CloseReason r, int op, char *out, size_t n)
{
	const char *w = op_word(g, op);
	const char *fname = pass_fuser_name(fuser);
	if (r == CR_NOT_ELEMENTWISE)
		snprintf(out, n, reduce_fuser(fname) ? "%s is neither elementwise nor a reduction"
			 : !strcmp(fname, "Matmul") ? "%s is not elementwise, so not an epilogue "
						      "of the matmul"
			 : "%s is not elementwise", w);
	else if (r == CR_MAX_OPS)
		snprintf(out, n, "the kernel was full (%d ops)", TRACE_MAX_OPS);
	else if (r == CR_NOT_MATMUL && g->ops[op].kind == OP_MATMUL)
		snprintf(out, n, "the views before the matmul are not its operands");
	else if (r == CR_NOT_MATMUL && g->ops[op].kind == OP_CONV2D)
		snprintf(out, n, "a conv2d starts it only outside --burn-exact, without views "
			 "in front");
	else if (r == CR_NOT_MATMUL)
		snprintf(out, n, "%s is not a matmul or a conv2d", w);
	else if (r == CR_SECOND_MATMUL && g->ops[op].kind == OP_CONV2D)
		snprintf(out, n, "a second anchor (conv2d)");
	else if (r > CR_NONE && r < CR_COUNT_ && reason_text[r])
		snprintf(out, n, reason_text[r], w);
	else
		snprintf(out, n, "%s", pass_close_reason(r));
}

/* What each fuser of f's block said about f->src (its index ix in the block), into
 * f->fw, and the `why:` line from them into f->why_buf. */
static void why_fusers(const Schedule *s, Facts *f)
{
	const Graph *g = s->g;
	const Event *blk = f->block;
	int ix = -1, nb = 0;
	int *bops = xmalloc(sizeof *bops * (size_t)(blk->b + 1));
	for (int i = f->block_ev + 1; i < s->rec->n && s->rec->ev[i].kind == EV_BLOCK_OP &&
	     s->rec->ev[i].a == blk->a; i++) {
		if (nb <= blk->b)
			bops[nb++] = s->rec->ev[i].op;
		if (s->rec->ev[i].op == f->src && ix < 0)
			ix = nb - 1;
	}
	f->nfw = 0;
	for (int i = f->block_ev + 1; i < s->rec->n && f->nfw < (int)COUNTOF(f->fw); i++) {
		const Event *fe = &s->rec->ev[i];
		if (fe->kind == EV_BLOCK_OP)
			continue;
		if (fe->kind != EV_BLOCK_FUSER || fe->a != blk->a)
			break;
		FuserWhy *w = &f->fw[f->nfw++];
		w->fuser = fe->b;
		w->reason = fe->c & BF_CLOSED ? fe->reason : CR_NONE;
		int ic = nb;
		for (int k = 0; (fe->c & BF_CLOSED) && fe->op >= 0 && k < nb; k++)
			if (bops[k] == fe->op) {
				ic = k;
				break;
			}
		char r[200];
		if (fe->c & BF_CLOSED)
			reason_words(g, fe->b, (CloseReason)fe->reason, fe->op >= 0 ? fe->op : f->src,
				     r, sizeof r);
		if (ix >= 0 && ic == ix) {
			w->v = V_REFUSED;
			snprintf(w->text, sizeof w->text, "%s", r);
			continue;
		}
		if (ix >= 0 && ic < ix) {
			w->v = V_BEFORE;
			snprintf(w->text, sizeof w->text, "stopped before it, at ops[%d]: %s", fe->op, r);
			continue;
		}
		/* it took the op */
		char after[260] = "";
		if (fe->c & BF_CLOSED)
			snprintf(after, sizeof after, "; it stopped at ops[%d]: %s", fe->op, r);
		const char *fname = pass_fuser_name(fe->b);
		if (!(fe->c & BF_READY)) {
			w->v = V_NOT_READY;
			snprintf(w->text, sizeof w->text, "%s%s",
				 !strcmp(fname, "Matmul") ? (g->ops[f->src].kind == OP_MATMUL ||
							     g->ops[f->src].kind == OP_CONV2D
							     ? "no epilogue after it to take"
							     : "no matmul to fuse it with")
				 : reduce_fuser(fname) ? "no reduction to fuse it with"
				 : fe->b == pass_nhwc_fuser() ? "no pool to end its trace" : "not ready",
				 after);
		} else if (fe->score == 0) {
			w->v = V_SCORE0;
			char who[40] = "alone it saves";
			if (fe->d > 1)
				snprintf(who, sizeof who, "its %d ops together save", fe->d);
			snprintf(w->text, sizeof w->text, "%s no memory traffic (score 0)%s", who, after);
		} else if (blk->c >= 0 && blk->c != fe->b) {
			w->v = V_OUTSCORED;
			snprintf(w->text, sizeof w->text, "score %llu, below %s's %llu",
				 (unsigned long long)fe->score, pass_fuser_name(blk->c),
				 (unsigned long long)blk->score);
		} else {
			w->v = V_OTHER;
			snprintf(w->text, sizeof w->text, "took it (score %llu), but its kernel ran "
				 "without it", (unsigned long long)fe->score);
		}
	}
	free(bops);
	/* the line: fusers that said the same, named together, in registry order */
	Buf b = {0};
	bool *done = xcalloc((size_t)f->nfw + 1, sizeof *done);
	for (int i = 0; i < f->nfw; i++) {
		if (done[i])
			continue;
		buf_puts(&b, b.len ? "; " : "");
		buf_puts(&b, pass_fuser_name(f->fw[i].fuser));
		for (int j = i + 1; j < f->nfw; j++)
			if (!done[j] && !strcmp(f->fw[i].text, f->fw[j].text)) {
				done[j] = true;
				buf_printf(&b, ", %s", pass_fuser_name(f->fw[j].fuser));
			}
		buf_printf(&b, ": %s", f->fw[i].text);
	}
	free(done);
	snprintf(f->why_buf, sizeof f->why_buf, "%s", b.data ? b.data : "no fuser competed");
	buf_free(&b);
	f->why = f->why_buf;
}

/* ---- the facts of one op ---------------------------------------------------------- */

static void decide(const Schedule *s, const Names *nm, const OpInfo2 *info, int op, Facts *f)
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
	f->flat = nm->first[in->step] + in->launch;
	const Launch *l = &f->st->launch[in->launch];
	f->kern = &s->kernels[l->kernel];
	f->nhwc = -1;
	if (f->kern->fuser == pass_nhwc_fuser()) {
		f->nhwc_pool = l->nops == 1 && pass_op_is_pool(g->ops[l->ops[0]].kind);
		int tr = f->nhwc_pool ? in->launch - 1 : in->launch;
		if (tr >= 0 && (f->nhwc = pass_nhwc_relayout(s, f->st, tr)) >= 0) {
			int other = f->nhwc_pool ? tr : tr + 1;
			f->nhwc_other = &s->kernels[f->st->launch[other].kernel];
			f->nhwc_other_flat = nm->first[in->step] + other;
		}
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
		if (f->st->guarded)
			f->why = GUARD_WHY;
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
		why_fusers(s, f);
	if (f->st->guarded)
		f->why = GUARD_WHY;
}

/* The fuser events of the block that f->block opened. */
#define EACH_FUSER(s, f, i, fe)                                                           \
	for (int i = (f)->block_ev + 1; i < (s)->rec->n; i++)                             \
		for (const Event *fe = &(s)->rec->ev[i]; fe; fe = NULL)                     \
			if (fe->kind == EV_BLOCK_OP) {                                      \
			} else if (fe->kind != EV_BLOCK_FUSER || fe->a != (f)->block->a) {  \
				break;                                                      \
			} else

/* A kernel of one reshape launches nothing: its input is in memory, so the plan
 * makes the result an alias of its buffer (codegen/lower.c, alias_launch). */
static bool kernel_is_alias(const Graph *g, const Kernel *k)
{
	return k->nops == 1 && g->ops[k->ops[0]].kind == OP_RESHAPE;
}

/* What an op that launches nothing is, for the why line: "alias", "view", NULL. */
static const char *launches_nothing(const Graph *g, const Facts *f)
{
	if (f->readers)
		return "view";
	if (f->nhwc < 0 && kernel_is_alias(g, f->kern))
		return "alias";
	return NULL;
}

/* The `why:` text: f->why, after what an op that launches nothing costs. */
static void why_text(const Graph *g, const Facts *f, Buf *b)
{
	const char *nothing = launches_nothing(g, f);
	if (nothing && !strcmp(nothing, "alias"))
		buf_puts(b, "launches nothing (its result is an alias of its input's buffer), so "
			 "it costs nothing un-fused; ");
	else if (nothing)
		buf_puts(b, "launches nothing (the kernels reading it read through it), so it "
			 "costs nothing un-fused; ");
	buf_puts(b, f->why ? f->why : "");
}

/* ---- text ----------------------------------------------------------------------- */

static void op_head(const Graph *g, int op, Buf *b)
{
	char k[96], ref[256];
	buf_printf(b, "op %d %s [%s]", op, ir_op_display(g, &g->ops[op], k, sizeof k),
		   ir_op_ref(g, op, ref, sizeof ref));
}

/* Matmuls that share their first operand in the op's launch (passes/siblings.c,
 * passes/fuser_matmul.c): a line naming them. */
static void siblings_line(const Graph *g, const Step *st, int op, Buf *b)
{
	for (int k = 0; k < st->nlaunch; k++) {
		const Launch *l = &st->launch[k];
		int n = 0, first = -1;
		bool here = false;
		for (int j = 0; j < l->nops; j++) {
			here |= l->ops[j] == op;
			if (g->ops[l->ops[j]].kind == OP_MATMUL && n++ == 0)
				first = l->ops[j];
		}
		if (!here || n < 2)
			continue;
		buf_puts(b, "  siblings: one kernel runs the tiles of the matmuls");
		for (int j = 0, i = 0; j < l->nops; j++)
			if (g->ops[l->ops[j]].kind == OP_MATMUL)
				buf_printf(b, "%s ops[%d]", i++ ? "," : "", l->ops[j]);
		buf_printf(b, ", which read %s\n", g->tensors[g->ops[first].in[0]].name);
		return;
	}
}

static void explain_text(const Schedule *s, const Names *nm, const Facts *f, Buf *b)
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
	const char *name = nm->name[f->flat];
	if (!name)
		buf_printf(b, "  kernel none, launches nothing (unit %s)", kern->name);
	else if (nm->entries)
		buf_printf(b, "  kernel %s (unit %s)", name, kern->name);
	else
		buf_printf(b, "  kernel %s", name);
	if (kern->fuser >= 0)
		buf_printf(b, ": fused %s (score=%llu, %d ops)\n", pass_fuser_name(kern->fuser),
			   (unsigned long long)kern->score, kern->nops);
	else
		buf_puts(b, ": un-fused\n");
	siblings_line(g, st, f->op, b);
	if (f->readers) {
		buf_puts(b, "  view: no kernel; read through by kernel");
		for (int i = 0; i < f->nreaders; i++)
			buf_printf(b, "%s %s", i ? "," : "", nm->name[f->readers[i]]);
		buf_putc(b, '\n');
	} else if (f->nhwc >= 0) {
		buf_printf(b, "  layout: %s %s channel-last (NHWC), %s kernel %s\n",
			   f->nhwc_pool ? "reads" : "writes", g->tensors[f->nhwc].name,
			   f->nhwc_pool ? "written so by" : "for the pool's",
			   nm->name[f->nhwc_other_flat] ? nm->name[f->nhwc_other_flat]
							: f->nhwc_other->name);
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
	if (kern->fuser < 0 && !st->guarded) {
		buf_puts(b, "  why: ");
		why_text(g, f, b);
		buf_putc(b, '\n');
	}
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

static void add_name(cJSON *o, const char *key, const char *name)
{
	if (name)
		cJSON_AddStringToObject(o, key, name);
	else
		cJSON_AddNullToObject(o, key);
}

static cJSON *explain_json(const Schedule *s, const Names *nm, const Facts *f)
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
	add_name(o, "kernel", nm->name[f->flat]);
	cJSON_AddStringToObject(o, "unit", f->kern->name);
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
		add_name(nh, f->nhwc_pool ? "written_by" : "read_by",
			 nm->name[f->nhwc_other_flat] ? nm->name[f->nhwc_other_flat]
						      : f->nhwc_other->name);
	}
	if (f->readers) {
		cJSON *rd = cJSON_AddArrayToObject(o, "read_through_by");
		for (int i = 0; i < f->nreaders; i++)
			cJSON_AddItemToArray(rd, cJSON_CreateString(nm->name[f->readers[i]]));
	}
	if (f->why) {
		Buf w = {0};
		if (st->guarded)
			buf_puts(&w, GUARD_WHY);
		else
			why_text(g, f, &w);
		cJSON_AddStringToObject(o, "why_not_fused", w.data ? w.data : "");
		buf_free(&w);
	} else {
		cJSON_AddNullToObject(o, "why_not_fused");
	}
	const char *nothing = f->kern->fuser < 0 ? launches_nothing(g, f) : NULL;
	if (nothing)
		cJSON_AddStringToObject(o, "launches_nothing", nothing);
	if (f->nfw && !st->guarded) {
		cJSON *ws = cJSON_AddArrayToObject(o, "why_fusers");
		for (int i = 0; i < f->nfw; i++) {
			cJSON *x = cJSON_CreateObject();
			cJSON_AddStringToObject(x, "fuser", pass_fuser_name(f->fw[i].fuser));
			cJSON_AddStringToObject(x, "verdict", verdict_names[f->fw[i].v]);
			if (f->fw[i].reason != CR_NONE)
				cJSON_AddStringToObject(x, "reason",
							pass_close_reason((CloseReason)f->fw[i].reason));
			else
				cJSON_AddNullToObject(x, "reason");
			cJSON_AddStringToObject(x, "text", f->fw[i].text);
			cJSON_AddItemToArray(ws, x);
		}
	}
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

/* What --attention fuse did: "attention": {"fused": N, "causal": C, "apart": [reason,
 * ...]}. */
static void attention_json(cJSON *root, const AttentionInfo *att)
{
	cJSON *o = cJSON_AddObjectToObject(root, "attention");
	cJSON_AddNumberToObject(o, "fused", att->nfused);
	cJSON_AddNumberToObject(o, "causal", att->ncausal);
	cJSON *apart = cJSON_AddArrayToObject(o, "apart");
	for (int i = 0; i < att->nwhy; i++)
		cJSON_AddItemToArray(apart, cJSON_CreateString(att->why[i]));
}

void pass_explain_ex(const Schedule *s, int op, bool json, const char *const *entry,
		     const AttentionInfo *att, Buf *b)
{
	const Graph *g = s->g;
	OpInfo2 *info = xmalloc(sizeof(OpInfo2) * (size_t)(g->nops ? g->nops : 1));
	for (int i = 0; i < g->nops; i++)
		info[i] = (OpInfo2){-1, -1, -1};
	Names nm = {entry != NULL, NULL, xcalloc((size_t)s->nsteps + 1, sizeof(int))};
	int total = 0;
	for (int i = 0; i < s->nsteps; i++) {
		nm.first[i] = total;
		total += s->steps[i].nlaunch;
	}
	nm.name = xcalloc((size_t)total + 1, sizeof *nm.name);
	for (int i = 0; i < s->nsteps; i++)
		for (int k = 0; k < s->steps[i].nlaunch; k++) {
			int flat = nm.first[i] + k;
			nm.name[flat] = entry ? entry[flat] : s->kernels[s->steps[i].launch[k].kernel].name;
			for (int j = 0; j < s->steps[i].launch[k].nops; j++) {
				int o = s->steps[i].launch[k].ops[j];
				info[o].step = i;
				info[o].launch = k;
			}
		}
	int cur = -1;
	for (int i = 0; i < s->rec->n; i++) {
		const Event *e = &s->rec->ev[i];
		if (e->kind == EV_BLOCK)
			cur = i;
		else if (e->kind == EV_BLOCK_OP && e->op >= 0 && (e->c || info[e->op].block_ev < 0))
			info[e->op].block_ev = cur;
	}
	ViewReaders vr = view_readers(s, &nm);
	cJSON *root = NULL, *ops = NULL;
	if (json) {
		root = cJSON_CreateObject();
		cJSON_AddStringToObject(root, "format", "fusec-explain/1");
		cJSON_AddStringToObject(root, "graph", g->name);
		if (att && (att->nfused || att->nwhy))
			attention_json(root, att);
		ops = cJSON_AddArrayToObject(root, "ops");
	}
	Facts *f = xmalloc(sizeof *f);
	for (int i = 0; i < g->nops; i++) {
		if (op >= 0 && op != i)
			continue;
		decide(s, &nm, info, i, f);
		if (vr.n[i]) {
			f->readers = vr.k[i];
			f->nreaders = vr.n[i];
		}
		if (json)
			cJSON_AddItemToArray(ops, explain_json(s, &nm, f));
		else
			explain_text(s, &nm, f, b);
	}
	free(f);
	if (json) {
		char *text = cJSON_Print(root);
		buf_puts(b, text);
		buf_putc(b, '\n');
		cJSON_free(text);
		cJSON_Delete(root);
	}
	free(info);
	free(nm.first);
	free(nm.name);
	view_readers_free(&vr, g->nops);
}

void pass_explain(const Schedule *s, int op, Buf *b)
{
	pass_explain_ex(s, op, false, NULL, NULL, b);
}
