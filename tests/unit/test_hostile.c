/* test_hostile.c: hostile and odd input for the readers, inference, liveness and
 * the relative form, found by fuzzing (tests/fuzz/) and by hand.
 *
 * Each case either reads into a graph whose fields are checked, or fails with the
 * exact message. Regressions kept here: more than 65535 placeholders in one
 * segment (the relative form's place0 used to wrap to #0), cat with more operands
 * than RelOp.nin holds, finite literals that overflow a double (they used to turn
 * into inf silently), and messages for tabs, long YAML keys, merge keys, a second
 * BOM and control characters in JSON excerpts. Also: floods of brackets, huge
 * dimension lists, overflowing shapes of intermediate ops, 10^5 syncs over 1024
 * streams, long names, BOMs, CRLF line endings and number spellings. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test.h"

/* The relative form of segment `s`, ops separated by newlines (caller frees). */
static char *relative_text(const Graph *g, int s)
{
	RelConv *c = ir_rel_new(g);
	Arena *a = arena_new();
	Buf b = {0};
	ir_rel_reset(c);
	for (int i = 0; i < g->segs[s].nops; i++) {
		RelOp op;
		ir_rel_op(c, a, g->segs[s].ops[i], &op);
		ir_rel_print(&b, &op);
		buf_putc(&b, '\n');
	}
	arena_free(a);
	ir_rel_free(c);
	return b.data;
}

/* A one-op graph: input a of `shape`, then `op` (YAML flow map), output y. */
static const char *one_op_error(const char *shape, const char *op)
{
	static char text[1024];
	snprintf(text, sizeof text,
		 "format: fusec-graph/1\ninputs:\n  a: {dtype: f32, shape: %s}\nops:\n  - %s\n"
		 "outputs: [y]\n", shape, op);
	return test_graph_error("o.yaml", text);
}

/* ---- relative form limits ---------------------------------------------------- */

/* 70000 scalar ops in one segment: placeholder numbers keep counting past 65535. */
static void test_placeholders_past_65535(void **state)
{
	(void)state;
	enum { N = 70000 };
	Buf b = {0};
	buf_puts(&b, "{\"format\": \"fusec-graph/1\", \"inputs\": {\"a\": {\"dtype\": \"f32\", "
		     "\"shape\": [8]}}, \"ops\": [\n");
	for (int i = 0; i < N; i++) {
		char prev[16];
		snprintf(prev, sizeof prev, i ? "t%d" : "a", i - 1);
		buf_printf(&b, "{\"op\": \"add_scalar\", \"in\": [\"%s\"], \"scalar\": %d, \"out\": \"t%d\"}%s\n",
			   prev, i, i, i + 1 < N ? "," : "");
	}
	buf_printf(&b, "], \"outputs\": [\"t%d\"]}\n", N - 1);
	Arena *a = arena_new();
	Diag d;
	Graph *g = ir_read_mem(a, "p.json", b.data, b.len, FMT_AUTO, &d);
	assert_non_null(g);
	assert_int_equal(g->nsegs, 1);
	assert_int_equal(g->segs[0].nops, N);

	RelConv *c = ir_rel_new(g);
	Arena *ra = arena_new();
	ir_rel_reset(c);
	RelOp op = {0};
	for (int i = 0; i < N; i++) {
		ir_rel_op(c, ra, g->segs[0].ops[i], &op);
		if (op.place0 != i || op.nplace != 1)
			fail_msg("op %d: place0 %d, nplace %d", i, (int)op.place0, (int)op.nplace);
	}
	int n;
	const double *v = ir_rel_values(c, &n);
	assert_int_equal(n, N);
	assert_true(v[65536] == 65536.0 && v[N - 1] == N - 1);
	Buf p = {0};
	ir_rel_print(&p, &op);
	assert_string_equal(p.data, "NumericFloat::AddScalar(t69999:f32[1] ReadWrite, #69999) -> t70000:f32[1]");
	buf_free(&p);
	arena_free(ra);
	ir_rel_free(c);
	arena_free(a);
	buf_free(&b);
}

/* cat takes up to IR_MAX_IN operands; the relative op keeps them all. */
static void test_operand_limit(void **state)
{
	(void)state;
	for (int n = IR_MAX_IN; n <= IR_MAX_IN + 1; n++) {
		Buf b = {0};
		buf_puts(&b, "format: fusec-graph/1\ninputs:\n  a: {dtype: f32, shape: [2]}\nops:\n"
			     "  - {op: cat, axis: 0, out: y, in: [");
		for (int i = 0; i < n; i++)
			buf_puts(&b, i ? ", a" : "a");
		buf_puts(&b, "]}\noutputs: [y]\n");
		if (n > IR_MAX_IN) {
			assert_string_equal(test_graph_error("c.yaml", b.data),
					    "c.yaml:5:36: error: op 'cat' (ops[0]): needs at most 255 inputs, got 256");
			buf_free(&b);
			continue;
		}
		Arena *a = arena_new();
		Graph *g = test_graph(a, "c.yaml", b.data);
		assert_int_equal(g->tensors[1].dim[0], 2 * n);
		char *rel = relative_text(g, 0);
		/* 255 operands t0, then the result t1 with a new shape id */
		assert_non_null(strstr(rel, "t0:f32[1] ReadOnly, axis=0) -> t1:f32[2]\n"));
		free(rel);
		arena_free(a);
		buf_free(&b);
	}
}

/* ---- numbers ----------------------------------------------------------------- */

static void test_number_spellings(void **state)
{
	(void)state;
	static const struct {
		const char *file, *lit;
		double want;     /* when msg is NULL */
		const char *msg; /* the error, after "FILE:5:39: error: " (YAML) */
	} cases[] = {
		{"n.yaml", "-0", -0.0, NULL},
		{"n.yaml", "+1", 1.0, NULL},
		{"n.yaml", "+.inf", INFINITY, NULL},
		{"n.yaml", "1e-999", 0.0, NULL},
		{"n.yaml", "1E+2", 100.0, NULL},
		{"n.yaml", "0.1111111111111111111111111111111111111111", 0.1111111111111111, NULL},
		{"n.yaml", "1e999", 0, "ops[0].scalar: 1e999 is out of range for a 64-bit float"},
		{"n.yaml", "-1e999", 0, "ops[0].scalar: -1e999 is out of range for a 64-bit float"},
		{"n.yaml", "0x10", 0, "ops[0].scalar: expected a number, got '0x10'"},
		{"n.yaml", "'1'", 0, "ops[0].scalar: expected a number, got '1'"},
		{"n.json", "-0", -0.0, NULL},
		{"n.json", "1e999", 0, "ops[0].scalar: 1e999 is out of range for a 64-bit float"},
		{"n.json", "+1", 0, "JSON syntax error at '+1, \"out\": \"y\"}]'"},
		{"n.json", "NaN", 0, "JSON syntax error at 'NaN, \"out\": \"y\"}'"},
		{"n.json", "\"-inf\"", -INFINITY, NULL},
	};
	for (size_t i = 0; i < SUITE_COUNT(cases); i++) {
		bool json = strstr(cases[i].file, ".json") != NULL;
		char text[512], want[512];
		if (json)
			snprintf(text, sizeof text,
				 "{\"format\": \"fusec-graph/1\", \"inputs\": {\"a\": {\"dtype\": \"f32\", \"shape\": [2]}},\n"
				 "\"ops\": [{\"op\": \"mul_scalar\", \"in\": [\"a\"], \"scalar\": %s, \"out\": \"y\"}],\n"
				 "\"outputs\": [\"y\"]}\n", cases[i].lit);
		else
			snprintf(text, sizeof text,
				 "format: fusec-graph/1\ninputs:\n  a: {dtype: f32, shape: [2]}\nops:\n"
				 "  - {op: mul_scalar, in: [a], scalar: %s, out: y}\noutputs: [y]\n",
				 cases[i].lit);
		if (cases[i].msg) {
			snprintf(want, sizeof want, "%s:%s: error: %s", cases[i].file,
				 json ? "2:53" : "5:39", cases[i].msg);
			assert_string_equal(test_graph_error(cases[i].file, text), want);
			continue;
		}
		Arena *a = arena_new();
		Graph *g = test_graph(a, cases[i].file, text);
		double got = g->ops[0].attr->scalar;
		if (got != cases[i].want || signbit(got) != signbit(cases[i].want))
			fail_msg("%s %s: got %g, want %g", cases[i].file, cases[i].lit, got,
				 cases[i].want);
		arena_free(a);
	}
	/* dims: integers only, written as such */
	assert_string_equal(one_op_error("[-0]", "{op: exp, in: [a], out: y}"),
			    "o.yaml:3:27: error: inputs.a.shape[0]: expected a positive integer, got -0");
	assert_string_equal(one_op_error("[2.0]", "{op: exp, in: [a], out: y}"),
			    "o.yaml:3:27: error: inputs.a.shape[0]: expected a positive integer, got 2.0");
	assert_string_equal(one_op_error("[9223372036854775808]", "{op: exp, in: [a], out: y}"),
			    "o.yaml:3:27: error: inputs.a.shape[0]: expected a positive integer, got 9223372036854775808");
	Arena *a = arena_new();
	Graph *g = test_graph(a, "d.yaml",
		"format: fusec-graph/1\ninputs:\n  a: {dtype: u8, shape: [+1, 9223372036854775807]}\nops: []\noutputs: [a]\n");
	assert_int_equal(g->tensors[0].dim[0], 1);
	assert_int_equal(g->tensors[0].dim[1], INT64_MAX);
	arena_free(a);
}

/* ---- shapes ------------------------------------------------------------------ */

/* Shapes whose element count overflows int64 only after an op. */
static void test_intermediate_overflow(void **state)
{
	(void)state;
	assert_string_equal(
		test_graph_error("m.yaml",
			"format: fusec-graph/1\ninputs:\n  a: {dtype: f32, shape: [1099511627776, 1]}\n"
			"  b: {dtype: f32, shape: [1, 1099511627776]}\nops:\n  - {op: matmul, in: [a, b], out: y}\n"
			"outputs: [y]\n"),
		"m.yaml:6:5: error: op 'matmul' (ops[0]): output shape [1099511627776,1099511627776] has too many elements");
	assert_string_equal(
		test_graph_error("m.yaml",
			"format: fusec-graph/1\ninputs:\n  a: {dtype: f32, shape: [1099511627776, 1]}\n"
			"  b: {dtype: f32, shape: [1, 1099511627776]}\nops:\n  - {op: add, in: [a, b], out: y}\n"
			"outputs: [y]\n"),
		"m.yaml:6:5: error: op 'add' (ops[0]): output shape [1099511627776,1099511627776] has too many elements");
	assert_string_equal(test_graph_error("o.yaml",
		"format: fusec-graph/1\ninputs:\n  a: {dtype: u8, shape: [4611686018427387904]}\nops:\n"
		"  - {op: cat, in: [a, a, a], axis: 0, out: y}\noutputs: [y]\n"),
			    "o.yaml:5:5: error: op 'cat' (ops[0]): cat size along axis 0 overflows int64");
	assert_string_equal(one_op_error("[1, 1]", "{op: expand, in: [a], shape: [4294967296, 4294967296], out: y}"),
			    "o.yaml:5:34: error: ops[0].shape: element count overflows");
	assert_string_equal(one_op_error("[1152921504606846976]", "{op: reshape, in: [a], shape: [-1, 4611686018427387904, 4], out: y}"),
			    "o.yaml:5:35: error: ops[0].shape: element count overflows");
	assert_string_equal(one_op_error("[1152921504606846976]", "{op: reshape, in: [a], shape: [-1, 3], out: y}"),
			    "o.yaml:5:5: error: op 'reshape' (ops[0]): cannot reshape [1152921504606846976] into [-1,3]");
	assert_string_equal(one_op_error("[1, 1, 1152921504606846976, 1]",
					 "{op: conv2d, in: [a, a], padding: 2147483647, out: y}"),
			    "o.yaml:5:5: error: op 'conv2d' (ops[0]): output shape [1,1,4294967295,4294967295] has too many elements");
	assert_string_equal(one_op_error("[4]", "{op: slice, in: [a], ranges: [[-9223372036854775808, 9223372036854775807]], out: y}"),
			    "o.yaml:5:5: error: op 'slice' (ops[0]): slice range [-9223372036854775808,9223372036854775807] is out of bounds for dim 0 of size 4");
}

/* A million dims, 50 MB of '[' or '{': refused early, in linear time. */
static void test_floods(void **state)
{
	(void)state;
	enum { DIMS = 1000000, FLOOD = 50 << 20 };
	Buf b = {0};
	buf_puts(&b, "{\"format\": \"fusec-graph/1\", \"inputs\": {\"a\": {\"dtype\": \"f32\", \"shape\": [");
	for (int i = 0; i < DIMS; i++)
		buf_puts(&b, i ? ",1" : "1");
	buf_puts(&b, "]}}, \"ops\": [], \"outputs\": []}");
	assert_string_equal(test_graph_error("dims.json", b.data),
			    "dims.json:1:71: error: inputs.a.shape: rank 1000000 exceeds the maximum of 8");
	/* the same list as YAML (JSON is YAML) */
	assert_string_equal(test_graph_error("dims.yaml", b.data),
			    "dims.yaml:1:71: error: inputs.a.shape: rank 1000000 exceeds the maximum of 8");
	buf_free(&b);

	char *s = malloc((size_t)FLOOD + 1);
	static const char opens[] = "[{";
	for (int k = 0; k < 2; k++) {
		memset(s, opens[k], FLOOD);
		s[FLOOD] = 0;
		for (int f = 0; f < 2; f++) {
			const char *file = f ? "flood.yaml" : "flood.json";
			char want[128];
			snprintf(want, sizeof want, "%s:%s", file, k == 1 && f == 1
				 ? "1:2: error: map keys must be scalars"
				 : "1:65: error: nesting deeper than 64 levels");
			double t0 = clock_seconds();
			Arena *a = arena_new();
			Diag d;
			char msg[1100];
			assert_null(ir_read_mem(a, file, s, FLOOD, FMT_AUTO, &d));
			diag_format(&d, msg, sizeof msg);
			arena_free(a);
			/* generous: sanitizer builds are several times slower */
			assert_true(clock_seconds() - t0 < 5.0);
			assert_string_equal(msg, want);
		}
	}
	free(s);
}

/* ---- streams, syncs and names ------------------------------------------------ */

static void test_many_syncs_and_streams(void **state)
{
	(void)state;
	enum { N = 100000 };
	Buf b = {0};
	buf_puts(&b, "{\"format\": \"fusec-graph/1\", \"inputs\": {\"a\": {\"dtype\": \"f32\", "
		     "\"shape\": [2]}}, \"ops\": [\n");
	for (int i = 0; i < N; i++) {
		if (i % 2)
			buf_puts(&b, "{\"op\": \"sync\"},\n");
		else
			buf_printf(&b, "{\"op\": \"neg\", \"in\": [\"a\"], \"out\": \"t%d\", \"stream\": %d},\n",
				   i, (i / 2) % 1024);
	}
	buf_puts(&b, "{\"op\": \"sync\"}], \"outputs\": []}\n");
	Arena *a = arena_new();
	Diag d;
	double t0 = clock_seconds();
	Graph *g = ir_read_mem(a, "s.json", b.data, b.len, FMT_AUTO, &d);
	assert_true(clock_seconds() - t0 < 5.0);
	assert_non_null(g);
	assert_int_equal(g->nstreams, 1024);
	assert_int_equal(g->nsegs, N / 2);
	for (int s = 0; s < g->nsegs; s++)
		if (g->segs[s].nops != 1 || g->segs[s].stream != s % 1024 ||
		    g->segs[s].sync_op != 2 * s + 1)
			fail_msg("segment %d: %d ops, stream %d, sync %d", s, g->segs[s].nops,
				 g->segs[s].stream, g->segs[s].sync_op);
	arena_free(a);
	buf_free(&b);

	assert_string_equal(one_op_error("[2]", "{op: neg, in: [a], out: y, stream: 1024}"),
			    "o.yaml:5:40: error: ops[0].stream: expected an integer from 0 to 1023, got 1024");
	assert_string_equal(one_op_error("[2]", "{op: neg, in: [a], out: y, stream: 99999999999999999999999}"),
			    "o.yaml:5:40: error: ops[0].stream: expected an integer from 0 to 1023, got 99999999999999999999999");
	a = arena_new();
	g = test_graph(a, "s.yaml",
		"format: fusec-graph/1\ninputs:\n  a: {dtype: f32, shape: [2]}\nops:\n"
		"  - {op: neg, in: [a], out: y, stream: 1023}\noutputs: [y]\n");
	assert_int_equal(g->nstreams, 1024);
	assert_int_equal(g->nsegs, 1);
	assert_int_equal(g->segs[0].stream, 1023);
	arena_free(a);
}

/* 100000-character names read, and messages clip them. */
static void test_long_names(void **state)
{
	(void)state;
	enum { L = 100000 };
	char *name = malloc(L + 1);
	memset(name, 'n', L);
	name[L] = 0;
	Buf b = {0};
	buf_printf(&b, "{\"format\": \"fusec-graph/1\", \"inputs\": {\"%s\": {\"dtype\": \"f32\", \"shape\": [2]}},"
		       " \"ops\": [{\"op\": \"exp\", \"in\": [\"%s\"], \"out\": \"y%s\"}], \"outputs\": [\"y%s\"]}",
		   name, name, name, name);
	Arena *a = arena_new();
	Graph *g = test_graph(a, "l.json", b.data);
	assert_int_equal(strlen(g->tensors[1].name), L + 1);
	char *rel = relative_text(g, 0);
	assert_string_equal(rel, "Float::Exp(t0:f32[1] ReadOnly) -> t1:f32[1]\n");
	free(rel);
	arena_free(a);
	/* an undefined output: the name is clipped to 60 characters */
	char *p = strstr(b.data, "\"outputs\": [\"y") + 13;
	*p = 'z';
	const char *msg = test_graph_error("l.json", b.data);
	assert_true(strlen(msg) < 200);
	assert_non_null(strstr(msg, "error: outputs[0]: tensor 'znnnn"));
	assert_non_null(strstr(msg, "nnn...' is not defined"));
	buf_free(&b);
	free(name);
}

/* ---- encodings, line endings, YAML features ---------------------------------- */

static const char *const reuse_yaml =
	"format: fusec-graph/1\n"
	"inputs:\n"
	"  a: {dtype: f32, shape: [64, 64]}\n"
	"  b: {dtype: f32, shape: [64, 64]}\n"
	"ops:\n"
	"  - {op: mul, in: [a, b], out: t0}\n"
	"  - {op: exp, in: [t0], out: y}\n"
	"outputs: [y]\n";

static const char *const reuse_json =
	"{\"format\": \"fusec-graph/1\",\n"
	" \"inputs\": {\"a\": {\"dtype\": \"f32\", \"shape\": [64, 64]},\n"
	"            \"b\": {\"dtype\": \"f32\", \"shape\": [64, 64]}},\n"
	" \"ops\": [{\"op\": \"mul\", \"in\": [\"a\", \"b\"], \"out\": \"t0\"},\n"
	"         {\"op\": \"exp\", \"in\": [\"t0\"], \"out\": \"y\"}],\n"
	" \"outputs\": [\"y\"]}\n";

/* text with one substitution, a prefix, and "\n" -> `nl` */
static char *variant(const char *text, const char *from, const char *to, const char *prefix,
		     const char *nl)
{
	Buf b = {0};
	buf_puts(&b, prefix);
	const char *at = from ? strstr(text, from) : NULL;
	for (const char *p = text; *p; p++) {
		if (p == at) {
			buf_puts(&b, to);
			p += strlen(from) - 1;
		} else if (*p == '\n') {
			buf_puts(&b, nl);
		} else {
			buf_putc(&b, *p);
		}
	}
	return b.data;
}

/* A UTF-8 BOM is accepted at the start and does not count in columns; CRLF line
 * endings read like LF, positions included. */
static void test_bom_and_crlf(void **state)
{
	(void)state;
	static const char *const prefixes[] = {"", "\xef\xbb\xbf"};
	static const char *const nls[] = {"\n", "\r\n"};
	for (int f = 0; f < 2; f++) {
		const char *text = f ? reuse_json : reuse_yaml;
		const char *file = f ? "r.json" : "r.yaml";
		const char *from = f ? "\"dtype\": \"f32\", \"shape\": [64, 64]},\n            \"b\""
				     : "shape: [64, 64]}\n  b";
		const char *to = f ? "\"dtype\": \"f32\", \"shape\": [64, 0]},\n            \"b\""
				   : "shape: [64, 0]}\n  b";
		const char *want = f ? "r.json:2:49: error: inputs.a.shape[1]: expected a positive integer, got 0"
				     : "r.yaml:3:31: error: inputs.a.shape[1]: expected a positive integer, got 0";
		for (int p = 0; p < 2; p++)
			for (int n = 0; n < 2; n++) {
				char *ok = variant(text, NULL, NULL, prefixes[p], nls[n]);
				Arena *a = arena_new();
				Graph *g = test_graph(a, file, ok);
				assert_int_equal(g->nops, 2);
				assert_int_equal(g->ops[1].line, f ? 5 : 7);
				assert_int_equal(g->ops[1].col, f ? 10 : 5);
				arena_free(a);
				free(ok);
				char *bad = variant(text, from, to, prefixes[p], nls[n]);
				assert_string_equal(test_graph_error(file, bad), want);
				free(bad);
			}
	}
	/* sniffing looks past the BOM */
	char *j = variant(reuse_json, NULL, NULL, "\xef\xbb\xbf", "\n");
	Arena *a = arena_new();
	test_graph(a, "noext", j);
	arena_free(a);
	free(j);
	/* a second BOM is an error that says so */
	j = variant(reuse_json, NULL, NULL, "\xef\xbb\xbf\xef\xbb\xbf", "\n");
	assert_string_equal(test_graph_error("r.json", j),
			    "r.json:1:1: error: JSON syntax error: a byte order mark (U+FEFF) may only start the text");
	free(j);
	/* UTF-16 is not UTF-8 */
	static const char utf16[] = "\xff\xfe{\0\"\0";
	Diag d;
	a = arena_new();
	assert_null(ir_read_mem(a, "u.json", utf16, sizeof utf16 - 1, FMT_AUTO, &d));
	char msg[1100];
	diag_format(&d, msg, sizeof msg);
	assert_string_equal(msg, "u.json:1:1: error: invalid UTF-8 (byte 0xff)");
	arena_free(a);
}

static void test_yaml_features(void **state)
{
	(void)state;
	static const struct {
		const char *from, *to, *msg; /* msg NULL: must read */
	} cases[] = {
		{"dtype: f32", "dtype: !!str f32", NULL},
		{"a: {dtype", "a: &x {dtype", NULL},
		{"format:", "%YAML 1.1\n---\nformat:", NULL},
		{"outputs: [y]\n", "outputs: [y]\n...\n", NULL},
		{"  a: {dtype", "  ? a\n  : {dtype", NULL},
		{"  - {op: mul", "  - {op: mul,\tin: [a, b], out: t9}\n  - {op: mul", NULL},
		{"shape: [64, 64]}", "shape: !!seq [64, 64]}", "r.yaml:3:26: error: YAML tags are not supported"},
		{"dtype: f32", "dtype: !f f32", "r.yaml:3:14: error: YAML tags are not supported"},
		{"shape: [64, 64]}", "shape: [!!str 64, 64]}",
		 "r.yaml:3:27: error: inputs.a.shape[0]: expected a positive integer, got '64'"},
		{"  b: {dtype: f32, shape", "  b: {<<: {dtype: f32}, shape",
		 "r.yaml:4:7: error: YAML merge keys ('<<') are not supported"},
		{"  b: {dtype: f32, shape: [64, 64]}", "  b: *x", "r.yaml:4:6: error: YAML aliases are not supported"},
		{"  a: {dtype", "  [a]: {dtype", "r.yaml:3:3: error: map keys must be scalars"},
		{"  a: {dtype", "\ta: {dtype",
		 "r.yaml:3:1: error: YAML syntax error: a tab where YAML expects indentation or a token "
		 "(indent with spaces) while scanning for the next token"},
		{"format: fusec", "format: `fusec",
		 "r.yaml:1:9: error: YAML syntax error: found character '`' that cannot start any token "
		 "while scanning for the next token"},
		{"format:", "%YAML 2.0\n---\nformat:", "r.yaml:1:1: error: YAML syntax error: found incompatible YAML document"},
		{"outputs: [y]\n", "outputs: [y]\n---\n{}\n",
		 "r.yaml:9:1: error: several YAML documents in one file are not supported"},
	};
	for (size_t i = 0; i < SUITE_COUNT(cases); i++) {
		char *text = variant(reuse_yaml, cases[i].from, cases[i].to, "", "\n");
		if (!strstr(text, cases[i].to))
			fail_msg("case %zu: '%s' not found", i, cases[i].from);
		if (cases[i].msg) {
			assert_string_equal(test_graph_error("r.yaml", text), cases[i].msg);
		} else {
			Arena *a = arena_new();
			Graph *g = test_graph(a, "r.yaml", text);
			assert_int_equal(g->ntensors, 4 + (strstr(text, "\tin") != NULL));
			arena_free(a);
		}
		free(text);
	}
	/* YAML limits implicit keys to 1024 characters; an explicit key has no limit */
	char key[1201];
	memset(key, 'k', 1200);
	key[1200] = 0;
	Buf b = {0};
	buf_printf(&b, "format: fusec-graph/1\ninputs:\n  %s: {dtype: f32, shape: [2]}\nops: []\noutputs: []\n", key);
	assert_string_equal(test_graph_error("k.yaml", b.data),
			    "k.yaml:3:1203: error: YAML syntax error: mapping values are not allowed in this context "
			    "(a YAML key must fit in 1024 characters; write a longer one as '? KEY')");
	buf_free(&b);
	b = (Buf){0};
	buf_printf(&b, "format: fusec-graph/1\ninputs:\n  ? %s\n  : {dtype: f32, shape: [2]}\nops: []\noutputs: [%s]\n",
		   key, key);
	Arena *a = arena_new();
	Graph *g = test_graph(a, "k.yaml", b.data);
	assert_int_equal(strlen(g->tensors[0].name), 1200);
	arena_free(a);
	buf_free(&b);
}

/* Control characters in an excerpt of the text never reach the message. */
static void test_json_excerpt_controls(void **state)
{
	(void)state;
	assert_string_equal(test_graph_error("c.json", "{\"format\": x\x1b]0;owned\x07\x1b[2J}"),
			    "c.json:1:12: error: JSON syntax error at 'x?]0;owned??[2J}'");
	assert_string_equal(test_graph_error("c.json", "{\"format\": \"fusec-graph/1\"} x\x7f"),
			    "c.json:1:29: error: JSON syntax error: unexpected 'x?' after the document");
}

const struct CMUnitTest hostile_tests[] = {
	cmocka_unit_test(test_placeholders_past_65535),
	cmocka_unit_test(test_operand_limit),
	cmocka_unit_test(test_number_spellings),
	cmocka_unit_test(test_intermediate_overflow),
	cmocka_unit_test(test_floods),
	cmocka_unit_test(test_many_syncs_and_streams),
	cmocka_unit_test(test_long_names),
	cmocka_unit_test(test_bom_and_crlf),
	cmocka_unit_test(test_yaml_features),
	cmocka_unit_test(test_json_excerpt_controls),
};
const size_t hostile_ntests = SUITE_COUNT(hostile_tests);
