/* test_relative.c: relative form (SPEC §2), liveness and segments, with the seed's
 * cases: shape ids, placeholders, status flips and hash/equality. */
#include <stdio.h>
#include <string.h>

#include "test.h"

/* Relative form of every op of segment s; returns the ops, converter in *conv. */
static RelOp *rel_segment(Arena *a, const Graph *g, int s, RelConv **conv)
{
	*conv = ir_rel_new(g);
	const Segment *seg = &g->segs[s];
	RelOp *ops = ARENA_NEW(a, RelOp, seg->nops);
	for (int i = 0; i < seg->nops; i++)
		ir_rel_op(*conv, a, seg->ops[i], &ops[i]);
	return ops;
}

static const char *rel_text(const RelOp *op)
{
	static char out[512];
	Buf b = {0};
	ir_rel_print(&b, op);
	snprintf(out, sizeof out, "%s", b.data);
	buf_free(&b);
	return out;
}

static const char *square_graph(char *buf, size_t size, int h, int w, double s)
{
	snprintf(buf, size,
		 "format: fusec-graph/1\n"
		 "inputs:\n  x: {dtype: f32, shape: [%d, %d]}\n"
		 "ops:\n  - {op: mul_scalar, in: [x], scalar: %g, out: y}\n"
		 "outputs: [y]\n", h, w, s);
	return buf;
}

static void test_square_shapes_share_ids(void **state)
{
	(void)state;
	char text[512];
	Arena *a = arena_new();
	RelConv *c1, *c2, *c3;
	Graph *g64 = test_graph(a, "g.yaml", square_graph(text, sizeof text, 64, 64, 2.0));
	RelOp *r64 = rel_segment(a, g64, 0, &c1);
	Graph *g32 = test_graph(a, "g.yaml", square_graph(text, sizeof text, 32, 32, 2.0));
	RelOp *r32 = rel_segment(a, g32, 0, &c2);
	Graph *g6432 = test_graph(a, "g.yaml", square_graph(text, sizeof text, 64, 32, 2.0));
	RelOp *r6432 = rel_segment(a, g6432, 0, &c3);

	assert_string_equal(rel_text(&r64[0]),
			    "NumericFloat::MulScalar(t0:f32[1,1] ReadOnly, #0) -> t1:f32[1,1]");
	assert_true(ir_rel_equal(&r64[0], &r32[0]));
	assert_int_equal(r64[0].hash, r32[0].hash);
	assert_string_equal(rel_text(&r6432[0]),
			    "NumericFloat::MulScalar(t0:f32[1,2] ReadOnly, #0) -> t1:f32[1,2]");
	assert_false(ir_rel_equal(&r64[0], &r6432[0]));

	int n;
	const int64_t *dims = ir_rel_dims(c3, &n);
	assert_int_equal(n, 3);
	assert_int_equal(dims[0], 1);
	assert_int_equal(dims[1], 64);
	assert_int_equal(dims[2], 32);
	ir_rel_free(c1);
	ir_rel_free(c2);
	ir_rel_free(c3);
	arena_free(a);
}

static void test_three_dim_ids(void **state)
{
	(void)state;
	Arena *a = arena_new();
	Graph *g = test_graph(a, "g.yaml",
		"format: fusec-graph/1\n"
		"inputs:\n"
		"  a: {dtype: f32, shape: [512, 32, 2048]}\n"
		"  b: {dtype: f32, shape: [512, 128, 2048]}\n"
		"ops:\n  - {op: cat, in: [a, b], axis: 1, out: y}\n"
		"outputs: [y]\n");
	RelConv *c;
	RelOp *r = rel_segment(a, g, 0, &c);
	assert_string_equal(rel_text(&r[0]),
		"BaseFloat::Cat(t0:f32[1,2,3] ReadOnly, t1:f32[1,4,3] ReadOnly, axis=1) -> t2:f32[1,5,3]");
	ir_rel_free(c);
	arena_free(a);
}

static void test_scalars_become_placeholders(void **state)
{
	(void)state;
	char text[512];
	Arena *a = arena_new();
	RelConv *c2, *c3;
	RelOp *r2 = rel_segment(a, test_graph(a, "g.yaml", square_graph(text, sizeof text, 8, 8, 2.0)), 0, &c2);
	RelOp *r3 = rel_segment(a, test_graph(a, "g.yaml", square_graph(text, sizeof text, 8, 8, 3.0)), 0, &c3);
	assert_true(ir_rel_equal(&r2[0], &r3[0]));
	int n;
	assert_true(ir_rel_values(c2, &n)[0] == 2.0);
	assert_int_equal(n, 1);
	assert_true(ir_rel_values(c3, &n)[0] == 3.0);
	ir_rel_free(c2);
	ir_rel_free(c3);

	/* clamp bounds and slice ranges are placeholders too, in order of appearance */
	Graph *g = test_graph(a, "g.yaml",
		"format: fusec-graph/1\n"
		"inputs: {x: {dtype: f32, shape: [10, 6]}}\n"
		"ops:\n"
		"  - {op: clamp, in: [x], min: -1.5, max: 4, out: y}\n"
		"  - {op: slice, in: [y], ranges: [[2, 7]], out: z}\n"
		"outputs: [z]\n");
	RelConv *c;
	RelOp *r = rel_segment(a, g, 0, &c);
	assert_string_equal(rel_text(&r[0]),
			    "NumericFloat::Clamp(t0:f32[1,2] ReadOnly, #0, #1) -> t1:f32[1,2]");
	assert_string_equal(rel_text(&r[1]),
			    "BaseFloat::Slice(t1:f32[1,2] ReadWrite, #2, #3) -> t2:f32[3,2]");
	const double *v = ir_rel_values(c, &n);
	assert_int_equal(n, 4);
	assert_true(v[0] == -1.5 && v[1] == 4 && v[2] == 2 && v[3] == 7);
	ir_rel_free(c);
	arena_free(a);
}

static void test_status_flips_at_last_read(void **state)
{
	(void)state;
	Arena *a = arena_new();
	Graph *g = test_graph(a, "g.yaml",
		"format: fusec-graph/1\n"
		"inputs: {x: {dtype: f32, shape: [4]}}\n"
		"ops:\n"
		"  - {op: exp, in: [x], out: t0}\n"
		"  - {op: neg, in: [t0], out: t1}\n"
		"  - {op: add, in: [t0, t1], out: t2}\n"
		"  - {op: sqrt, in: [t2], out: y}\n"
		"  - {op: abs, in: [y], out: z}\n"
		"outputs: [y, z]\n");
	RelConv *c;
	RelOp *r = rel_segment(a, g, 0, &c);
	/* x is a graph input: ReadOnly even at its last read */
	assert_int_equal(r[0].t[0].status, ST_READ_ONLY);
	assert_int_equal(r[0].t[1].status, ST_NOT_INIT);
	/* t0 is read again later: ReadOnly in neg, ReadWrite in add */
	assert_int_equal(r[1].t[0].status, ST_READ_ONLY);
	assert_int_equal(r[2].t[0].status, ST_READ_WRITE);
	assert_int_equal(r[2].t[1].status, ST_READ_WRITE);
	/* y is an output: never ReadWrite */
	assert_int_equal(r[4].t[0].status, ST_READ_ONLY);
	ir_rel_free(c);
	arena_free(a);
}

static void test_segments_split_at_sync_and_stream(void **state)
{
	(void)state;
	Arena *a = arena_new();
	Graph *g = test_graph(a, "g.yaml",
		"format: fusec-graph/1\n"
		"inputs: {x: {dtype: f32, shape: [4]}}\n"
		"ops:\n"
		"  - {op: exp, in: [x], out: t0}\n"
		"  - {op: neg, in: [x], out: t1, stream: 1}\n"
		"  - {op: sync}\n"
		"  - {op: add, in: [t0, t1], out: t2}\n"
		"outputs: [t2]\n");
	assert_int_equal(g->nstreams, 2);
	assert_int_equal(g->nsegs, 3);
	assert_int_equal(g->segs[0].stream, 0);
	assert_int_equal(g->segs[0].nops, 1);
	assert_int_equal(g->segs[0].ops[0], 0);
	assert_int_equal(g->segs[0].sync_op, 2);
	assert_int_equal(g->segs[1].stream, 1);
	assert_int_equal(g->segs[1].ops[0], 1);
	assert_int_equal(g->segs[2].ops[0], 3);
	assert_int_equal(g->segs[2].sync_op, -1);
	arena_free(a);
}

static void test_reset_renumbers(void **state)
{
	(void)state;
	Arena *a = arena_new();
	Graph *g = test_graph(a, "g.yaml",
		"format: fusec-graph/1\n"
		"inputs: {x: {dtype: f32, shape: [3, 5]}}\n"
		"ops:\n"
		"  - {op: exp, in: [x], out: t0}\n"
		"  - {op: add_scalar, in: [t0], scalar: 1, out: t1}\n"
		"outputs: [t1]\n");
	RelConv *c = ir_rel_new(g);
	RelOp r0, r1, again;
	ir_rel_op(c, a, 0, &r0);
	ir_rel_op(c, a, 1, &r1);
	assert_int_equal(r1.t[0].id, 1);
	assert_int_equal(r1.place0, 0);
	ir_rel_reset(c);
	ir_rel_op(c, a, 1, &again);
	assert_int_equal(again.t[0].id, 0);
	assert_int_equal(again.t[1].id, 1);
	assert_false(ir_rel_equal(&r1, &again));
	/* a fresh converter gives the very same op and hash */
	RelConv *c2 = ir_rel_new(g);
	RelOp r0b;
	ir_rel_op(c2, a, 0, &r0b);
	assert_true(ir_rel_equal(&r0, &r0b));
	assert_int_equal(r0.hash, r0b.hash);
	assert_int_not_equal(r0.hash, r1.hash);
	ir_rel_free(c);
	ir_rel_free(c2);
	arena_free(a);
}

const struct CMUnitTest relative_tests[] = {
	cmocka_unit_test(test_square_shapes_share_ids),
	cmocka_unit_test(test_three_dim_ids),
	cmocka_unit_test(test_scalars_become_placeholders),
	cmocka_unit_test(test_status_flips_at_last_read),
	cmocka_unit_test(test_segments_split_at_sync_and_stream),
	cmocka_unit_test(test_reset_renumbers),
};
const size_t relative_ntests = SUITE_COUNT(relative_tests);
