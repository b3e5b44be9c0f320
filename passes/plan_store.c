/* plan_store.c: the plan store and the policy that matches the queue against it
 * (SPEC §3 "Plan store").
 *
 * Plans are stored once, with ids in creation order, and indexed by the hash of
 * their first relative op; a hash collision is resolved by equality, so each index
 * entry is one distinct first op with the plans that start with it.
 *
 * The policy follows the queue op by op: on a segment's first op every plan that
 * starts with it becomes a candidate; each further op drops the candidates that
 * differ. A candidate matched to its end becomes available, and its triggers are
 * then checked: OnOperations compares the ops that follow the plan, Always holds at
 * once, OnSync holds only at a sync. Lazy mode defers while anything is still being
 * compared; sync mode executes an available plan that covers the whole queue, or,
 * failing that, the longest available plan with an OnSync trigger.
 *
 * Once no candidate is left and every OnOperations trigger of the available plans
 * has been decided, nothing a further op brings can change the answer: the policy
 * is settled, and the processor stops converting ops just to show them to it. */
#include <stdlib.h>
#include <string.h>

#include "search.h"

void store_init(PlanStore *st)
{
	memset(st, 0, sizeof *st);
	st->nbuckets = 256;
	st->bucket = xmalloc(sizeof(int) * (size_t)st->nbuckets);
	memset(st->bucket, 0xff, sizeof(int) * (size_t)st->nbuckets);
}

void store_free(PlanStore *st)
{
	for (int i = 0; i < st->nstarters; i++)
		free(st->starters[i].ids);
	free(st->starters);
	free(st->bucket);
	free(st->plans);
	memset(st, 0, sizeof *st);
}

static int find_starter(const PlanStore *st, const RelOp *op)
{
	for (int s = st->bucket[op->hash & (uint64_t)(st->nbuckets - 1)]; s >= 0;
	     s = st->starters[s].next)
		if (st->starters[s].op.hash == op->hash && ir_rel_equal(&st->starters[s].op, op))
			return s;
	return -1;
}

static void rehash(PlanStore *st)
{
	st->nbuckets *= 2;
	st->bucket = xrealloc(st->bucket, sizeof(int) * (size_t)st->nbuckets);
	memset(st->bucket, 0xff, sizeof(int) * (size_t)st->nbuckets);
	for (int s = 0; s < st->nstarters; s++) {
		int b = (int)(st->starters[s].op.hash & (uint64_t)(st->nbuckets - 1));
		st->starters[s].next = st->bucket[b];
		st->bucket[b] = s;
	}
}

int store_add(PlanStore *st, Plan *p)
{
	if (p->nops == 0)
		die("empty plan");
	if (st->n == st->cap) {
		st->cap = st->cap ? st->cap * 2 : 16;
		st->plans = xrealloc(st->plans, sizeof(Plan *) * (size_t)st->cap);
	}
	p->id = st->n;
	st->plans[st->n++] = p;
	int s = find_starter(st, &p->ops[0]);
	if (s < 0) {
		if (st->nstarters == st->capstarters) {
			st->capstarters = st->capstarters ? st->capstarters * 2 : 16;
			st->starters = xrealloc(st->starters,
						sizeof(struct Starter) * (size_t)st->capstarters);
		}
		s = st->nstarters++;
		memset(&st->starters[s], 0, sizeof st->starters[s]);
		st->starters[s].op = p->ops[0];
		int b = (int)(p->ops[0].hash & (uint64_t)(st->nbuckets - 1));
		st->starters[s].next = st->bucket[b];
		st->bucket[b] = s;
		if (st->nstarters > st->nbuckets)
			rehash(st);
	}
	struct Starter *sp = &st->starters[s];
	if (sp->nids == sp->cap) {
		sp->cap = sp->cap ? sp->cap * 2 : 4;
		sp->ids = xrealloc(sp->ids, sizeof(int) * (size_t)sp->cap);
	}
	sp->ids[sp->nids++] = p->id;
	return p->id;
}

static bool trigger_equal(const Trigger *a, const Trigger *b)
{
	if (a->kind != b->kind || a->nops != b->nops)
		return false;
	for (int i = 0; i < a->nops; i++)
		if (!ir_rel_equal(&a->ops[i], &b->ops[i]))
			return false;
	return true;
}

void store_add_trigger(PlanStore *st, int id, const Trigger *t, Arena *a)
{
	Plan *p = st->plans[id];
	for (int i = 0; i < p->ntriggers; i++)
		if (trigger_equal(&p->triggers[i], t))
			return;
	if (p->ntriggers == p->cap_triggers) {
		int cap = p->cap_triggers ? p->cap_triggers * 2 : 2;
		Trigger *nt = ARENA_NEW(a, Trigger, cap);
		if (p->ntriggers)
			memcpy(nt, p->triggers, sizeof(Trigger) * (size_t)p->ntriggers);
		p->triggers = nt;
		p->cap_triggers = cap;
	}
	Trigger *d = &p->triggers[p->ntriggers++];
	d->kind = t->kind;
	d->nops = t->nops;
	d->ops = NULL;
	if (t->nops) {
		d->ops = ARENA_NEW(a, RelOp, t->nops);
		for (int i = 0; i < t->nops; i++)
			ir_rel_copy(a, &d->ops[i], &t->ops[i]);
	}
}

const int *store_starting_with(const PlanStore *st, const RelOp *op, int *n)
{
	int s = find_starter(st, op);
	if (s < 0) {
		*n = 0;
		return NULL;
	}
	*n = st->starters[s].nids;
	return st->starters[s].ids;
}

/* ---- policy ---------------------------------------------------------------------- */

enum { V_VALIDATING, V_FOUND, V_INVALID };

void policy_init(Policy *p)
{
	memset(p, 0, sizeof *p);
	p->found_id = -1;
}

void policy_free(Policy *p)
{
	for (int i = 0; i < p->navail; i++)
		free(p->avail[i].trig);
	free(p->avail);
	free(p->cand);
	memset(p, 0, sizeof *p);
}

void policy_reset(Policy *p)
{
	for (int i = 0; i < p->navail; i++)
		free(p->avail[i].trig);
	p->navail = 0;
	p->ncand = 0;
	p->nops = 0;
	p->found_id = -1;
	p->settled = false;
}

bool policy_settled(const Policy *p)
{
	return p->settled;
}

void policy_skip(Policy *p, int n)
{
	if (!p->settled)
		die("policy skipped %d ops while unsettled", n);
	p->nops += n;
}

/* Whether no op can change what policy_action answers from now on. */
static bool settled_now(const Policy *p)
{
	if (p->ncand)
		return false;
	for (int i = 0; i < p->navail; i++)
		for (int t = 0; t < p->avail[i].ntrig; t++) {
			const struct TrigVal *tv = &p->avail[i].trig[t];
			if (tv->kind == TRIG_ON_OPERATIONS && (!tv->init || tv->state == V_VALIDATING))
				return false;
		}
	return true;
}

void policy_update(Policy *p, const PlanStore *st, const RelOp *op)
{
	if (p->nops == 0) {
		int n;
		const int *ids = store_starting_with(st, op, &n);
		if (n > p->capcand) {
			p->capcand = n;
			p->cand = xrealloc(p->cand, sizeof(Candidate) * (size_t)n);
		}
		for (int i = 0; i < n; i++)
			p->cand[i] = (Candidate){ids[i], V_VALIDATING, 0};
		p->ncand = n;
	}
	/* compare the candidates */
	int k = 0;
	for (int i = 0; i < p->ncand; i++) {
		Candidate c = p->cand[i];
		const Plan *plan = st->plans[c.id];
		if (p->nops >= plan->nops || !ir_rel_equal(&plan->ops[p->nops], op))
			continue;
		if (p->nops + 1 == plan->nops) {
			if (p->navail == p->capavail) {
				p->capavail = p->capavail ? p->capavail * 2 : 4;
				p->avail = xrealloc(p->avail, sizeof(Available) * (size_t)p->capavail);
			}
			Available *a = &p->avail[p->navail++];
			a->id = c.id;
			a->size = plan->nops;
			a->ntrig = plan->ntriggers;
			a->trig = xcalloc((size_t)(plan->ntriggers ? plan->ntriggers : 1),
					  sizeof(struct TrigVal));
			for (int t = 0; t < plan->ntriggers; t++)
				a->trig[t].kind = plan->triggers[t].kind;
			continue;
		}
		p->cand[k++] = c;
	}
	p->ncand = k;
	/* follow the OnOperations triggers of the available plans */
	for (int i = 0; i < p->navail; i++) {
		Available *a = &p->avail[i];
		const Plan *plan = st->plans[a->id];
		for (int t = 0; t < a->ntrig; t++) {
			struct TrigVal *tv = &a->trig[t];
			if (tv->kind != TRIG_ON_OPERATIONS)
				continue;
			if (!tv->init) {
				tv->init = true;
				continue;
			}
			if (tv->state == V_VALIDATING) {
				const Trigger *tr = &plan->triggers[t];
				if (tv->checked < tr->nops && ir_rel_equal(&tr->ops[tv->checked], op))
					tv->state = tv->checked + 1 == tr->nops ? V_FOUND : V_VALIDATING;
				else
					tv->state = V_INVALID;
			}
			tv->checked++;
		}
	}
	/* a trigger that holds: after every update, the first available plan (in the
	 * order they became available) with one, as burn's check_availables does; a
	 * found trigger stays found, so found only moves to an earlier plan */
	for (int i = 0, hit = 0; i < p->navail && !hit; i++)
		for (int t = 0; t < p->avail[i].ntrig; t++) {
			const struct TrigVal *tv = &p->avail[i].trig[t];
			if (tv->kind == TRIG_ALWAYS ||
			    (tv->kind == TRIG_ON_OPERATIONS && tv->state == V_FOUND)) {
				p->found_id = p->avail[i].id;
				p->found_size = p->avail[i].size;
				hit = 1;
				break;
			}
		}
	p->nops++;
	p->settled = settled_now(p);
}

Action policy_action(const Policy *p, const PlanStore *st, int nops, ExecMode mode)
{
	(void)st;
	if (p->nops < nops)
		die("policy asked about %d ops, analysed %d", nops, p->nops);
	/* found runs whatever its size (burn's action); the processor asks with the
	 * queue the policy analysed, so the size check below never refuses */
	if (p->found_id >= 0 && p->found_size <= nops)
		return (Action){ACT_EXECUTE, p->found_id};
	if (mode == MODE_LAZY) {
		if (p->ncand)
			return (Action){ACT_DEFER, -1};
		for (int i = 0; i < p->navail; i++) {
			if (p->avail[i].size == nops)
				return (Action){ACT_DEFER, -1};
			for (int t = 0; t < p->avail[i].ntrig; t++)
				if (p->avail[i].trig[t].kind == TRIG_ON_OPERATIONS &&
				    p->avail[i].trig[t].state == V_VALIDATING)
					return (Action){ACT_DEFER, -1};
		}
		return (Action){ACT_EXPLORE, -1};
	}
	/* burn's action_sync: a plan of the whole queue (a candidate of the queue's
	 * length has become available at its last op) */
	for (int i = 0; i < p->navail; i++)
		if (p->avail[i].size == nops)
			return (Action){ACT_EXECUTE, p->avail[i].id};
	if (p->burn_exact)
		return (Action){ACT_EXPLORE, -1};
	/* fusec (docs/burn-fidelity.md row 7, deliberate): else the longest shorter
	 * plan with an OnSync trigger. burn explores again here, and each exploration
	 * re-reads the whole rest of the queue: quadratic when a segment is long and
	 * an open fuser keeps the explorer waiting (the issue-10 transformer) */
	int best = -1, best_size = 0;
	for (int i = 0; i < p->navail; i++) {
		if (p->avail[i].size > nops || p->avail[i].size <= best_size)
			continue;
		for (int t = 0; t < p->avail[i].ntrig; t++)
			if (p->avail[i].trig[t].kind == TRIG_ON_SYNC) {
				best = p->avail[i].id;
				best_size = p->avail[i].size;
				break;
			}
	}
	if (best >= 0)
		return (Action){ACT_EXECUTE, best};
	return (Action){ACT_EXPLORE, -1};
}
