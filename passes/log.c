/* log.c: the log lines of SPEC §4, rendered from the decision record.
 *
 * The lines keep the shapes of burn's BURN_FUSION_LOG output, so a log of fusec
 * reads like a log of burn on the same program. Each event kind has one level;
 * a line is written when the chosen level includes it. The levels:
 *  - basic: the strategy each exploration selected;
 *  - medium: what was decided, not how: each block with its winning fuser and
 *    score, each exploration's end or cache hit, stops, merges and the exploration
 *    limit, and after each execution one line: its ops → its launches (fuser,
 *    score, the ops of each);
 *  - full: every registration, fuser closure and score, and after each execution
 *    the fusion trace table in place of medium's line.
 * The fusion trace table is built from the step's launches and its plan's strategy. */
#include <stdlib.h>
#include <string.h>

#include "search.h"

int pass_log_parse(const char *s, LogLevel *out)
{
	static const struct { const char *name; LogLevel level; } names[] = {
		{"off", LOG_OFF}, {"0", LOG_OFF}, {"basic", LOG_BASIC}, {"medium", LOG_MEDIUM},
		{"full", LOG_FULL}, {"1", LOG_FULL},
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(s, names[i].name)) {
			*out = names[i].level;
			return 0;
		}
	return -1;
}

const char *pass_trigger_name(TriggerKind k)
{
	switch (k) {
	case TRIG_ON_OPERATIONS: return "OnOperations";
	case TRIG_ON_SYNC: return "OnSync";
	case TRIG_ALWAYS: return "Always";
	}
	return "?";
}

static const char *mode_name(int m)
{
	return m == MODE_SYNC ? "sync" : "lazy";
}

/* burn's display name, then where the op is in the user's file: "NumericFloat::Mul
 * [ops[5] → p1]" (relative positions stay burn's; the bracket is the graph's own). */
static const char *kind_of(const Schedule *s, int op, char *buf, size_t size)
{
	if (op < 0)
		return "?";
	char kind[96], ref[256];
	snprintf(buf, size, "%s [%s]", ir_op_display(s->g, &s->g->ops[op], kind, sizeof kind),
		 ir_op_ref(s->g, op, ref, sizeof ref));
	return buf;
}

static const char *merge_refusal(int r)
{
	switch (r) {
	case 0: return "would create a cycle";
	case 1: return "no valid order";
	default: return "no open fuser left and a ready one would be hidden";
	}
}

/* ---- the trace table ---------------------------------------------------------------- */

typedef struct {
	const char *header;    /* NULL: not the first row of its block */
	int op;
} Row;

static void tensors_text(const Graph *g, const int *ids, int n, Buf *b)
{
	for (int i = 0; i < n; i++) {
		const Tensor *t = &g->tensors[ids[i]];
		buf_printf(b, "%st%d(%s):%s", i ? ", " : "", ids[i], t->name, ir_dtype_name(t->dtype));
		if (g->sym && ids[i] < g->sym->ndim) {   /* for every size: as written */
			ir_sym_text(b, g->sym, g->sym->dim[ids[i]], t->rank);
			continue;
		}
		buf_putc(b, '[');
		for (int d = 0; d < t->rank; d++)
			buf_printf(b, "%s%lld", d ? "," : "", (long long)t->dim[d]);
		buf_putc(b, ']');
	}
}

static int utf8_len(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static void pad(Buf *b, const char *s, int width)
{
	buf_puts(b, s);
	for (int i = utf8_len(s); i < width; i++)
		buf_putc(b, ' ');
}

typedef struct {
	int nrows, nblocks;
	Row *rows;
	char **headers;
} Table;

static void add_block(const Schedule *s, Table *t, const char *head, const int *ops, int n)
{
	t->headers[t->nblocks] = arena_strdup(s->arena, head);
	for (int i = 0; i < n; i++)
		t->rows[t->nrows++] = (Row){i == 0 ? t->headers[t->nblocks] : NULL, ops[i]};
	t->nblocks++;
}

static void leaves(const Schedule *s, const Strategy *st, const int *ops, int *off, Table *t)
{
	if (st->kind == STRAT_COMPOSED) {
		for (int i = 0; i < st->n; i++)
			leaves(s, st->sub[i], ops, off, t);
		return;
	}
	char head[160];
	const char *unit = st->n == 1 ? "op" : "ops";
	if (st->kind == STRAT_FUSED)
		snprintf(head, sizeof head, "▸ fused %s (score=%llu, %d %s)",
			 pass_fuser_name(st->fuser), (unsigned long long)st->score, st->n, unit);
	else
		snprintf(head, sizeof head, "▸ un-fused (%d %s)", st->n, unit);
	add_block(s, t, head, ops + *off, st->n);
	*off += st->n;
}

void pass_trace_table(const Schedule *s, int si, Buf *out)
{
	const Step *step = &s->steps[si];
	const Graph *g = s->g;
	Table t = {0};
	t.rows = xcalloc((size_t)step->nops + 1, sizeof(Row));
	t.headers = xcalloc((size_t)step->nops + 1, sizeof(char *));
	if (step->plan >= 0 && !step->guarded) {
		int off = 0;
		leaves(s, s->plans[step->plan]->strategy, step->ops, &off, &t);
	} else {
		char head[64];
		snprintf(head, sizeof head, "▸ un-fused (%d %s)", step->nops,
			 step->nops == 1 ? "op" : "ops");
		add_block(s, &t, head, step->ops, step->nops);
	}
	enum { NCOL = 6 };
	static const char *titles[NCOL] = {"idx", "block", "op", "graph op", "inputs", "outputs"};
	char ***cells = xcalloc((size_t)t.nrows + 1, sizeof(char **));
	int w[NCOL];
	for (int c = 0; c < NCOL; c++)
		w[c] = (int)strlen(titles[c]);
	for (int r = 0; r < t.nrows; r++) {
		const Op *op = &g->ops[t.rows[r].op];
		char kind[96], ref[256];
		Buf in = {0}, outs = {0};
		tensors_text(g, op->in, op->nin, &in);
		tensors_text(g, op->out, op->nout, &outs);
		cells[r] = xcalloc(NCOL, sizeof(char *));
		cells[r][0] = arena_printf(s->arena, "%d", r);
		cells[r][1] = (char *)(t.rows[r].header ? t.rows[r].header : "");
		cells[r][2] = arena_strdup(s->arena, ir_op_display(g, op, kind, sizeof kind));
		snprintf(ref, sizeof ref, "ops[%d]%s%s%s", t.rows[r].op, op->name ? " '" : "",
			 op->name ? op->name : "", op->name ? "'" : "");
		cells[r][3] = arena_strdup(s->arena, ref);
		cells[r][4] = arena_strdup(s->arena, in.data ? in.data : "");
		cells[r][5] = arena_strdup(s->arena, outs.data ? outs.data : "");
		buf_free(&in);
		buf_free(&outs);
		for (int c = 0; c < NCOL; c++)
			if (utf8_len(cells[r][c]) > w[c])
				w[c] = utf8_len(cells[r][c]);
	}
	int width = 2 * (NCOL - 1);
	for (int c = 0; c < NCOL; c++)
		width += w[c];
	for (int i = 0; i < width; i++)
		buf_puts(out, "═");
	buf_printf(out, "\nfusion trace (%d op%s, %d block%s)\n", t.nrows, t.nrows == 1 ? "" : "s",
		   t.nblocks, t.nblocks == 1 ? "" : "s");
	for (int c = 0; c < NCOL; c++) {
		if (c)
			buf_puts(out, "  ");
		pad(out, titles[c], w[c]);
	}
	buf_putc(out, '\n');
	for (int c = 0; c < NCOL; c++) {
		if (c)
			buf_puts(out, "  ");
		for (int i = 0; i < w[c]; i++)
			buf_putc(out, '-');
	}
	for (int r = 0; r < t.nrows; r++) {
		buf_putc(out, '\n');
		for (int c = 0; c < NCOL; c++) {
			if (c)
				buf_puts(out, "  ");
			pad(out, cells[r][c], w[c]);
		}
		free(cells[r]);
	}
	free(cells);
	free(t.rows);
	free(t.headers);
}

/* ---- the log ------------------------------------------------------------------------- */

/* Op indices as ranges: "ops[4]", "ops[1-3,7]". */
static void op_ranges(Buf *b, const int *ops, int n)
{
	buf_puts(b, "ops[");
	for (int i = 0; i < n;) {
		int j = i;
		while (j + 1 < n && ops[j + 1] == ops[j] + 1)
			j++;
		buf_printf(b, "%s%d", i ? "," : "", ops[i]);
		if (j > i)
			buf_printf(b, "-%d", ops[j]);
		i = j + 1;
	}
	buf_putc(b, ']');
}

/* --log medium, after an execution: "[execute] step 1, segment 0 (explored, lazy,
 * plan #1): 4 ops → 2 launches: fusec_k1_0 ElementWise score=420 ops[1-3];
 * fusec_k1_1 un-fused Module::MaxPool2d ops[4]". */
static void execute_line(const Schedule *s, int si, Buf *b)
{
	const Step *st = &s->steps[si];
	static const char *const kinds[] = {"explored", "cache hit", "unfused"};
	buf_printf(b, "[execute] step %d, segment %d (%s, %s", si, st->segment, kinds[st->kind],
		   mode_name(st->mode));
	if (st->plan >= 0)
		buf_printf(b, ", plan #%d", st->plan);
	if (st->guarded)
		buf_puts(b, ", guarded: unfused");
	int n = 0;
	for (int i = 0; i < st->nops; i++)
		n += s->g->ops[st->ops[i]].kind != OP_SYNC;
	buf_printf(b, "): %d op%s → %d launch%s", n, n == 1 ? "" : "s", st->nlaunch,
		   st->nlaunch == 1 ? "" : "es");
	for (int i = 0; i < st->nlaunch; i++) {
		const Launch *l = &st->launch[i];
		const Kernel *k = &s->kernels[l->kernel];
		buf_printf(b, "%s %s ", i ? ";" : ":", k->name);
		if (k->fuser >= 0) {
			buf_printf(b, "%s score=%llu ", pass_fuser_name(k->fuser),
				   (unsigned long long)k->score);
		} else {
			char kind[96];
			buf_printf(b, "un-fused %s ", l->nops == 1 ?
				   ir_op_display(s->g, &s->g->ops[l->ops[0]], kind, sizeof kind) : "");
		}
		op_ranges(b, l->ops, l->nops);
	}
	buf_putc(b, '\n');
}

static void write_event(const Schedule *s, const Event *e, Buf *b)
{
	char k[400];
	switch ((EventKind)e->kind) {
	case EV_REGISTER_NEW:
		buf_printf(b, "[stream] op %d %s → new block (total: %d)\n", e->a,
			   kind_of(s, e->op, k, sizeof k), e->b);
		break;
	case EV_REGISTER_ACCEPTED:
		buf_printf(b, "[stream] op %d %s → accepted in %d/%d block(s)\n", e->a,
			   kind_of(s, e->op, k, sizeof k), e->b, e->c);
		break;
	case EV_REGISTER_DEPENDENT:
		buf_printf(b, "[stream] op %d %s → new dependent block (total: %d)\n", e->a,
			   kind_of(s, e->op, k, sizeof k), e->b);
		break;
	case EV_REGISTER_DROPPED:
		buf_printf(b, "[stream] %s dropped (optimizer stopped at op %d)\n",
			   kind_of(s, e->op, k, sizeof k), e->b);
		break;
	case EV_STOPPED:
		if (e->c == 2)
			buf_printf(b, "[stream] stopped (unresolvable dependency cycle) at op %d (%s)\n",
				   e->a, kind_of(s, e->op, k, sizeof k));
		else
			buf_printf(b, "[stream] stopped (max_blocks=%d reached%s) at op %d (%s)\n", e->b,
				   e->c == 1 ? " on dependency" : "", e->a, kind_of(s, e->op, k, sizeof k));
		break;
	case EV_MERGE:
		if (e->b < e->a)
			buf_printf(b, "[merge] %d blocks merged into %d (%s)\n", e->a, e->b,
				   e->d == 2 ? "before settling" : e->d == 1 ? "forced at max_blocks" :
				   "an op reads from several blocks");
		break;
	case EV_MERGE_REFUSED:
		buf_printf(b, "[merge] refused: blocks starting at op %d and op %d (%s)\n", e->a, e->b,
			   merge_refusal(e->reason));
		break;
	case EV_FUSER_CLOSED:
		buf_printf(b, "[fuser] closed on %s (%s, %s); had %d op%s\n",
			   kind_of(s, e->op, k, sizeof k), pass_fuser_name(e->a),
			   pass_close_reason(e->reason), e->b, e->b == 1 ? "" : "s");
		break;
	case EV_STILL_OPT_FALSE:
		buf_printf(b, "[explorer] still_optimizing → false after op %s\n",
			   kind_of(s, e->op, k, sizeof k));
		break;
	case EV_EXPLORE:
		buf_printf(b, "[explorer] explore (%s): %d deferred of %d queued\n", mode_name(e->mode),
			   e->a, e->b);
		break;
	case EV_EXPLORATION_LIMIT:
		buf_printf(b, "[explorer] max_explorations reached: running %d operations unfused\n",
			   e->a);
		break;
	case EV_BLOCK:
		if (e->c >= 0)
			buf_printf(b, "[block] %d op%s, starting at %s: best %s (score=%llu, %d op%s)\n",
				   e->b, e->b == 1 ? "" : "s", kind_of(s, e->op, k, sizeof k),
				   pass_fuser_name(e->c), (unsigned long long)e->score, e->d,
				   e->d == 1 ? "" : "s");
		else
			buf_printf(b, "[block] %d op%s, starting at %s: no fuser ready with score > 0; "
				   "unfusable head of %d op%s settled\n", e->b, e->b == 1 ? "" : "s",
				   kind_of(s, e->op, k, sizeof k), e->d, e->d == 1 ? "" : "s");
		break;
	case EV_BLOCK_FUSER:
		buf_printf(b, "[score]   %-17s %s score=%llu, %d op%s", pass_fuser_name(e->b),
			   e->c & BF_READY ? "ready    " : "not ready",
			   (unsigned long long)e->score, e->d, e->d == 1 ? "" : "s");
		if (e->c & BF_CLOSED)
			buf_printf(b, ", closed on %s (%s)", kind_of(s, e->op, k, sizeof k),
				   pass_close_reason(e->reason));
		else
			buf_puts(b, ", open");
		buf_putc(b, '\n');
		break;
	case EV_HOLES:
		buf_printf(b, "[holes] %d unclaimed op(s) between claimed ones: searching them again\n",
			   e->a);
		break;
	case EV_SELECTED:
		if (e->a > 1)
			buf_printf(b, "selected composed strategy (%d sub-strategies)\n", e->a);
		else
			buf_puts(b, "selected single strategy\n");
		break;
	case EV_REPAIR:
		buf_printf(b, "[repair] falling back to unfused stream order (%d ops)\n", e->a);
		break;
	case EV_COMPLETED:
		buf_printf(b, "[plan] exploration completed: %s, %d/%d ops optimized\n",
			   mode_name(e->mode), e->a, e->b);
		break;
	case EV_CACHE_HIT:
		buf_printf(b, "[plan] cache hit: execute plan #%d (%s, segment has %d ops)\n", e->a,
			   mode_name(e->mode), e->b);
		break;
	case EV_GUARD:
		buf_printf(b, "[plan] #%d needs relative shape id %d but the stream assigned %d; "
			   "running its %d operations unfused\n", e->a, e->b, e->c, e->d);
		break;
	case EV_EXECUTE:
	case EV_BLOCK_OP:
		break;
	}
}

void pass_log_write(const Schedule *s, LogLevel level, FILE *f)
{
	if (level == LOG_OFF)
		return;
	Buf b = {0};
	if (s->opt.log_json) {
		pass_log_write_json(s, level, &b);
		if (b.len)
			fwrite(b.data, 1, b.len, f);
		buf_free(&b);
		return;
	}
	for (int i = 0; i < s->rec->n; i++) {
		const Event *e = &s->rec->ev[i];
		if (e->kind == EV_EXECUTE) {
			if (level >= LOG_FULL) {
				pass_trace_table(s, e->a, &b);
				buf_putc(&b, '\n');
			} else if (level == LOG_MEDIUM) {
				execute_line(s, e->a, &b);
			}
		} else if (pass_event_level(e->kind) <= level) {
			write_event(s, e, &b);
		}
		if (b.len > 1 << 16) {
			fwrite(b.data, 1, b.len, f);
			b.len = 0;
		}
	}
	if (b.len)
		fwrite(b.data, 1, b.len, f);
	buf_free(&b);
}

void pass_strategy_print(Buf *b, const Strategy *st)
{
	switch (st->kind) {
	case STRAT_COMPOSED:
		buf_puts(b, "Composed[");
		for (int i = 0; i < st->n; i++) {
			if (i)
				buf_puts(b, ", ");
			pass_strategy_print(b, st->sub[i]);
		}
		buf_putc(b, ']');
		return;
	case STRAT_FUSED:
		buf_printf(b, "Optimization(%s, score=%llu, [", pass_fuser_name(st->fuser),
			   (unsigned long long)st->score);
		break;
	case STRAT_OPS:
		buf_puts(b, "Operations([");
		break;
	}
	for (int i = 0; i < st->n; i++)
		buf_printf(b, "%s%d", i ? "," : "", st->ordering[i]);
	buf_puts(b, "])");
}
