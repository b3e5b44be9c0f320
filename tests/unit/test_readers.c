/* test_readers.c: the JSON and YAML graph readers and the validator (SPEC §1).
 *
 * The same graphs written in both formats must give the same IR, field by field
 * (attributes included); a comparison that must fail keeps the comparison honest.
 * Then: format sniffing and default names, positions of errors and ops, equal
 * message text for the same mistake in both formats, and hostile input (billion
 * laughs, deep nesting, bad UTF-8, NUL bytes, empty and truncated documents,
 * overflowing shapes) which must fail with a clear message and never crash. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <glob.h>

#include "test.h"
#include "../../ir/doc.h"

/* ---- comparing graphs ------------------------------------------------------- */

static bool same_double(double a, double b)
{
	return (isnan(a) && isnan(b)) || a == b;
}

static bool same_attrs(const Attrs *x, const Attrs *y)
{
	if (!x || !y)
		return x == y;
	if (x->has != y->has || !same_double(x->scalar, y->scalar) ||
	    !same_double(x->min, y->min) || !same_double(x->max, y->max) ||
	    x->dtype != y->dtype || x->axis != y->axis || x->n != y->n ||
	    x->groups != y->groups || x->approx != y->approx)
		return false;
	for (int i = 0; i < IR_MAX_RANK; i++)
		if (x->shape[i] != y->shape[i] || x->axes[i] != y->axes[i] ||
		    x->range[i][0] != y->range[i][0] || x->range[i][1] != y->range[i][1])
			return false;
	for (int i = 0; i < 2; i++)
		if (x->stride[i] != y->stride[i] || x->padding[i] != y->padding[i] ||
		    x->dilation[i] != y->dilation[i] || x->kernel[i] != y->kernel[i])
			return false;
	return true;
}

#define DIFF(...) do { snprintf(why, 200, __VA_ARGS__); return false; } while (0)

/* Everything but the file name and source positions. */
static bool same_graph(const Graph *x, const Graph *y, char *why)
{
	if (strcmp(x->name, y->name))
		DIFF("name %s vs %s", x->name, y->name);
	if (x->ntensors != y->ntensors || x->nops != y->nops || x->ninputs != y->ninputs ||
	    x->noutputs != y->noutputs || x->nsegs != y->nsegs || x->nstreams != y->nstreams)
		DIFF("counts differ");
	for (int i = 0; i < x->ntensors; i++) {
		const Tensor *a = &x->tensors[i], *b = &y->tensors[i];
		if (strcmp(a->name, b->name) || a->dtype != b->dtype || a->rank != b->rank ||
		    a->producer != b->producer || a->last_read != b->last_read ||
		    a->role != b->role || a->is_output != b->is_output)
			DIFF("tensor %d", i);
		for (int k = 0; k < a->rank; k++)
			if (a->dim[k] != b->dim[k])
				DIFF("tensor %d dim %d", i, k);
	}
	for (int i = 0; i < x->nops; i++) {
		const Op *a = &x->ops[i], *b = &y->ops[i];
		if (a->kind != b->kind || a->stream != b->stream || a->nin != b->nin ||
		    a->nout != b->nout)
			DIFF("op %d", i);
		for (int k = 0; k < a->nin; k++)
			if (a->in[k] != b->in[k] || a->in_status[k] != b->in_status[k])
				DIFF("op %d operand %d", i, k);
		for (int k = 0; k < a->nout; k++)
			if (a->out[k] != b->out[k])
				DIFF("op %d result %d", i, k);
		if (!same_attrs(a->attr, b->attr))
			DIFF("op %d attributes", i);
	}
	for (int i = 0; i < x->ninputs; i++)
		if (x->inputs[i] != y->inputs[i])
			DIFF("input %d", i);
	for (int i = 0; i < x->noutputs; i++)
		if (x->outputs[i] != y->outputs[i])
			DIFF("output %d", i);
	for (int i = 0; i < x->nsegs; i++) {
		const Segment *a = &x->segs[i], *b = &y->segs[i];
		if (a->stream != b->stream || a->nops != b->nops || a->sync_op != b->sync_op)
			DIFF("segment %d", i);
		for (int k = 0; k < a->nops; k++)
			if (a->ops[k] != b->ops[k])
				DIFF("segment %d op %d", i, k);
	}
	return true;
}

/* ---- graphs in both formats ------------------------------------------------- */

typedef struct {
	const char *yaml, *json;
} Pair;

static const Pair pairs[] = {
	{ /* SPEC §1, plus a second stream */
	"format: fusec-graph/1\n"
	"name: reuse\n"
	"inputs:\n"
	"  a: {dtype: f32, shape: [64, 64]}\n"
	"  b: {dtype: f32, shape: [64, 64]}\n"
	"  c: {dtype: f32, shape: [64, 64]}\n"
	"ops:\n"
	"  - {op: mul,        in: [a, b], out: t0}\n"
	"  - {op: mul_scalar, in: [c], scalar: 2.0, out: t1}\n"
	"  - {op: add,        in: [t0, t1], out: t2}\n"
	"  - {op: exp,        in: [t2], out: y}\n"
	"  - {op: sync}\n"
	"  - {op: neg, in: [y], out: z, stream: 2}\n"
	"outputs: [y, z]\n",
	"{\"format\": \"fusec-graph/1\", \"name\": \"reuse\",\n"
	" \"inputs\": {\"a\": {\"dtype\": \"f32\", \"shape\": [64, 64]},\n"
	"            \"b\": {\"dtype\": \"f32\", \"shape\": [64, 64]},\n"
	"            \"c\": {\"dtype\": \"f32\", \"shape\": [64, 64]}},\n"
	" \"ops\": [{\"op\": \"mul\", \"in\": [\"a\", \"b\"], \"out\": \"t0\"},\n"
	"         {\"op\": \"mul_scalar\", \"in\": [\"c\"], \"scalar\": 2.0, \"out\": \"t1\"},\n"
	"         {\"op\": \"add\", \"in\": [\"t0\", \"t1\"], \"out\": \"t2\"},\n"
	"         {\"op\": \"exp\", \"in\": [\"t2\"], \"out\": \"y\"},\n"
	"         {\"op\": \"sync\"},\n"
	"         {\"op\": \"neg\", \"in\": [\"y\"], \"out\": \"z\", \"stream\": 2}],\n"
	" \"outputs\": [\"y\", \"z\"]}\n",
	},
	{ /* views, reductions, select, cast, clamp, gelu, joins */
	"format: fusec-graph/1\n"
	"name: kinds\n"
	"inputs:\n"
	"  x: {dtype: f32, shape: [4, 6]}\n"
	"  m: {dtype: bool, shape: [4, 6]}\n"
	"  w: {dtype: f32, shape: [6, 5]}\n"
	"  idx: {dtype: i64, shape: [4, 2]}\n"
	"ops:\n"
	"  - {op: clamp, in: [x], min: -inf, max: .inf, out: c}\n"
	"  - {op: clamp_min, in: [c], min: -1, out: c2}\n"
	"  - {op: cast, in: [c2], dtype: f16, out: h}\n"
	"  - {op: reshape, in: [x], shape: [-1, 3], out: r}\n"
	"  - {op: permute, in: [x], axes: [1, 0], out: p}\n"
	"  - {op: swap_dims, in: [x], dims: [0, -1], out: s}\n"
	"  - {op: expand, in: [idx], shape: [4, 2], out: e}\n"
	"  - {op: slice, in: [x], ranges: [[0, 2], [1, 5]], out: sl}\n"
	"  - {op: sum, in: [x], axis: -1, out: su}\n"
	"  - {op: argmax, in: [x], axis: 0, out: am}\n"
	"  - {op: gelu, in: [x], approximate: tanh, out: g}\n"
	"  - {op: gelu, in: [x], out: g2}\n"
	"  - {op: where, in: [m, x, g], out: wh}\n"
	"  - {op: mask_fill, in: [x, m], scalar: nan, out: mf}\n"
	"  - {op: matmul, in: [x, w], out: mm}\n"
	"  - {op: cat, in: [x, wh, mf], axis: 0, out: ct}\n"
	"  - {op: gather, in: [x, idx], axis: 1, out: ga}\n"
	"  - {op: eq_scalar, in: [x], scalar: 1e3, out: eqs, dtype: bool, shape: [4, 6]}\n"
	"outputs: [h, r, p, s, e, sl, su, am, g2, ct, ga, mm, eqs, x]\n",
	"{\"format\": \"fusec-graph/1\", \"name\": \"kinds\",\n"
	" \"inputs\": {\"x\": {\"dtype\": \"f32\", \"shape\": [4, 6]},\n"
	"   \"m\": {\"dtype\": \"bool\", \"shape\": [4, 6]},\n"
	"   \"w\": {\"dtype\": \"f32\", \"shape\": [6, 5]},\n"
	"   \"idx\": {\"dtype\": \"i64\", \"shape\": [4, 2]}},\n"
	" \"ops\": [\n"
	"  {\"op\": \"clamp\", \"in\": [\"x\"], \"min\": \"-inf\", \"max\": \"inf\", \"out\": \"c\"},\n"
	"  {\"op\": \"clamp_min\", \"in\": [\"c\"], \"min\": -1.0, \"out\": \"c2\"},\n"
	"  {\"op\": \"cast\", \"in\": [\"c2\"], \"dtype\": \"f16\", \"out\": \"h\"},\n"
	"  {\"op\": \"reshape\", \"in\": [\"x\"], \"shape\": [-1, 3], \"out\": \"r\"},\n"
	"  {\"op\": \"permute\", \"in\": [\"x\"], \"axes\": [1, 0], \"out\": \"p\"},\n"
	"  {\"op\": \"swap_dims\", \"in\": [\"x\"], \"dims\": [0, -1], \"out\": \"s\"},\n"
	"  {\"op\": \"expand\", \"in\": [\"idx\"], \"shape\": [4, 2], \"out\": \"e\"},\n"
	"  {\"op\": \"slice\", \"in\": [\"x\"], \"ranges\": [[0, 2], [1, 5]], \"out\": \"sl\"},\n"
	"  {\"op\": \"sum\", \"in\": [\"x\"], \"axis\": -1, \"out\": \"su\"},\n"
	"  {\"op\": \"argmax\", \"in\": [\"x\"], \"axis\": 0, \"out\": \"am\"},\n"
	"  {\"op\": \"gelu\", \"in\": [\"x\"], \"approximate\": \"tanh\", \"out\": \"g\"},\n"
	"  {\"op\": \"gelu\", \"in\": [\"x\"], \"out\": \"g2\"},\n"
	"  {\"op\": \"where\", \"in\": [\"m\", \"x\", \"g\"], \"out\": \"wh\"},\n"
	"  {\"op\": \"mask_fill\", \"in\": [\"x\", \"m\"], \"scalar\": \"nan\", \"out\": \"mf\"},\n"
	"  {\"op\": \"matmul\", \"in\": [\"x\", \"w\"], \"out\": \"mm\"},\n"
	"  {\"op\": \"cat\", \"in\": [\"x\", \"wh\", \"mf\"], \"axis\": 0, \"out\": \"ct\"},\n"
	"  {\"op\": \"gather\", \"in\": [\"x\", \"idx\"], \"axis\": 1, \"out\": \"ga\"},\n"
	"  {\"op\": \"eq_scalar\", \"in\": [\"x\"], \"scalar\": 1000, \"out\": \"eqs\",\n"
	"   \"dtype\": \"bool\", \"shape\": [4, 6]}],\n"
	" \"outputs\": [\"h\", \"r\", \"p\", \"s\", \"e\", \"sl\", \"su\", \"am\", \"g2\", \"ct\",\n"
	"             \"ga\", \"mm\", \"eqs\", \"x\"]}\n",
	},
	{ /* module ops: written options and defaults; block style YAML */
	"format: fusec-graph/1\n"
	"inputs:\n"
	"  img: {dtype: f32, shape: [1, 4, 8, 8]}\n"
	"  k: {dtype: f32, shape: [8, 2, 3, 3]}\n"
	"  bias: {dtype: f32, shape: [8]}\n"
	"ops:\n"
	"  - op: conv2d\n"
	"    in: [img, k, bias]\n"
	"    stride: [1, 2]\n"
	"    padding: 1\n"
	"    dilation: 1\n"
	"    groups: 2\n"
	"    out: c\n"
	"  - op: conv2d\n"
	"    in: [img, k]\n"
	"    groups: 2\n"
	"    out: c1\n"
	"  - op: max_pool2d\n"
	"    in: [img]\n"
	"    kernel: 2\n"
	"    out: mp\n"
	"  - op: avg_pool2d\n"
	"    in: [img]\n"
	"    kernel: [2, 2]\n"
	"    stride: 1\n"
	"    padding: [1, 0]\n"
	"    out: ap\n"
	"    stream: 1\n"
	"outputs: [c, c1, mp, ap]\n",
	"{\"format\": \"fusec-graph/1\",\n"
	" \"inputs\": {\"img\": {\"dtype\": \"f32\", \"shape\": [1, 4, 8, 8]},\n"
	"   \"k\": {\"dtype\": \"f32\", \"shape\": [8, 2, 3, 3]},\n"
	"   \"bias\": {\"dtype\": \"f32\", \"shape\": [8]}},\n"
	" \"ops\": [\n"
	"  {\"op\": \"conv2d\", \"in\": [\"img\", \"k\", \"bias\"], \"stride\": [1, 2], \"padding\": 1,\n"
	"   \"dilation\": 1, \"groups\": 2, \"out\": \"c\"},\n"
	"  {\"op\": \"conv2d\", \"in\": [\"img\", \"k\"], \"groups\": 2, \"out\": \"c1\"},\n"
	"  {\"op\": \"max_pool2d\", \"in\": [\"img\"], \"kernel\": 2, \"out\": \"mp\"},\n"
	"  {\"op\": \"avg_pool2d\", \"in\": [\"img\"], \"kernel\": [2, 2], \"stride\": 1,\n"
	"   \"padding\": [1, 0], \"out\": \"ap\", \"stream\": 1}],\n"
	" \"outputs\": [\"c\", \"c1\", \"mp\", \"ap\"]}\n",
	},
};

static Graph *read_as(Arena *a, const char *file, const char *text)
{
	Diag d;
	Graph *g = ir_read_mem(a, file, text, strlen(text), FMT_AUTO, &d);
	if (!g) {
		char msg[1100];
		diag_format(&d, msg, sizeof msg);
		fail_msg("%s", msg);
	}
	return g;
}

static void test_json_and_yaml_give_the_same_ir(void **state)
{
	(void)state;
	for (size_t i = 0; i < SUITE_COUNT(pairs); i++) {
		Arena *a = arena_new();
		Graph *y = read_as(a, "g.yaml", pairs[i].yaml);
		Graph *j = read_as(a, "g.json", pairs[i].json);
		char why[200] = "";
		if (!same_graph(y, j, why))
			fail_msg("pair %zu: %s", i, why);
		arena_free(a);
	}
}

static void test_comparison_can_fail(void **state)
{
	(void)state;
	Arena *a = arena_new();
	char *text = arena_strdup(a, pairs[0].json);
	char *two = strstr(text, "2.0");
	two[0] = '3';
	Graph *x = read_as(a, "g.json", pairs[0].json);
	Graph *y = read_as(a, "g.json", text);
	char why[200] = "";
	assert_false(same_graph(x, y, why));
	assert_string_equal(why, "op 1 attributes");
	arena_free(a);
}

static void test_fields_of_the_kinds_graph(void **state)
{
	(void)state;
	Arena *a = arena_new();
	Graph *g = read_as(a, "g.yaml", pairs[1].yaml);
	assert_string_equal(g->name, "kinds");
	assert_int_equal(g->ninputs, 4);
	assert_string_equal(g->tensors[g->inputs[0]].name, "x");
	assert_string_equal(g->tensors[g->inputs[3]].name, "idx");
	/* clamp: -inf and .inf */
	const Op *op = &g->ops[0];
	assert_int_equal(op->kind, OP_CLAMP);
	assert_true(isinf(op->attr->min) && op->attr->min < 0);
	assert_true(isinf(op->attr->max) && op->attr->max > 0);
	assert_int_equal(op->attr->has, A_MIN | A_MAX);
	assert_true(g->ops[1].attr->min == -1.0);
	assert_int_equal(g->ops[2].attr->dtype, DT_F16);
	assert_int_equal(g->tensors[g->ops[2].out[0]].dtype, DT_F16);
	/* reshape keeps -1 as written; the result is inferred */
	assert_int_equal(g->ops[3].attr->n, 2);
	assert_int_equal(g->ops[3].attr->shape[0], -1);
	const Tensor *r = &g->tensors[g->ops[3].out[0]];
	assert_int_equal(r->rank, 2);
	assert_int_equal(r->dim[0], 8);
	assert_int_equal(r->dim[1], 3);
	/* swap_dims -1 normalized by ir_infer */
	assert_int_equal(g->ops[5].attr->axes[1], 1);
	assert_int_equal(g->ops[7].attr->range[1][0], 1);
	assert_int_equal(g->ops[7].attr->range[1][1], 5);
	assert_int_equal(g->ops[8].attr->axis, 1);
	assert_int_equal(g->ops[10].attr->approx, GELU_TANH);
	assert_int_equal(g->ops[11].attr->approx, GELU_NONE);
	assert_int_equal(g->ops[11].attr->has, A_APPROX);
	assert_true(isnan(g->ops[13].attr->scalar));
	assert_true(g->ops[17].attr->scalar == 1000.0);
	/* no attributes: no Attrs */
	assert_null(g->ops[12].attr);
	assert_null(g->ops[14].attr);
	/* roles: an input listed in outputs stays an input */
	const Tensor *x = &g->tensors[g->inputs[0]];
	assert_int_equal(x->role, ROLE_INPUT);
	assert_true(x->is_output);
	assert_int_equal(g->tensors[g->inputs[1]].role, ROLE_INPUT);
	assert_false(g->tensors[g->inputs[1]].is_output);
	assert_int_equal(g->tensors[g->ops[0].out[0]].role, ROLE_INTERMEDIATE);
	assert_int_equal(g->tensors[g->ops[2].out[0]].role, ROLE_OUTPUT);
	assert_int_equal(g->tensors[g->ops[0].out[0]].producer, 0);
	assert_int_equal(g->noutputs, 14);
	arena_free(a);
}

static void test_module_defaults(void **state)
{
	(void)state;
	Arena *a = arena_new();
	Graph *g = read_as(a, "g.yaml", pairs[2].yaml);
	assert_string_equal(g->name, "g");
	const Attrs *c = g->ops[0].attr, *c1 = g->ops[1].attr;
	assert_int_equal(c->stride[0], 1);
	assert_int_equal(c->stride[1], 2);
	assert_int_equal(c->padding[0], 1);
	assert_int_equal(c->padding[1], 1);
	assert_int_equal(c->groups, 2);
	assert_int_equal(c1->stride[0], 1);
	assert_int_equal(c1->stride[1], 1);
	assert_int_equal(c1->dilation[0], 1);
	assert_int_equal(c1->padding[0], 0);
	assert_int_equal(c1->has, A_STRIDE | A_PADDING | A_DILATION | A_GROUPS | A_LAYOUT);
	assert_int_equal(c1->layout, LAYOUT_NCHW);
	const Attrs *mp = g->ops[2].attr, *ap = g->ops[3].attr;
	assert_int_equal(mp->kernel[1], 2);
	assert_int_equal(mp->stride[0], 2);
	assert_int_equal(mp->stride[1], 2);
	assert_int_equal(ap->stride[0], 1);
	assert_int_equal(ap->padding[0], 1);
	assert_int_equal(ap->padding[1], 0);
	const Tensor *t = &g->tensors[g->ops[0].out[0]];
	assert_int_equal(t->dim[1], 8);
	assert_int_equal(t->dim[2], 8);
	assert_int_equal(t->dim[3], 4);
	assert_int_equal(g->ops[3].stream, 1);
	assert_int_equal(g->nstreams, 2);
	/* block-style positions: the op's map starts at its first key */
	assert_int_equal(g->ops[1].line, 14);
	assert_int_equal(g->ops[1].col, 5);
	arena_free(a);
}

/* ---- formats, names, positions ---------------------------------------------- */

static void test_sniffing_and_names(void **state)
{
	(void)state;
	Arena *a = arena_new();
	Graph *g = read_as(a, "<stdin>", pairs[0].json);
	assert_string_equal(g->file, "<stdin>");
	g = read_as(a, "<stdin>", pairs[2].yaml);
	assert_string_equal(g->name, "stdin");
	char lead[4096];
	snprintf(lead, sizeof lead, "\n  \t%s", pairs[2].json);
	g = read_as(a, "noext", lead);
	assert_string_equal(g->name, "noext");
	g = read_as(a, "noext.txt", pairs[2].yaml);
	assert_string_equal(g->name, "noext");
	g = read_as(a, "dir/sub/my.graph.yml", pairs[2].yaml);
	assert_string_equal(g->name, "my.graph");
	g = read_as(a, "x y.json", pairs[2].json);
	assert_string_equal(g->name, "x_y");
	/* BOM, then JSON */
	char buf[4096];
	snprintf(buf, sizeof buf, "\xef\xbb\xbf%s", pairs[2].json);
	g = read_as(a, "bom", buf);
	assert_int_equal(g->nops, 4);
	arena_free(a);
	/* the extension wins over the content */
	assert_string_equal(test_graph_error("g.json", pairs[2].yaml),
			    "g.json:1:1: error: JSON syntax error at 'format: fusec-gr'");
	/* explicit format */
	a = arena_new();
	Diag d;
	assert_non_null(ir_read_mem(a, "g.json", pairs[2].yaml, strlen(pairs[2].yaml), FMT_YAML, &d));
	assert_null(ir_read_mem(a, "g.yaml", pairs[2].yaml, strlen(pairs[2].yaml), FMT_JSON, &d));
	arena_free(a);
}

static void test_positions(void **state)
{
	(void)state;
	Arena *a = arena_new();
	Graph *g = read_as(a, "g.json", pairs[0].json);
	assert_int_equal(g->ops[1].line, 6);
	assert_int_equal(g->ops[1].col, 10);
	g = read_as(a, "g.yaml", pairs[0].yaml);
	assert_int_equal(g->ops[1].line, 9);
	assert_int_equal(g->ops[1].col, 5);
	arena_free(a);

	/* a multi-byte character counts as one column */
	assert_string_equal(test_graph_error("g.json",
		"{\"format\": \"fusec-graph/1\", \"inputs\": {\"é\": {\"dtype\": \"f32\", \"shape\": [2]}},\n"
		" \"ops\": [{\"op\": \"exp\", \"in\": [\"é\"], \"out\": \"é\"}], \"outputs\": []}"),
		"g.json:2:44: error: ops[0].out: tensor 'é' is already defined in inputs");
	assert_string_equal(test_graph_error("g.json",
		"{\"format\": \"fusec-graph/1\",\n"
		"  \"inputs\": {},\n"
		"  \"ops\": [\n"
		"    {\"op\": \"sync\"},\n"
		"    {\"op\": \"neg\",\n"
		"     \"in\": [ \"q\" ], \"out\": \"y\"}],\n"
		"  \"outputs\": [\"y\"]}"),
		"g.json:6:14: error: ops[1].in[0]: tensor 'q' is not defined above");
	assert_string_equal(test_graph_error("g.json", "{\"format\": \"fusec-graph/1\",\n  \"ops\": [}"),
			    "g.json:2:11: error: JSON syntax error at '}'");
	assert_string_equal(test_graph_error("g.json", "{\"format\": \"fusec-graph/1\", \"a\\u0000\": 1}"),
			    "g.json:1:31: error: NUL character (\\u0000) in a string");
	assert_string_equal(test_graph_error("g.json", "{\"format\": \"fusec-graph/1\", \"a\\\\u0000\": 1}"),
			    "g.json:1:29: error: unknown key 'a\\u0000'");
	assert_string_equal(test_graph_error("g.json", "{\"format\": \"fusec-graph/1\"} x"),
			    "g.json:1:29: error: JSON syntax error: unexpected 'x' after the document");
}

/* The same mistake gives the same message text in both formats. */
static void test_same_message_in_both_formats(void **state)
{
	(void)state;
	static const char *const yaml_json[][2] = {
		{"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [2]}}\nops:\n"
		 "  - {op: exp, in: [a], out: b}\n  - {op: add, in: [a, zz], out: c}\noutputs: [c]\n",
		 "{\"format\": \"fusec-graph/1\", \"inputs\": {\"a\": {\"dtype\": \"f32\", \"shape\": [2]}},"
		 " \"ops\": [{\"op\": \"exp\", \"in\": [\"a\"], \"out\": \"b\"},"
		 " {\"op\": \"add\", \"in\": [\"a\", \"zz\"], \"out\": \"c\"}], \"outputs\": [\"c\"]}"},
		{"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [2, 3]}}\nops:\n"
		 "  - {op: permute, in: [a], axes: [0, x], out: b}\noutputs: [b]\n",
		 "{\"format\": \"fusec-graph/1\", \"inputs\": {\"a\": {\"dtype\": \"f32\", \"shape\": [2, 3]}},"
		 " \"ops\": [{\"op\": \"permute\", \"in\": [\"a\"], \"axes\": [0, \"x\"], \"out\": \"b\"}],"
		 " \"outputs\": [\"b\"]}"},
		{"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [2, 3]}}\nops:\n"
		 "  - {op: max_pool2d, in: [a], kernel: [2], out: b}\noutputs: [b]\n",
		 "{\"format\": \"fusec-graph/1\", \"inputs\": {\"a\": {\"dtype\": \"f32\", \"shape\": [2, 3]}},"
		 " \"ops\": [{\"op\": \"max_pool2d\", \"in\": [\"a\"], \"kernel\": [2], \"out\": \"b\"}],"
		 " \"outputs\": [\"b\"]}"},
		{"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [2, 3], extra: 1}}\nops: []\noutputs: []\n",
		 "{\"format\": \"fusec-graph/1\", \"inputs\": {\"a\": {\"dtype\": \"f32\", \"shape\": [2, 3], \"extra\": 1}},"
		 " \"ops\": [], \"outputs\": []}"},
		{"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [2]}}\nops:\n"
		 "  - {op: sum, in: [a], axis: 1.5, out: b}\noutputs: [b]\n",
		 "{\"format\": \"fusec-graph/1\", \"inputs\": {\"a\": {\"dtype\": \"f32\", \"shape\": [2]}},"
		 " \"ops\": [{\"op\": \"sum\", \"in\": [\"a\"], \"axis\": 1.5, \"out\": \"b\"}], \"outputs\": [\"b\"]}"},
	};
	static const char *const want[] = {
		"ops[1].in[1]: tensor 'zz' is not defined above",
		"ops[0].axes[1]: expected an integer from -8 to 7, got 'x'",
		"ops[0].kernel: expected an integer or a [h, w] pair, got a list",
		"inputs.a: unknown key 'extra'",
		"ops[0].axis: expected an integer from -8 to 7, got 1.5",
	};
	for (size_t i = 0; i < SUITE_COUNT(want); i++) {
		for (int f = 0; f < 2; f++) {
			const char *msg = test_graph_error(f ? "g.json" : "g.yaml", yaml_json[i][f]);
			const char *text = strstr(msg, ": error: ");
			assert_non_null(text);
			assert_string_equal(text + 9, want[i]);
		}
	}
}

static void test_integers_are_exact(void **state)
{
	(void)state;
	Arena *a = arena_new();
	Graph *g = read_as(a, "g.json",
		"{\"format\": \"fusec-graph/1\", \"inputs\": {\"a\": {\"dtype\": \"u8\","
		" \"shape\": [9007199254740993]}}, \"ops\": [], \"outputs\": [\"a\"]}");
	assert_true(g->tensors[0].dim[0] == 9007199254740993LL);
	arena_free(a);
	assert_string_equal(test_graph_error("g.json",
		"{\"format\": \"fusec-graph/1\", \"inputs\": {\"a\": {\"dtype\": \"u8\","
		" \"shape\": [99999999999999999999]}}, \"ops\": [], \"outputs\": [\"a\"]}"),
		"g.json:1:71: error: inputs.a.shape[0]: expected a positive integer, got 99999999999999999999");
	assert_string_equal(test_graph_error("g.yaml",
		"format: fusec-graph/1\ninputs: {a: {dtype: u8, shape: [4.0]}}\nops: []\noutputs: []\n"),
		"g.yaml:2:33: error: inputs.a.shape[0]: expected a positive integer, got 4.0");
	assert_string_equal(test_graph_error("g.yaml",
		"format: fusec-graph/1\ninputs: {a: {dtype: u8, shape: ['4']}}\nops: []\noutputs: []\n"),
		"g.yaml:2:33: error: inputs.a.shape[0]: expected a positive integer, got '4'");
}

static void test_structure_errors(void **state)
{
	(void)state;
	static const char *const cases[][2] = {
		{"- 1\n- 2\n", "g.yaml:1:1: error: the document must be a map with format, inputs, ops and outputs, got a list"},
		{"format: fusec-graph/1\ninputs: {}\nops: []\n", "g.yaml:1:1: error: missing key 'outputs'"},
		{"format: fusec-graph/1\ninputs: {}\nops: []\noutputs: []\nextra: 1\n", "g.yaml:5:1: error: unknown key 'extra'"},
		{"format: fusec-graph/1\nformat: fusec-graph/1\n", "g.yaml:2:1: error: duplicate key 'format'"},
		{"inputs: {}\nops: []\noutputs: []\n", "g.yaml:1:1: error: missing key 'format'"},
		{"format: 1\n", "g.yaml:1:9: error: format: expected 'fusec-graph/1', got 1"},
		{"format: fusec-graph/1\nname: ../x\ninputs: {}\nops: []\noutputs: []\n",
		 "g.yaml:2:7: error: name: '../x' may only contain letters, digits, '_', '-' and '.' (and not start with '.')"},
		{"format: fusec-graph/1\ninputs: []\nops: []\noutputs: []\n", "g.yaml:2:9: error: inputs: expected a map of name: {dtype, shape}, got a list"},
		{"format: fusec-graph/1\ninputs: {}\nops: {}\noutputs: []\n", "g.yaml:3:6: error: ops: expected a list of ops, got a map"},
		{"format: fusec-graph/1\ninputs: {}\nops: [3]\noutputs: []\n", "g.yaml:3:7: error: ops[0]: expected a map with op, in and out, got 3"},
		{"format: fusec-graph/1\ninputs: {}\nops: [{in: []}]\noutputs: []\n", "g.yaml:3:7: error: ops[0]: missing key 'op'"},
		{"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [2]}}\nops: [{op: exp, in: [a]}]\noutputs: []\n",
		 "g.yaml:3:7: error: ops[0]: missing key 'out'"},
		{"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [2]}}\nops: [{op: exp, out: y}]\noutputs: []\n",
		 "g.yaml:3:7: error: ops[0]: missing key 'in'"},
		{"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [2]}}\nops: [{op: exp, in: [a], out: [y, z]}]\noutputs: []\n",
		 "g.yaml:3:31: error: ops[0].out: op 'exp' has 1 result, got a list of 2 names"},
		{"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [2]}}\nops: [{op: exp, in: [a], out: ''}]\noutputs: []\n",
		 "g.yaml:3:31: error: ops[0].out: tensor names must not be empty"},
		{"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [2]}}\nops: [{op: sync, stream: 1, shape: [2]}]\noutputs: []\n",
		 "g.yaml:3:29: error: ops[0]: unknown attribute 'shape' for op 'sync'; 'sync' takes no attributes"},
		{"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [2]}}\nops: [{op: exp, in: [a], out: y, stream: 1024}]\noutputs: []\n",
		 "g.yaml:3:42: error: ops[0].stream: expected an integer from 0 to 1023, got 1024"},
		{"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [2]}}\nops: [{op: cast, in: [a], dtype: f32x, out: y}]\noutputs: []\n",
		 "g.yaml:3:34: error: ops[0].dtype: unknown dtype 'f32x'; did you mean 'f32'?"},
		{"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [2]}}\nops: [{op: exp, in: [a], dtype: f16, out: y}]\noutputs: []\n",
		 "g.yaml:3:33: error: op 'exp' (ops[0]): stated dtype f16 does not match the inferred dtype f32"},
		{"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [2]}}\nops: [{op: gelu, in: [a], approximate: fast, out: y}]\noutputs: []\n",
		 "g.yaml:3:40: error: ops[0].approximate: expected 'none' or 'tanh', got 'fast'"},
		{"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [2]}}\nops: [{op: slice, in: [a], ranges: [[0, 1, 2]], out: y}]\noutputs: []\n",
		 "g.yaml:3:37: error: ops[0].ranges[0]: expected a [start, end] pair of integers, got a list"},
		{"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [2]}}\nops: [{op: exp, in: a, out: y}]\noutputs: []\n",
		 "g.yaml:3:21: error: ops[0].in: expected a list of tensor names, got 'a'"},
		{"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [2]}}\nops: []\noutputs: [a, 3]\n",
		 "g.yaml:4:14: error: outputs[1]: expected a tensor name, got 3"},
		{"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [2]}}\nops: [{op: exp, in: [a], out: !!str y}]\noutputs: []\n",
		 NULL},
		{"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [2]}}\nops: [{op: exp, in: [a], out: !!int 3}]\noutputs: []\n",
		 "g.yaml:3:31: error: YAML tags are not supported"},
		{"format: fusec-graph/1\ninputs: {? [a]: {dtype: f32, shape: [2]}}\nops: []\noutputs: []\n",
		 "g.yaml:2:12: error: map keys must be scalars"},
		{"format: fusec-graph/1\ninputs: {\"a\\tb\": {dtype: f32, shape: [2]}}\nops: []\noutputs: []\n",
		 "g.yaml:2:10: error: inputs: tensor name 'a?b' contains a control character"},
	};
	int bad = 0;
	for (size_t i = 0; i < SUITE_COUNT(cases); i++) {
		const char *got = test_graph_error("g.yaml", cases[i][0]);
		const char *want = cases[i][1] ? cases[i][1] : "(no error)";
		if (strcmp(got, want)) {
			print_error("case %zu:\n  got  %s\n  want %s\n", i, got, want);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

/* ---- hostile input ---------------------------------------------------------- */

static void test_billion_laughs(void **state)
{
	(void)state;
	Buf b = {0};
	buf_puts(&b, "format: fusec-graph/1\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
	for (int i = 1; i < 10; i++) {
		buf_printf(&b, "l%d: &l%d [", i, i);
		for (int k = 0; k < 9; k++)
			buf_printf(&b, "%s*l%d", k ? ", " : "", i - 1);
		buf_puts(&b, "]\n");
	}
	double t0 = clock_seconds();
	const char *msg = test_graph_error("lol.yaml", b.data);
	assert_true(clock_seconds() - t0 < 0.5);
	assert_string_equal(msg, "lol.yaml:3:10: error: YAML aliases are not supported");
	buf_free(&b);
}

static void test_deep_nesting(void **state)
{
	(void)state;
	enum { N = 200000 };
	char *s = malloc(2 * N + 2);
	for (int i = 0; i < N; i++)
		s[i] = '[', s[N + i] = ']';
	s[2 * N] = 0;
	assert_string_equal(test_graph_error("deep.json", s),
			    "deep.json:1:65: error: nesting deeper than 64 levels");
	assert_string_equal(test_graph_error("deep.yaml", s),
			    "deep.yaml:1:65: error: nesting deeper than 64 levels");
	/* inside a string, brackets do not nest: cJSON sees the unterminated string */
	memcpy(s, "{\"format\": \"", 12);
	assert_string_equal(test_graph_error("deep.json", s),
			    "deep.json:1:13: error: JSON syntax error at '[[[[[[[[[[[[[[[['");
	free(s);
	/* block-style YAML nesting */
	Buf b = {0};
	for (int i = 0; i < 100; i++)
		buf_printf(&b, "%*sk:\n", i, "");
	assert_string_equal(test_graph_error("deep.yaml", b.data),
			    "deep.yaml:65:65: error: nesting deeper than 64 levels");
	buf_free(&b);
	/* 64 levels are fine for the readers (the validator then refuses the document) */
	b = (Buf){0};
	for (int i = 0; i < 64; i++)
		buf_putc(&b, '[');
	for (int i = 0; i < 64; i++)
		buf_putc(&b, ']');
	assert_string_equal(test_graph_error("ok.json", b.data),
			    "ok.json:1:1: error: the document must be a map with format, inputs, ops and outputs, got a list");
	buf_free(&b);
}

static void test_bad_bytes(void **state)
{
	(void)state;
	static const char *const cases[][2] = {
		{"format: fusec-graph/1\nname: a\xc0\x80\n", "x.yaml:2:8: error: invalid UTF-8 (byte 0xc0)"},
		{"format: fusec-graph/1\nname: \xed\xa0\x80\n", "x.yaml:2:7: error: invalid UTF-8 (byte 0xed)"},
		{"{\"format\": \"\xe2\x82\"}", "x.json:1:13: error: invalid UTF-8 (byte 0xe2)"},
		{"{\"format\": \"\xf4\x90\x80\x80\"}", "x.json:1:13: error: invalid UTF-8 (byte 0xf4)"},
		{"{\"a\": \"é\", \"b\": \"\xe9\"}", "x.json:1:18: error: invalid UTF-8 (byte 0xe9)"},
		{"", "x.yaml:1:1: error: empty document"},
		{" \n\t\r\n ", "x.json:1:1: error: empty document"},
		{"# only a comment\n", "x.yaml:1:1: error: empty document"},
		{"\xef\xbb\xbf", "x.json:1:1: error: empty document"},
	};
	for (size_t i = 0; i < SUITE_COUNT(cases); i++) {
		const char *file = strstr(cases[i][1], ".json") ? "x.json" : "x.yaml";
		assert_string_equal(test_graph_error(file, cases[i][0]), cases[i][1]);
	}
	/* NUL bytes: ir_read_mem takes a length */
	static const char nul[] = "format: fusec-graph/1\nna\0me: x\n";
	Arena *a = arena_new();
	Diag d;
	char msg[1100];
	assert_null(ir_read_mem(a, "x.yaml", nul, sizeof nul - 1, FMT_AUTO, &d));
	diag_format(&d, msg, sizeof msg);
	assert_string_equal(msg, "x.yaml:2:3: error: NUL byte in the input (not a text file?)");
	arena_free(a);
}

/* Every strict prefix of a valid document fails cleanly, in both formats. */
static void test_truncated(void **state)
{
	(void)state;
	for (size_t p = 0; p < SUITE_COUNT(pairs); p++) {
		for (int f = 0; f < 2; f++) {
			const char *text = f ? pairs[p].json : pairs[p].yaml;
			size_t len = strlen(text);
			/* the last bytes are a newline (and for YAML a flow list's end) */
			size_t full = len - 1;
			for (size_t n = 0; n < full; n++) {
				Arena *a = arena_new();
				Diag d;
				Graph *g = ir_read_mem(a, f ? "t.json" : "t.yaml", text, n, FMT_AUTO, &d);
				if (g)
					fail_msg("pair %zu %s: prefix of %zu bytes was accepted", p,
						 f ? "json" : "yaml", n);
				assert_true(d.line >= 1 && d.col >= 1);
				arena_free(a);
			}
		}
	}
	assert_string_equal(test_graph_error("t.json", "{\"format\": \"fusec-graph/1\", \"ops\": [{\"op\""),
			    "t.json:1:42: error: JSON syntax error: unexpected end of input");
	assert_string_equal(test_graph_error("t.yaml", "format: fusec-graph/1\nops: [{op: 'exp"),
			    "t.yaml:2:16: error: YAML syntax error: found unexpected end of stream while scanning a quoted scalar");
}

static void test_shape_limits(void **state)
{
	(void)state;
	assert_string_equal(test_graph_error("s.yaml",
		"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [1,1,1,1,1,1,1,1,1]}}\nops: []\noutputs: []\n"),
		"s.yaml:2:33: error: inputs.a.shape: rank 9 exceeds the maximum of 8");
	assert_string_equal(test_graph_error("s.yaml",
		"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [65536, 65536, 65536, 32768]}}\nops: []\noutputs: []\n"),
		"s.yaml:2:33: error: inputs.a.shape: element count overflows");
	/* just below the limit: 2^62 elements of 1 byte; of 4 bytes, the byte size
	 * overflows */
	Arena *a = arena_new();
	Graph *g = read_as(a, "s.yaml",
		"format: fusec-graph/1\ninputs: {a: {dtype: u8, shape: [65536, 65536, 65536, 16384]}}\nops: []\noutputs: [a]\n");
	assert_int_equal(g->tensors[0].dim[3], 16384);
	assert_string_equal(test_graph_error("s.yaml",
		"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [65536, 65536, 65536, 16384]}}\nops: []\noutputs: [a]\n"),
		"s.yaml:2:33: error: inputs.a.shape: [65536,65536,65536,16384] × 4 bytes (f32) overflows a 64-bit byte size");
	assert_string_equal(test_graph_error("s.yaml",
		"format: fusec-graph/1\ninputs: {a: {dtype: u8, shape: [4611686018427387904]}}\n"
		"ops:\n  - {op: cast, in: [a], dtype: f16, out: y}\noutputs: [y]\n"),
		"s.yaml:4:5: error: op 'cast' (ops[0]): output: [4611686018427387904] × 2 bytes (f16) overflows a 64-bit byte size");
	/* rank 8 and rank 0 */
	g = read_as(a, "s.yaml",
		"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [1,2,1,2,1,2,1,2]}, b: {dtype: i8, shape: []}}\n"
		"ops: []\noutputs: [a, b]\n");
	assert_int_equal(g->tensors[0].rank, 8);
	assert_int_equal(g->tensors[1].rank, 0);
	arena_free(a);
	assert_string_equal(test_graph_error("s.yaml",
		"format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [4, 6]}}\nops:\n"
		"  - {op: reshape, in: [a], shape: [65536, 65536, 65536, 65536], out: b}\noutputs: []\n"),
		"s.yaml:4:35: error: ops[0].shape: element count overflows");
}

/* A long chain reads in linear time. */
static void test_large_graph(void **state)
{
	(void)state;
	enum { N = 114000 };
	Buf b = {0};
	buf_puts(&b, "{\"format\": \"fusec-graph/1\", \"inputs\": {\"a\": {\"dtype\": \"f32\", "
		     "\"shape\": [64, 64]}, \"b\": {\"dtype\": \"f32\", \"shape\": [64, 64]}},\n\"ops\": [\n");
	for (int i = 0; i < N; i++) {
		char prev[16];
		snprintf(prev, sizeof prev, i ? "t%d" : "a", i - 1);
		if (i % 3 == 0)
			buf_printf(&b, "  {\"op\": \"mul\", \"in\": [\"%s\", \"b\"], \"out\": \"t%d\"},\n", prev, i);
		else if (i % 3 == 1)
			buf_printf(&b, "  {\"op\": \"add_scalar\", \"in\": [\"%s\"], \"scalar\": 1.5, \"out\": \"t%d\"},\n",
				   prev, i);
		else
			buf_printf(&b, "  {\"op\": \"exp\", \"in\": [\"%s\"], \"out\": \"t%d\"},\n", prev, i);
	}
	buf_printf(&b, "  {\"op\": \"sync\"}],\n\"outputs\": [\"t%d\"]}\n", N - 1);
	Arena *a = arena_new();
	Diag d;
	double t0 = clock_seconds();
	Graph *g = ir_read_mem(a, "big.json", b.data, b.len, FMT_AUTO, &d);
	double dt = clock_seconds() - t0;
	assert_non_null(g);
	assert_int_equal(g->nops, N + 1);
	assert_int_equal(g->ntensors, N + 2);
	assert_int_equal(g->tensors[g->outputs[0]].role, ROLE_OUTPUT);
	/* generous: sanitizer builds are several times slower */
	assert_true(dt < 5.0);
	arena_free(a);
	buf_free(&b);
}

static void test_read_file(void **state)
{
	(void)state;
	Arena *a = arena_new();
	Diag d;
	char msg[1100];
	assert_null(ir_read_file(a, "/nonexistent/g.yaml", FMT_AUTO, &d));
	diag_format(&d, msg, sizeof msg);
	assert_string_equal(msg, "/nonexistent/g.yaml: error: cannot open: No such file or directory");
	/* tests run from tests/ */
	Graph *g = ir_read_file(a, "../docs/examples/reuse.yaml", FMT_AUTO, &d);
	assert_non_null(g);
	assert_string_equal(g->file, "../docs/examples/reuse.yaml");
	assert_string_equal(g->name, "reuse");
	Graph *j = ir_read_file(a, "../docs/examples/reuse.json", FMT_AUTO, &d);
	assert_non_null(j);
	char why[200] = "";
	if (!same_graph(g, j, why))
		fail_msg("reuse.yaml and reuse.json differ: %s", why);
	arena_free(a);
}

/* Several errors per file: each failing entry once, in order; entries that read a
 * failed definition stay silent; maxd bounds the count; one slot is the old API. */
static void test_several_errors(void **state)
{
	(void)state;
	static const char text[] =
		"{\"format\": \"fusec-graph/1\",\n"
		" \"inputs\": {\"a\": {\"dtype\": \"f3\", \"shape\": [4]},\n"
		"            \"b\": {\"dtype\": \"f32\", \"shape\": [4]}},\n"
		" \"ops\": [{\"op\": \"neg\", \"in\": [\"a\"], \"out\": \"x\"},\n"
		"         {\"op\": \"exp\", \"in\": [\"x\"], \"out\": \"y\"},\n"
		"         {\"op\": \"nope\", \"in\": [\"b\"], \"out\": \"z\"},\n"
		"         {\"op\": \"abs\", \"in\": [\"c\"], \"out\": \"w\"}],\n"
		" \"outputs\": [\"y\", \"z\", \"v\"]}\n";
	Diag d[8];
	int nd = 0;
	Arena *a = arena_new();
	assert_null(ir_read_mem_errors(a, "m.json", text, sizeof text - 1, FMT_AUTO, d, 8, &nd));
	assert_int_equal(nd, 4);
	assert_int_equal(d[0].line, 2);
	assert_non_null(strstr(d[0].msg, "unknown dtype 'f3'"));
	assert_int_equal(d[1].line, 6);   /* not ops[0] or ops[1]: they read a */
	assert_non_null(strstr(d[1].msg, "unknown op 'nope'"));
	assert_int_equal(d[2].line, 7);
	assert_non_null(strstr(d[2].msg, "tensor 'c' is not defined above"));
	assert_int_equal(d[3].line, 8);   /* y and z failed: only v is news */
	assert_non_null(strstr(d[3].msg, "tensor 'v' is not defined"));
	assert_null(ir_read_mem_errors(a, "m.json", text, sizeof text - 1, FMT_AUTO, d, 2, &nd));
	assert_int_equal(nd, 2);
	assert_int_equal(d[1].line, 6);
	Diag one;
	assert_null(ir_read_mem(a, "m.json", text, sizeof text - 1, FMT_AUTO, &one));
	assert_string_equal(one.msg, d[0].msg);
	/* a graph that reads is untouched by the machinery */
	static const char good[] = "{\"format\": \"fusec-graph/1\", \"inputs\": "
		"{\"a\": {\"dtype\": \"f32\", \"shape\": [4]}}, \"ops\": [], \"outputs\": [\"a\"]}";
	assert_non_null(ir_read_mem_errors(a, "g.json", good, sizeof good - 1, FMT_AUTO, d, 8, &nd));
	arena_free(a);
}

/* ---- the JSON reader's fast path (read_json.c) ------------------------------- */

/* Where two document trees first differ ("" when they are the same). */
static bool same_doc(const DocNode *x, const DocNode *y, char *why, size_t size)
{
#define NODE_DIFF(what) do { snprintf(why, size, "%s at %d:%d", what, x->line, x->col); return false; } while (0)
	if (x->kind != y->kind) NODE_DIFF("kind");
	if (x->line != y->line || x->col != y->col) NODE_DIFF("position");
	if (!x->key != !y->key || (x->key && strcmp(x->key, y->key))) NODE_DIFF("key");
	if (x->key_line != y->key_line || x->key_col != y->key_col) NODE_DIFF("key position");
	if (!x->text != !y->text || (x->text && strcmp(x->text, y->text))) NODE_DIFF("text");
	if (x->n != y->n) NODE_DIFF("child count");
	if (x->bval != y->bval || x->is_int != y->is_int || x->int_ok != y->int_ok ||
	    x->ival != y->ival || memcmp(&x->dval, &y->dval, sizeof x->dval)) NODE_DIFF("value");
#undef NODE_DIFF
	for (const DocNode *a = x->first, *b = y->first; a || b; a = a->next, b = b->next)
		if (!a || !b || !same_doc(a, b, why, size))
			return a && b ? false : (snprintf(why, size, "children end apart"), false);
	return true;
}

/* Both paths on one text: the same tree, or the same refusal. Returns whether the
 * fast path took it. */
static bool check_fast_path(const char *name, const char *text)
{
	Arena *a = arena_new();
	Diag d;
	size_t len = strlen(text);
	DocNode *whole = doc_read_json_whole(a, name, text, len, &d);
	DocNode *fast = doc_read_json_fast(a, name, text, len);
	char why[200] = "";
	if (!whole && fast)
		fail_msg("%s: the fast path accepts what the whole-document path refuses", name);
	if (whole && fast && !same_doc(whole, fast, why, sizeof why))
		fail_msg("%s: the two paths give other trees: %s", name, why);
	arena_free(a);
	return fast != NULL;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = 0;
	fclose(f);
	return s;
}

static void test_json_fast_path(void **state)
{
	(void)state;
	/* every JSON file of the repository (tests run from tests/): each valid one
	 * takes the fast path, to the same tree */
	static const char *const globs[] = {"bench/gpu/*.json", "errors/*.json", "golden/*.json",
					     "runtime/*.json", "../docs/examples/*.json",
					     "../docs/schema/*.json"};
	int files = 0, fast = 0, valid = 0;
	for (size_t k = 0; k < SUITE_COUNT(globs); k++) {
		glob_t gl;
		if (glob(globs[k], 0, NULL, &gl))
			continue;
		for (size_t i = 0; i < gl.gl_pathc; i++) {
			char *text = slurp(gl.gl_pathv[i]);
			Arena *a = arena_new();
			Diag d;
			valid += doc_read_json_whole(a, gl.gl_pathv[i], text, strlen(text), &d) != NULL;
			arena_free(a);
			fast += check_fast_path(gl.gl_pathv[i], text);
			files++;
			free(text);
		}
		globfree(&gl);
	}
	assert_true(files >= 70);
	assert_int_equal(fast, valid);
	/* texts made to probe the edges: {text, whether the fast path takes it} */
	static const struct { const char *text; bool fast; } cases[] = {
		{"{}", true},
		{" \n\t{ } \n", true},
		{"\xef\xbb\xbf{\"a\": 1}", true},
		{"[]", true},
		{"[[], {}, [[1, 2]], {\"k\": {\"x\": [true, false, null]}}]", true},
		{"{\"a\": {\"b\": {\"c\": [1.5e3, -0, 12345678901234567890, 1E-2]}}}", true},
		{"{\"é\": \"\\u00e9\\n\", \"b\": {\"ü\": \"\\\"q\\\"\"}}", true},
		{"{\"a\": \"x\",\n  \"b\" :\n [ 1 ,2 ] , \"c\":{}}", true},
		{"{\"a\": 1, \"a\": 2}", true},
		{"\"just a string\"", true},
		{"42", true},
		{"{\"a\\u0041\": 1}", false},          /* an escape in a top-level key */
		{"{\"x\": {\"a\\n\": 1}}", false},       /* ... or a second-level one */
		{"{\"x\": [{\"a\\n\": 1}]}", true},      /* a third-level one is cJSON's */
		{"{\"a\": 1,}", false},
		{"{\"a\": 1} x", false},
		{"{\"a\" 1}", false},
		{"[1 2]", false},
		{"{\"a\": [1, 2}", false},
		{"{\"a\": tru}", false},
		{"{\"a\": \"unterminated}", false},
		{"{\"a", false},
		{"", false},
	};
	for (size_t i = 0; i < SUITE_COUNT(cases); i++) {
		char name[32];
		snprintf(name, sizeof name, "case%zu.json", i);
		if (check_fast_path(name, cases[i].text) != cases[i].fast)
			fail_msg("%s (%s): the fast path %s", name, cases[i].text,
				 cases[i].fast ? "stepped aside" : "took it");
	}
	/* the comparison can fail: one column apart */
	Arena *a = arena_new();
	Diag d;
	DocNode *x = doc_read_json_whole(a, "x.json", "{\"a\": [1]}", 10, &d);
	DocNode *y = doc_read_json_fast(a, "y.json", "{\"a\": [ 1]}", 11);
	char why[200];
	assert_false(same_doc(x, y, why, sizeof why));
	assert_string_equal(why, "position at 1:8");
	arena_free(a);
}

const struct CMUnitTest readers_tests[] = {
	cmocka_unit_test(test_json_fast_path),
	cmocka_unit_test(test_several_errors),
	cmocka_unit_test(test_json_and_yaml_give_the_same_ir),
	cmocka_unit_test(test_comparison_can_fail),
	cmocka_unit_test(test_fields_of_the_kinds_graph),
	cmocka_unit_test(test_module_defaults),
	cmocka_unit_test(test_sniffing_and_names),
	cmocka_unit_test(test_positions),
	cmocka_unit_test(test_same_message_in_both_formats),
	cmocka_unit_test(test_integers_are_exact),
	cmocka_unit_test(test_structure_errors),
	cmocka_unit_test(test_billion_laughs),
	cmocka_unit_test(test_deep_nesting),
	cmocka_unit_test(test_bad_bytes),
	cmocka_unit_test(test_truncated),
	cmocka_unit_test(test_shape_limits),
	cmocka_unit_test(test_large_graph),
	cmocka_unit_test(test_read_file),
};
const size_t readers_ntests = SUITE_COUNT(readers_tests);
