/* processor.c: the pass pipeline: burn's runtime, simulated ahead of time
 * (SPEC §3 "Processor").
 *
 * Ops are registered in stream order. Each stream has a queue (the global ops and
 * their relative form), a policy that matches the queue against the plan store,
 * and an explorer (the stream optimizer). After every registered op the stream's
 * processor runs in Lazy mode; every `sync`, and the end of the graph, drains all
 * streams in Sync mode. Each processor pass loops: Execute a stored plan whose
 * trigger holds, Defer while a candidate is still being compared (Lazy only), or
 * Explore. Executing a plan turns it into a Step with its launches and drops its
 * ops from the queue; the rest is in relative form from the new head.
 *
 * The cost of executing a plan does not depend on the queue's length: the queue is
 * converted into relative form lazily, behind a watermark, only as far as the
 * policy, the explorer or a launch reads it, and the policy's replay of the queue
 * stops as soon as no further op can change its answer (policy_settled). A long
 * segment that only a final sync executes, plan after plan, stays linear.
 *
 * Streams share tensors: an op that reads a tensor whose producer still waits in
 * another stream's queue first drains that stream in Sync mode (as burn does for a
 * tensor handed across streams), so every launch reads memory already written.
 *
 * Everything the search decides is appended to the schedule's record. */
#include <stdlib.h>
#include <string.h>

#include "search.h"

typedef struct {
	int stream;
	int *ops;              /* queued global op indices: opbuf + head */
	int *opbuf;            /* cap slots; the queue is [head, head + n) */
	int head;
	RelOp *rel;            /* their relative form, from the queue head: [0, nconv) */
	int *shapes;           /* shape ids assigned after converting each op: [0, nconv) */
	int n, cap;
	int nconv;             /* the watermark: ops converted since the head last moved */
	Arena *rel_arena;
	RelConv *conv;
	Policy policy;
	StreamOpt opt;
	SearchCtx ctx;
	int num_deferred;
	bool still_optimizing;
	int num_explorations;
	bool *queued;          /* per global op: waiting in some stream's queue (shared) */
} Stream;

typedef struct {
	Schedule *s;
	PlanStore store;
	Stream *streams;
	int *seg_of;           /* op -> segment index */
	int *nreads;           /* tensor -> number of operand reads in the graph */
	int *scratch;          /* tensor -> count, zero between uses */
	bool *queued;          /* op -> waiting in its stream's queue (shared by streams) */
	int nstreams;
	int capsteps, capkernels;
} Search;

/* ---- the queue ------------------------------------------------------------------ */

static void convert(Stream *st, int k)
{
	ir_rel_op(st->conv, st->rel_arena, st->ops[k], &st->rel[k]);
	int n;
	ir_rel_dims(st->conv, &n);
	st->shapes[k] = n;
}

/* Convert the queue up to (not including) k. */
static void convert_upto(Stream *st, int k)
{
	while (st->nconv < k) {
		convert(st, st->nconv);
		st->nconv++;
	}
}

static const RelOp *rel_at(Stream *st, int i)
{
	convert_upto(st, i + 1);
	return &st->rel[i];
}

static int shapes_at(Stream *st, int i)
{
	convert_upto(st, i + 1);
	return st->shapes[i];
}

static void queue_push(Stream *st, int op)
{
	if (st->head + st->n == st->cap) {
		if (st->head > 0 && st->head >= st->cap / 2) {
			/* drained ops hold at least half the buffer: slide the queue down */
			memmove(st->opbuf, st->ops, sizeof(int) * (size_t)st->n);
			st->head = 0;
		} else {
			st->cap = st->cap ? st->cap * 2 : 64;
			st->opbuf = xrealloc(st->opbuf, sizeof(int) * (size_t)st->cap);
			st->rel = xrealloc(st->rel, sizeof(RelOp) * (size_t)st->cap);
			st->shapes = xrealloc(st->shapes, sizeof(int) * (size_t)st->cap);
		}
		st->ops = st->opbuf + st->head;
	}
	st->ops[st->n] = op;
	st->queued[op] = true;
	st->n++;
	st->ctx.global = st->ops;
}

static void queue_drain(Stream *st, int k)
{
	for (int i = 0; i < k; i++)
		st->queued[st->ops[i]] = false;
	st->head += k;
	st->ops += k;
	st->n -= k;
	st->ctx.global = st->ops;
	Arena *old = st->rel_arena;
	st->rel_arena = arena_new();
	ir_rel_reset(st->conv);
	st->nconv = 0;
	arena_free(old);
}

/* ---- steps, launches, kernels ----------------------------------------------------- */

static Step *new_step(Search *se, Stream *st, StepKind kind, ExecMode mode, int plan)
{
	Schedule *s = se->s;
	if (s->nsteps == se->capsteps) {
		se->capsteps = se->capsteps ? se->capsteps * 2 : 64;
		s->steps = xrealloc(s->steps, sizeof(Step) * (size_t)se->capsteps);
	}
	Step *step = &s->steps[s->nsteps++];
	memset(step, 0, sizeof *step);
	step->kind = kind;
	step->mode = mode;
	step->stream = st->stream;
	step->segment = se->seg_of[st->ops[0]];
	step->plan = plan;
	return step;
}

static int new_kernel(Search *se, const char *name, int fuser, uint64_t score, int plan,
		      const int *rel, const int *ops, int n)
{
	Schedule *s = se->s;
	if (s->nkernels == se->capkernels) {
		se->capkernels = se->capkernels ? se->capkernels * 2 : 64;
		s->kernels = xrealloc(s->kernels, sizeof(Kernel) * (size_t)se->capkernels);
	}
	Kernel *k = &s->kernels[s->nkernels];
	k->name = arena_strdup(s->arena, name);
	k->fuser = fuser;
	k->score = score;
	k->plan = plan;
	k->nops = n;
	k->rel = ARENA_NEW(s->arena, int, n);
	k->ops = ARENA_NEW(s->arena, int, n);
	memcpy(k->rel, rel, sizeof(int) * (size_t)n);
	memcpy(k->ops, ops, sizeof(int) * (size_t)n);
	return s->nkernels++;
}

static void add_launch(Search *se, Stream *st, Step *step, int kernel, const int *pos, int n)
{
	Schedule *s = se->s;
	const Graph *g = s->g;
	Launch *l = &step->launch[step->nlaunch++];
	l->kernel = kernel;
	l->nops = n;
	l->ops = ARENA_NEW(s->arena, int, n);
	int nin = 0, nout = 0;
	for (int i = 0; i < n; i++) {
		const Op *op = &g->ops[st->ops[pos[i]]];
		l->ops[i] = st->ops[pos[i]];
		nin += op->nin;
		nout += op->nout;
	}
	l->in = ARENA_NEW(s->arena, int, nin ? nin : 1);
	l->out = ARENA_NEW(s->arena, int, nout ? nout : 1);
	/* inputs: read before produced here; outputs: needed after the kernel */
	for (int i = 0; i < n; i++) {
		const Op *op = &g->ops[l->ops[i]];
		for (int j = 0; j < op->nin; j++) {
			int t = op->in[j];
			se->scratch[t]++;
			bool seen = false;
			for (int k = 0; k < i && !seen; k++)
				seen = g->ops[l->ops[k]].nout > 0 && g->ops[l->ops[k]].out[0] == t;
			for (int k = 0; k < l->nin && !seen; k++)
				seen = l->in[k] == t;
			if (!seen)
				l->in[l->nin++] = t;
		}
	}
	for (int i = 0; i < n; i++) {
		const Op *op = &g->ops[l->ops[i]];
		for (int j = 0; j < op->nout; j++) {
			int t = op->out[j];
			if (g->tensors[t].is_output || se->scratch[t] < se->nreads[t])
				l->out[l->nout++] = t;
		}
	}
	for (int i = 0; i < n; i++) {
		const Op *op = &g->ops[l->ops[i]];
		for (int j = 0; j < op->nin; j++)
			se->scratch[op->in[j]] = 0;
	}
}

/* An NHWCRelayout strategy runs as burn's does (optim/nhwc_relayout/optimization.rs):
 * a launch of its trace, then one of the pool alone (its last op). */
static bool nhwc_split(const Strategy *st)
{
	return st->kind == STRAT_FUSED && st->fuser == pass_nhwc_fuser() && st->n >= 2;
}

/* The length of the launch starting at position i of a fused or unfused strategy. */
static int launch_len(const Strategy *s, int i)
{
	if (s->kind != STRAT_FUSED)
		return 1;
	if (nhwc_split(s))
		return i == 0 ? s->n - 1 : 1;
	return s->n;
}

static int count_launches(const Strategy *st)
{
	if (st->kind == STRAT_COMPOSED) {
		int n = 0;
		for (int i = 0; i < st->n; i++)
			n += count_launches(st->sub[i]);
		return n;
	}
	return st->kind == STRAT_FUSED ? 1 + nhwc_split(st) : st->n;
}

static void plan_kernels(Search *se, Stream *st, Plan *p, const Strategy *s, int *unit)
{
	if (s->kind == STRAT_COMPOSED) {
		for (int i = 0; i < s->n; i++)
			plan_kernels(se, st, p, s->sub[i], unit);
		return;
	}
	for (int i = 0, per; i < s->n; i += per) {
		per = launch_len(s, i);
		char name[64];
		int *gops = xmalloc(sizeof(int) * (size_t)per);
		for (int k = 0; k < per; k++)
			gops[k] = st->ops[s->ordering[i + k]];
		snprintf(name, sizeof name, "fusec_k%d_%d", p->id, (*unit)++);
		new_kernel(se, name, s->kind == STRAT_FUSED ? s->fuser : -1, s->score, p->id,
			   s->ordering + i, gops, per);
		free(gops);
	}
}

static void step_launches(Search *se, Stream *st, Step *step, const Strategy *s, int *kernel)
{
	if (s->kind == STRAT_COMPOSED) {
		for (int i = 0; i < s->n; i++)
			step_launches(se, st, step, s->sub[i], kernel);
		return;
	}
	for (int i = 0, per; i < s->n; i += per) {
		per = launch_len(s, i);
		add_launch(se, st, step, *kernel, s->ordering + i, per);
		(*kernel)++;
	}
	for (int i = 0; i < s->n; i++)
		step->ops[step->nops++] = st->ops[s->ordering[i]];
}

/* A step that runs the first n queued ops one by one, in stream order. */
static void step_unfused(Search *se, Stream *st, Step *step, int n)
{
	Schedule *s = se->s;
	step->ops = ARENA_NEW(s->arena, int, n);
	step->launch = ARENA_NEW(s->arena, Launch, n);
	for (int i = 0; i < n; i++) {
		char name[48];
		snprintf(name, sizeof name, "fusec_op%d", st->ops[i]);
		int k = new_kernel(se, name, -1, 0, -1, &i, &st->ops[i], 1);
		add_launch(se, st, step, k, &i, 1);
		step->ops[step->nops++] = st->ops[i];
	}
}

static void record_execute(Search *se, Stream *st)
{
	Event *e = rec_add(se->s->rec, EV_EXECUTE, st->stream);
	e->a = se->s->nsteps - 1;
}

static void execute_plan(Search *se, Stream *st, int id, StepKind kind, ExecMode mode)
{
	Schedule *s = se->s;
	Plan *p = se->store.plans[id];
	int len = p->nops;
	int assigned = shapes_at(st, (len < st->n ? len : st->n) - 1);
	Step *step = new_step(se, st, kind, mode, id);
	if (p->max_shape_id >= assigned || len > st->n) {
		if (s->rec->on) {
			Event *e = rec_add(s->rec, EV_GUARD, st->stream);
			e->a = id;
			e->b = p->max_shape_id;
			e->c = assigned;
			e->d = len;
		}
		step->guarded = 1;
		step_unfused(se, st, step, len);
	} else {
		step->ops = ARENA_NEW(s->arena, int, len);
		step->launch = ARENA_NEW(s->arena, Launch, count_launches(p->strategy));
		int k = p->first_kernel;
		step_launches(se, st, step, p->strategy, &k);
	}
	record_execute(se, st);
	queue_drain(st, len);
}

/* ---- the processor ------------------------------------------------------------------ */

/* Offer queued op i (the next one the policy has not seen) to the policy; once the
 * policy is settled, no op can change it, and none is converted for it. */
static void policy_feed(Search *se, Stream *st, int i)
{
	if (policy_settled(&st->policy))
		policy_skip(&st->policy, 1);
	else
		policy_update(&st->policy, &se->store, rel_at(st, i));
}

static void processor_reset(Search *se, Stream *st)
{
	sopt_reset(&st->opt);
	st->num_deferred = st->n;
	st->still_optimizing = true;
	policy_reset(&st->policy);
	for (int i = 0; i < st->n; i++) {
		if (policy_settled(&st->policy)) {
			policy_skip(&st->policy, st->n - i);
			break;
		}
		policy_update(&st->policy, &se->store, rel_at(st, i));
	}
}

static int on_exploration_completed(Search *se, Stream *st, BlockOpt bo, ExecMode mode)
{
	Schedule *s = se->s;
	int n = bo.n;
	Trigger t = {TRIG_ON_SYNC, 0, NULL};
	if (mode == MODE_LAZY) {
		t.kind = n == st->n ? TRIG_ALWAYS : TRIG_ON_OPERATIONS;
		t.nops = st->n - n;
		convert_upto(st, st->n);
		t.ops = st->rel + n;
	}
	int id = -1;
	for (int i = 0; i < st->policy.navail && id < 0; i++)
		if (st->policy.avail[i].size == n)
			id = st->policy.avail[i].id;
	Event *e = rec_add(s->rec, EV_COMPLETED, st->stream);
	e->mode = (uint8_t)mode;
	e->a = n;
	e->b = st->n;
	if (id >= 0) {
		store_add_trigger(&se->store, id, &t, s->arena);
		e->c = id;
		return id;
	}
	Plan *p = ARENA_NEW(s->arena, Plan, 1);
	p->nops = n;
	p->ops = ARENA_NEW(s->arena, RelOp, n);
	convert_upto(st, n);
	for (int i = 0; i < n; i++) {
		ir_rel_copy(s->arena, &p->ops[i], &st->rel[i]);
		int m = ir_rel_max_shape_id(&p->ops[i]);
		if (m > p->max_shape_id)
			p->max_shape_id = m;
	}
	p->strategy = bo.strategy;
	id = store_add(&se->store, p);
	store_add_trigger(&se->store, id, &t, s->arena);
	p->first_kernel = s->nkernels;
	int unit = 0;
	plan_kernels(se, st, p, p->strategy, &unit);
	p->nkernels = s->nkernels - p->first_kernel;
	e = &s->rec->ev[s->rec->n - 1];
	e->c = id;
	e->d = 1;
	return id;
}

static void explore(Search *se, Stream *st, ExecMode mode)
{
	Schedule *s = se->s;
	Event *e = rec_add(s->rec, EV_EXPLORE, st->stream);
	e->mode = (uint8_t)mode;
	e->a = st->num_deferred;
	e->b = st->n;
	int max = s->opt.max_explorations;
	if (max >= 0 && st->num_explorations >= max) {
		st->num_deferred = 0;
		st->still_optimizing = false;
		rec_add(s->rec, EV_EXPLORATION_LIMIT, st->stream)->a = st->n;
		Step *step = new_step(se, st, STEP_UNFUSED, mode, -1);
		step_unfused(se, st, step, st->n);
		record_execute(se, st);
		queue_drain(st, st->n);
		processor_reset(se, st);
		return;
	}
	for (int i = st->num_deferred - 1; i >= 0; i--) {
		if (!st->still_optimizing)
			break;
		sopt_register(&st->opt, rel_at(st, st->n - 1 - i));
		bool before = st->still_optimizing;
		st->still_optimizing = sopt_still_optimizing(&st->opt);
		if (before && !st->still_optimizing && s->rec->on) {
			e = rec_add(s->rec, EV_STILL_OPT_FALSE, st->stream);
			e->op = st->ops[st->n - 1 - i];
		}
	}
	st->num_deferred = 0;
	if (mode == MODE_LAZY && st->still_optimizing)
		return;
	BlockOpt bo = sopt_optimize(&st->opt, st->rel, st->n, s->arena);
	/* fusec explores the tail left at a sync again (row 13, deliberate); burn
	 * folds it into the plan unfused */
	if (mode == MODE_SYNC && s->opt.burn_exact)
		bo = sopt_include_trailing(bo, st->n, s->arena);
	st->num_explorations++;
	s->nexplorations++;
	int id = on_exploration_completed(se, st, bo, mode);
	execute_plan(se, st, id, STEP_EXPLORED, mode);
	processor_reset(se, st);
}

static void process(Search *se, Stream *st, ExecMode mode)
{
	Schedule *s = se->s;
	if (mode == MODE_LAZY) {
		policy_feed(se, st, st->n - 1);
		st->num_deferred++;
	}
	while (st->n > 0) {
		Action act = policy_action(&st->policy, &se->store, st->n, mode);
		if (act.kind == ACT_EXPLORE) {
			explore(se, st, mode);
			if (st->num_deferred == 0)
				break;
		} else if (act.kind == ACT_DEFER) {
			if (mode == MODE_SYNC)
				die("deferred while syncing");
			break;
		} else {
			Event *e = rec_add(s->rec, EV_CACHE_HIT, st->stream);
			e->mode = (uint8_t)mode;
			e->a = act.plan;
			e->b = st->n;
			if (mode == MODE_SYNC) {
				Trigger t = {TRIG_ON_SYNC, 0, NULL};
				store_add_trigger(&se->store, act.plan, &t, s->arena);
			}
			s->nhits++;
			execute_plan(se, st, act.plan, STEP_CACHE_HIT, mode);
			processor_reset(se, st);
		}
	}
}

/* ---- the pipeline ----------------------------------------------------------------------- */

void pass_default_options(SearchOptions *o)
{
	memset(o, 0, sizeof *o);
	o->max_blocks = 5;
	o->max_explorations = -1;
	o->max_bindings = 32;
	o->log_level = LOG_OFF;
}

/* The search's state for s->g: per-op and per-tensor tables and one Stream each. */
static void search_open(Search *se, Schedule *s)
{
	const Graph *g = s->g;
	memset(se, 0, sizeof *se);
	se->s = s;
	store_init(&se->store);
	se->seg_of = xcalloc((size_t)(g->nops ? g->nops : 1), sizeof(int));
	for (int i = 0; i < g->nsegs; i++)
		for (int k = 0; k < g->segs[i].nops; k++)
			se->seg_of[g->segs[i].ops[k]] = i;
	se->nreads = xcalloc((size_t)(g->ntensors ? g->ntensors : 1), sizeof(int));
	se->scratch = xcalloc((size_t)(g->ntensors ? g->ntensors : 1), sizeof(int));
	for (int i = 0; i < g->nops; i++)
		for (int j = 0; j < g->ops[i].nin; j++)
			se->nreads[g->ops[i].in[j]]++;
	se->nstreams = g->nstreams > 0 ? g->nstreams : 1;
	se->queued = xcalloc((size_t)(g->nops ? g->nops : 1), sizeof(bool));
	se->streams = xcalloc((size_t)se->nstreams, sizeof(Stream));
	for (int i = 0; i < se->nstreams; i++) {
		Stream *st = &se->streams[i];
		st->stream = i;
		st->rel_arena = arena_new();
		st->conv = ir_rel_new(g);
		st->still_optimizing = true;
		st->queued = se->queued;
		policy_init(&st->policy);
		st->policy.burn_exact = s->opt.burn_exact;
		st->ctx = (SearchCtx){s, s->rec, i, s->opt.max_blocks, s->opt.max_bindings, NULL, 0,
				      s->opt.burn_exact};
		sopt_init(&st->opt, &st->ctx);
	}
}

/* Hand the stored plans to the schedule and free the search's state. */
static void search_close(Search *se)
{
	Schedule *s = se->s;
	s->nplans = se->store.n;
	s->plans = ARENA_NEW(s->arena, Plan *, s->nplans ? s->nplans : 1);
	if (s->nplans)
		memcpy(s->plans, se->store.plans, sizeof(Plan *) * (size_t)s->nplans);
	for (int i = 0; i < se->nstreams; i++) {
		Stream *st = &se->streams[i];
		sopt_free(&st->opt);
		policy_free(&st->policy);
		ir_rel_free(st->conv);
		arena_free(st->rel_arena);
		free(st->opbuf);
		free(st->rel);
		free(st->shapes);
	}
	free(se->streams);
	free(se->queued);
	free(se->seg_of);
	free(se->nreads);
	free(se->scratch);
	store_free(&se->store);
}

Schedule *pass_search(const Graph *g, const SearchOptions *opt)
{
	Schedule *s = xcalloc(1, sizeof *s);
	s->arena = arena_new();
	s->g = g;
	s->opt = *opt;
	if (s->opt.max_blocks < 1)
		s->opt.max_blocks = 1;
	s->rec = xcalloc(1, sizeof(Record));
	s->rec->on = !opt->no_record;
	Search se;
	search_open(&se, s);

	/* Each op goes to its stream's queue, which processes lazily; a sync, or an
	 * operand still queued on another stream, makes the streams concerned flush. */
	for (int i = 0; i < g->nops; i++) {
		const Op *op = &g->ops[i];
		if (op->kind == OP_SYNC) {
			for (int k = 0; k < se.nstreams; k++)
				process(&se, &se.streams[k], MODE_SYNC);
			continue;
		}
		Stream *st = &se.streams[op->stream];
		for (int k = 0; k < op->nin; k++) {
			int p = g->tensors[op->in[k]].producer;
			if (p >= 0 && g->ops[p].stream != op->stream && se.queued[p])
				process(&se, &se.streams[g->ops[p].stream], MODE_SYNC);
		}
		queue_push(st, i);
		process(&se, st, MODE_LAZY);
	}
	for (int k = 0; k < se.nstreams; k++)
		process(&se, &se.streams[k], MODE_SYNC);

	search_close(&se);
	if (opt->log && opt->log_level > LOG_OFF)
		pass_log_write(s, opt->log_level, opt->log);
	return s;
}

void pass_free_schedule(Schedule *s)
{
	if (!s)
		return;
	free(s->steps);
	free(s->kernels);
	free(s->rec->ev);
	free(s->rec);
	arena_free(s->arena);
	free(s);
}
