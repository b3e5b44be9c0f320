/* test_search.c: the fusion search: scoring, merges and cycle refusal, the plan
 * store and its triggers, and whole searches over small graphs. */
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "../../passes/search.h"

static void test_score_formula(void **state)
{
	(void)state;
	assert_int_equal(pass_score(10, 4, 4, 0), 630);   /* (a*b + c*2).exp() */
	assert_int_equal(pass_score(80, 10, 40, 0), 7390); /* five 8-op chains */
	assert_int_equal(pass_score(2, 2, 1, 0), 0);       /* one op */
	assert_int_equal(pass_score(10, 4, 4, 1), 580);    /* one input through a view */
	assert_int_equal(pass_score(2, 4, 1, 3), 0);       /* never negative */
}

static const char reuse_yaml[] =
	"format: fusec-graph/1\n"
	"inputs:\n"
	"  a: {dtype: f32, shape: [64, 64]}\n"
	"  b: {dtype: f32, shape: [64, 64]}\n"
	"  c: {dtype: f32, shape: [64, 32]}\n"
	"  d: {dtype: f32, shape: [64, 32]}\n"
	"ops:\n"
	"  - {op: mul, in: [a, b], out: t0}\n"
	"  - {op: exp, in: [t0], out: y0}\n"
	"  - {op: sync}\n"
	"  - {op: mul, in: [b, a], out: t1}\n"
	"  - {op: exp, in: [t1], out: y1}\n"
	"  - {op: sync}\n"
	"  - {op: mul, in: [c, d], out: t2}\n"
	"  - {op: exp, in: [t2], out: y2}\n"
	"outputs: [y0, y1, y2]\n";

static Schedule *search(Arena *a, const char *yaml, int max_blocks)
{
	Graph *g = test_graph(a, "t.yaml", yaml);
	SearchOptions o;
	pass_default_options(&o);
	o.max_blocks = max_blocks;
	return test_search(g, &o);
}

static void test_search_reuses_plans(void **state)
{
	(void)state;
	Arena *a = arena_new();
	Schedule *s = search(a, reuse_yaml, 5);
	assert_int_equal(s->nplans, 2);
	assert_int_equal(s->nexplorations, 2);
	assert_int_equal(s->nhits, 1);
	assert_int_equal(s->nsteps, 3);
	assert_int_equal(s->steps[1].kind, STEP_CACHE_HIT);
	assert_int_equal(s->steps[1].plan, 0);
	assert_int_equal(s->steps[2].kind, STEP_EXPLORED);
	/* one fused kernel per plan, reused by the cache hit */
	assert_int_equal(s->steps[1].launch[0].kernel, s->steps[0].launch[0].kernel);
	assert_int_equal(s->kernels[s->steps[0].launch[0].kernel].fuser, 0);
	assert_int_equal(s->kernels[s->steps[0].launch[0].kernel].score, 210);
	pass_free_schedule(s);
	arena_free(a);
}

static const char two_chains_yaml[] =
	"format: fusec-graph/1\n"
	"inputs:\n"
	"  x: {dtype: f32, shape: [8, 8]}\n"
	"  y: {dtype: f32, shape: [8, 8]}\n"
	"ops:\n"
	"  - {op: exp, in: [x], out: a}\n"
	"  - {op: exp, in: [y], out: b}\n"
	"  - {op: neg, in: [a], out: c}\n"
	"  - {op: neg, in: [b], out: d}\n"
	"outputs: [c, d]\n";

static void test_open_blocks_merge(void **state)
{
	(void)state;
	Arena *a = arena_new();
	Schedule *s = search(a, two_chains_yaml, 5);
	assert_int_equal(s->nsteps, 1);
	assert_int_equal(s->steps[0].nlaunch, 1);
	assert_int_equal(s->kernels[s->steps[0].launch[0].kernel].nops, 4);
	pass_free_schedule(s);
	arena_free(a);
}

/* Blocks A and B close ready; c = a4 + b4 opens C, d = c * a3 opens D; f = d + a1
 * touches A and D, and C lies between them. */
static const char cycle_yaml[] =
	"format: fusec-graph/1\n"
	"inputs:\n"
	"  o: {dtype: f32, shape: [64, 1]}\n"
	"  x: {dtype: f32, shape: [64, 64]}\n"
	"  y: {dtype: f32, shape: [64, 64]}\n"
	"ops:\n"
	"  - {op: neg, in: [o], out: o1}\n"
	"  - {op: exp, in: [x], out: a1}\n"
	"  - {op: sum, in: [a1], axis: 1, out: a2}\n"
	"  - {op: exp, in: [a2], out: a3}\n"
	"  - {op: sum, in: [a3], axis: 1, out: a4}\n"
	"  - {op: exp, in: [y], out: b1}\n"
	"  - {op: sum, in: [b1], axis: 1, out: b2}\n"
	"  - {op: exp, in: [b2], out: b3}\n"
	"  - {op: sum, in: [b3], axis: 1, out: b4}\n"
	"  - {op: add, in: [a4, b4], out: c}\n"
	"  - {op: mul, in: [c, a3], out: d}\n"
	"  - {op: add, in: [d, a1], out: f}\n"
	"  - {op: abs, in: [o1], out: o2}\n"
	"outputs: [f, o2]\n";

static void test_cycle_refused(void **state)
{
	(void)state;
	Arena *a = arena_new();
	Schedule *s = search(a, cycle_yaml, 8);
	int cycles = 0, no_gain = 0, dependent = 0;
	for (int i = 0; i < s->rec->n; i++) {
		const Event *e = &s->rec->ev[i];
		if (e->kind == EV_MERGE_REFUSED && e->reason == 0)
			cycles++;
		if (e->kind == EV_MERGE_REFUSED && e->reason == 2)
			no_gain++;
		if (e->kind == EV_REGISTER_DEPENDENT)
			dependent++;
	}
	assert_true(cycles >= 1);
	assert_true(no_gain >= 1);
	assert_int_equal(dependent, 3);
	/* every op still runs exactly once */
	int seen[16] = {0};
	for (int i = 0; i < s->nsteps; i++)
		for (int k = 0; k < s->steps[i].nops; k++)
			seen[s->steps[i].ops[k]]++;
	for (int i = 0; i < 13; i++)
		assert_int_equal(seen[i], 1);
	pass_free_schedule(s);
	arena_free(a);
}

static void test_merge_acceptance(void **state)
{
	(void)state;
	Arena *a = arena_new();
	Graph *g = test_graph(a, "t.yaml", cycle_yaml);
	RelConv *conv = ir_rel_new(g);
	RelOp r[13];
	for (int i = 0; i < 13; i++)
		ir_rel_op(conv, a, i, &r[i]);
	SearchCtx c = {0};
	Record rec = {0};
	c.rec = &rec;
	c.max_bindings = 32;
	c.max_blocks = 5;
	int global[13];
	for (int i = 0; i < 13; i++)
		global[i] = i;
	c.global = global;
	/* two closed blocks, both ready: refused */
	Block *x = block_new(&c), *y = block_new(&c);
	for (int i = 1; i <= 4; i++)
		block_register(x, &r[i], i, true, &c, false);
	for (int i = 5; i <= 8; i++)
		block_register(y, &r[i], i, true, &c, false);
	assert_false(block_still_optimizing(x));
	assert_true(block_has_ready(x));
	Block *m = block_clone(x);
	assert_false(block_merge(m, y));
	assert_int_equal(m->nops, x->nops);  /* a refused merge leaves the block as it was */
	assert_null(block_merged(x, y));
	block_free(m);
	/* an open block takes the other one: accepted */
	Block *o = block_new(&c);
	block_register(o, &r[0], 0, true, &c, false);
	Block *e = block_new(&c);
	block_register(e, &r[12], 12, true, &c, false);
	assert_true(block_can_append(o, e));
	assert_false(block_can_append(e, o));
	Block *oe = block_merged(o, e);
	assert_non_null(oe);
	assert_int_equal(oe->nops, 2);
	assert_int_equal(o->nops, 1);
	assert_true(block_merge(o, e));
	assert_int_equal(o->nops, 2);
	assert_int_equal(o->pos[1], 12);
	assert_int_equal(oe->pos[1], 12);
	block_free(oe);
	block_free(x);
	block_free(y);
	block_free(o);
	block_free(e);
	free(rec.ev);
	ir_rel_free(conv);
	arena_free(a);
}

/* Sets grow from inline slots to the heap, survive deletions, and copy or move
 * bytewise; the 64-bit member summary never answers a false intersection. */
static void test_intset(void **state)
{
	(void)state;
	IntSet s = {0}, t = {0}, u = {0};
	assert_false(iset_has(&s, 0));
	for (int v = 0; v < 100; v++)
		iset_add(&s, v * 3);
	iset_add(&s, 3);
	assert_int_equal(s.size, 100);
	for (int v = 0; v < 300; v++)
		assert_int_equal(iset_has(&s, v), v % 3 == 0);
	for (int v = 0; v < 300; v += 6)
		iset_del(&s, v);
	assert_int_equal(s.size, 50);
	for (int v = 0; v < 300; v++)
		assert_int_equal(iset_has(&s, v), v % 6 == 3);
	iset_copy(&t, &s);
	iset_del(&s, 3);
	assert_true(iset_has(&t, 3));
	assert_false(iset_has(&s, 3));
	int members = 0;
	ISET_EACH(&t, i)
		members++;
	assert_int_equal(members, 50);
	/* a set on the heap and a small one, copied with their struct, then owned */
	IntSet w = t;
	iset_own(&w);
	iset_add(&w, 1000);
	assert_false(iset_has(&t, 1000));
	iset_free(&w);
	iset_add(&u, 1);
	iset_add(&u, 2);
	IntSet v = u;
	iset_own(&v);
	iset_add(&v, 7);
	assert_false(iset_has(&u, 7));
	assert_true(iset_has(&v, 2));
	/* 1 and 65 share their summary bit */
	IntSet a = {0}, b = {0};
	iset_add(&a, 1);
	iset_add(&b, 65);
	assert_false(iset_intersects(&a, &b));
	iset_add(&b, 1);
	assert_true(iset_intersects(&a, &b));
	assert_true(iset_intersects(&s, &t));
	iset_clear(&t);
	assert_false(iset_intersects(&s, &t));
	assert_int_equal(t.size, 0);
	iset_free(&s);
	iset_free(&t);
	iset_free(&u);
	iset_free(&v);
	iset_free(&a);
	iset_free(&b);
}

static void test_store_and_triggers(void **state)
{
	(void)state;
	Arena *a = arena_new();
	Graph *g = test_graph(a, "t.yaml", reuse_yaml);
	RelConv *conv = ir_rel_new(g);
	RelOp r[2], q[2];
	ir_rel_op(conv, a, 0, &r[0]);
	ir_rel_op(conv, a, 1, &r[1]);
	ir_rel_reset(conv);
	ir_rel_op(conv, a, 3, &q[0]);
	ir_rel_op(conv, a, 4, &q[1]);
	assert_true(ir_rel_equal(&r[0], &q[0]));
	PlanStore st;
	store_init(&st);
	Plan p = {0};
	p.nops = 1;
	p.ops = r;
	assert_int_equal(store_add(&st, &p), 0);
	Trigger t = {TRIG_ON_OPERATIONS, 1, &r[1]};
	store_add_trigger(&st, 0, &t, a);
	store_add_trigger(&st, 0, &t, a);
	assert_int_equal(p.ntriggers, 1);
	int n;
	assert_non_null(store_starting_with(&st, &q[0], &n));
	assert_int_equal(n, 1);
	assert_null(store_starting_with(&st, &q[1], &n));

	Policy pol;
	policy_init(&pol);
	policy_update(&pol, &st, &q[0]);
	/* the plan matched; its trigger waits for the next op */
	assert_int_equal(policy_action(&pol, &st, 1, MODE_LAZY).kind, ACT_DEFER);
	policy_update(&pol, &st, &q[1]);
	Action act = policy_action(&pol, &st, 2, MODE_LAZY);
	assert_int_equal(act.kind, ACT_EXECUTE);
	assert_int_equal(act.plan, 0);

	/* a different next op invalidates OnOperations: explore */
	policy_reset(&pol);
	policy_update(&pol, &st, &q[0]);
	policy_update(&pol, &st, &q[0]);
	assert_int_equal(policy_action(&pol, &st, 2, MODE_LAZY).kind, ACT_EXPLORE);
	/* at a sync, burn runs only a plan of the whole queue (action_sync); fusec
	 * also runs the longest shorter OnSync plan (docs/burn-fidelity.md row 7),
	 * unless --burn-exact */
	assert_int_equal(policy_action(&pol, &st, 2, MODE_SYNC).kind, ACT_EXPLORE);
	Trigger ts = {TRIG_ON_SYNC, 0, NULL};
	store_add_trigger(&st, 0, &ts, a);
	policy_reset(&pol);
	policy_update(&pol, &st, &q[0]);
	policy_update(&pol, &st, &q[0]);
	act = policy_action(&pol, &st, 2, MODE_SYNC);
	assert_int_equal(act.kind, ACT_EXECUTE);
	assert_int_equal(act.plan, 0);
	pol.burn_exact = true;
	assert_int_equal(policy_action(&pol, &st, 2, MODE_SYNC).kind, ACT_EXPLORE);
	policy_reset(&pol);
	policy_update(&pol, &st, &q[0]);
	act = policy_action(&pol, &st, 1, MODE_SYNC);
	assert_int_equal(act.kind, ACT_EXECUTE);
	assert_int_equal(act.plan, 0);
	policy_free(&pol);
	store_free(&st);
	ir_rel_free(conv);
	arena_free(a);
}

/* burn's check_availables (docs/burn-fidelity.md row 8): after every update, found is
 * the first available plan, in the order they became available, whose trigger
 * holds. P0 = [exp] waits for [neg, abs, sin]; P1 = [exp, neg] waits for [abs]. P1's
 * trigger holds at abs, P0's one op later at sin: found moves back to P0. */
static void test_policy_found_first_available(void **state)
{
	(void)state;
	static const char yaml[] =
		"format: fusec-graph/1\n"
		"inputs:\n"
		"  x: {dtype: f32, shape: [4, 8]}\n"
		"ops:\n"
		"  - {op: exp, in: [x], out: a}\n"
		"  - {op: neg, in: [a], out: b}\n"
		"  - {op: abs, in: [b], out: c}\n"
		"  - {op: sin, in: [c], out: d}\n"
		"outputs: [d]\n";
	Arena *a = arena_new();
	Graph *g = test_graph(a, "t.yaml", yaml);
	RelConv *conv = ir_rel_new(g);
	RelOp r[4];
	for (int i = 0; i < 4; i++)
		ir_rel_op(conv, a, i, &r[i]);
	PlanStore st;
	store_init(&st);
	Plan p0 = {0}, p1 = {0};
	p0.nops = 1;
	p0.ops = r;
	p1.nops = 2;
	p1.ops = r;
	assert_int_equal(store_add(&st, &p0), 0);
	assert_int_equal(store_add(&st, &p1), 1);
	Trigger t0 = {TRIG_ON_OPERATIONS, 3, &r[1]};
	Trigger t1 = {TRIG_ON_OPERATIONS, 1, &r[2]};
	store_add_trigger(&st, 0, &t0, a);
	store_add_trigger(&st, 1, &t1, a);
	Policy pol;
	policy_init(&pol);
	for (int i = 0; i < 3; i++)
		policy_update(&pol, &st, &r[i]);
	Action act = policy_action(&pol, &st, 3, MODE_LAZY);
	assert_int_equal(act.kind, ACT_EXECUTE);
	assert_int_equal(act.plan, 1);
	policy_update(&pol, &st, &r[3]);
	act = policy_action(&pol, &st, 4, MODE_LAZY);
	assert_int_equal(act.kind, ACT_EXECUTE);
	assert_int_equal(act.plan, 0);
	policy_free(&pol);
	store_free(&st);
	ir_rel_free(conv);
	arena_free(a);
}

/* The verifier passes a sound schedule and names each kind of fault planted in it. */
static const char verify_yaml[] =
	"format: fusec-graph/1\n"
	"inputs:\n"
	"  x: {dtype: f32, shape: [4, 8]}\n"
	"  w: {dtype: f32, shape: [8, 8]}\n"
	"ops:\n"
	"  - {op: matmul, in: [x, w], out: m1}\n"
	"  - {op: matmul, in: [m1, w], out: m2}\n"
	"outputs: [m2]\n";

static const char *verify_message(const Schedule *s)
{
	static char msg[1100];
	Diag d;
	if (!pass_verify(s, &d))
		return "(verifies)";
	diag_format(&d, msg, sizeof msg);
	return msg;
}

/* The launch of the schedule that runs op `op`. */
static Launch *launch_of(Schedule *s, int op)
{
	for (int i = 0; i < s->nsteps; i++)
		for (int k = 0; k < s->steps[i].nlaunch; k++)
			for (int j = 0; j < s->steps[i].launch[k].nops; j++)
				if (s->steps[i].launch[k].ops[j] == op)
					return &s->steps[i].launch[k];
	fail_msg("op %d runs in no launch", op);
	return NULL;
}

/* Set *field to value (a planted fault), expect the verifier to name it, restore. */
static void plant(const Schedule *s, int *field, int value, const char *expect)
{
	int keep = *field;
	*field = value;
	const char *got = verify_message(s);
	if (!strstr(got, expect))
		fail_msg("planted fault: expected '%s', got '%s'", expect, got);
	*field = keep;
}

static void test_verify_schedule(void **state)
{
	(void)state;
	Arena *a = arena_new();
	Graph *g = test_graph(a, "v.yaml", verify_yaml);
	SearchOptions o;
	pass_default_options(&o);
	Schedule *s = pass_search(g, &o);
	assert_string_equal(verify_message(s), "(verifies)");
	Launch *l1 = launch_of(s, 0), *l2 = launch_of(s, 1);
	assert_ptr_not_equal(l1, l2);   /* a second matmul does not fuse */

	plant(s, &l2->ops[0], 0, "op 0 runs a second time");
	plant(s, &l1->nout, 0, "'m1' (t2) is read after the launch but not written");
	plant(s, &l1->out[0], l1->in[0], "is not made by the launch");
	plant(s, &l2->nin, 0, "is read but is not an input of the launch");
	plant(s, &s->kernels[l1->kernel].fuser, 99, "names fuser 99, which does not exist");
	plant(s, &s->steps[s->nsteps - 1].nlaunch, s->steps[s->nsteps - 1].nlaunch - 1,
	      "op 1 (matmul) runs in no launch");
	/* the launches in the other order: the matmul of m1 reads what nobody wrote yet */
	Launch tmp = *l1;
	*l1 = *l2;
	*l2 = tmp;
	assert_non_null(strstr(verify_message(s), "reads 'm1' (t2), which no earlier launch wrote"));
	tmp = *l1;
	*l1 = *l2;
	*l2 = tmp;
	assert_string_equal(verify_message(s), "(verifies)");
	pass_free_schedule(s);
	arena_free(a);
}

const struct CMUnitTest search_tests[] = {
	cmocka_unit_test(test_score_formula),
	cmocka_unit_test(test_search_reuses_plans),
	cmocka_unit_test(test_open_blocks_merge),
	cmocka_unit_test(test_cycle_refused),
	cmocka_unit_test(test_merge_acceptance),
	cmocka_unit_test(test_intset),
	cmocka_unit_test(test_store_and_triggers),
	cmocka_unit_test(test_policy_found_first_available),
	cmocka_unit_test(test_verify_schedule),
};
const size_t search_ntests = SUITE_COUNT(search_tests);
