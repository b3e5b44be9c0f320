/* test_check.c: the numeric check (host/check.c, interp_run_bounds) must catch real
 * bugs and must not flag correct results, at realistic sizes.
 *
 * Correct results: the generated kernels (the cpu backend: fusion search, codegen,
 * host JIT) against the interpreter's bounds on long reductions (K = 4096 and
 * 16384), mixed signs with cancellation, f16/bf16 inputs, f16/bf16 MLPs whose
 * tiled matmul keeps its result in f32 for the epilogue while the reference rounds
 * it, layer norm, rms norm and softmax as the ONNX importer lowers them, and the
 * ONNX transformer fixtures (tests/onnx/models: BERT, GPT-2, Llama, ViT), each with
 * every output element bounded.
 *
 * Faults, and where each is injected (nothing here edits a kernel's code):
 * - off-by-one index: the generated matmul kernel runs on B with its rows shifted
 *   by one (what a kernel reading b[(p + 1)·N + j] computes);
 * - dropped epilogue op: the generated kernels of the graph without its bias add
 *   (or without its relu) are compared with the reference of the whole graph;
 * - wrong accumulation dtype: the f16 (bf16) matmul recomputed on the host in this
 *   file with its running sum rounded to f16 (bf16) after every term;
 * - bf16 rounding toward zero: the generated kernel of the f32 twin of a bf16 matmul
 *   (same values), its f32 result truncated to bf16 here;
 * - a wrong constant in a transformer: the generated kernels of a fixture whose
 *   attention scale (the div_scalar of the last block's attention) is off by 2^-8
 *   of itself, or whose first layer norm's epsilon is 100 times too large, against
 *   the reference of the fixture as it is;
 * - under --precision bf16 (passes/precision.c; the reference is the shadow of the
 *   graph as it is, the f32 values): the converted fixtures' kernels with the last
 *   attention scale multiplied instead of divided, and the converted MLP's kernels
 *   with its bf16 weights written one element off or without its first bias add.
 * Each check prints its worst err/bound, the figures docs/tolerances.md quotes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../codegen/codegen.h"
#include "../../host/interp.h"
#include "../../onnx/onnx.h"
#include "test.h"

/* A graph: dense [M,K] x [K,N] matmul, optionally + bias[1,N] and relu. */
static char *matmul_text(const char *dt, int64_t m, int64_t k, int64_t n, bool bias, bool relu)
{
	char *s = xmalloc(1024);
	int len = snprintf(s, 1024,
		"format: fusec-graph/1\n"
		"inputs:\n"
		"  a: {dtype: %s, shape: [%lld, %lld]}\n"
		"  b: {dtype: %s, shape: [%lld, %lld]}\n"
		"  bias: {dtype: %s, shape: [1, %lld]}\n"
		"ops:\n"
		"  - {op: matmul, in: [a, b], out: c}\n",
		dt, (long long)m, (long long)k, dt, (long long)k, (long long)n, dt, (long long)n);
	const char *last = "c";
	if (bias) {
		len += snprintf(s + len, 1024 - (size_t)len, "  - {op: add, in: [c, bias], out: cb}\n");
		last = "cb";
	} else {
		/* keep the input used, so every variant has the same inputs */
		len += snprintf(s + len, 1024 - (size_t)len,
				"  - {op: mul_scalar, in: [bias], scalar: 1, out: unused}\n");
	}
	if (relu) {
		len += snprintf(s + len, 1024 - (size_t)len, "  - {op: relu, in: [%s], out: y}\n", last);
		last = "y";
	}
	snprintf(s + len, 1024 - (size_t)len, "outputs: [%s]\n", last);
	return s;
}

typedef struct {
	Arena *arena;
	Graph *g;
	HostTensor *in;        /* g->ninputs */
} Case;

static void case_new(Case *c, const char *text, uint64_t seed)
{
	c->arena = arena_new();
	c->g = test_graph(c->arena, "check.yaml", text);
	c->in = xcalloc((size_t)c->g->ninputs + 1, sizeof *c->in);
	Diag d;
	for (int i = 0; i < c->g->ninputs; i++) {
		const Tensor *t = &c->g->tensors[c->g->inputs[i]];
		assert_int_equal(host_alloc(&c->in[i], t->dtype, t->rank, t->dim, &d), 0);
		HostRng r;
		host_rng_init(&r, seed, host_input_stream(t->name));
		host_fill_random(&c->in[i], &r, -1, 1);
	}
}

static void case_free(Case *c)
{
	for (int i = 0; i < c->g->ninputs; i++)
		host_free(&c->in[i]);
	free(c->in);
	arena_free(c->arena);
}

/* Run g's generated kernels (cpu backend) on in; out gets every output, in
 * g->outputs order. */
static void run_kernels_all(const Graph *g, const HostTensor *in, HostTensor *out)
{
	Diag d;
	SearchOptions so;
	pass_default_options(&so);
	so.no_record = true;
	Schedule *s = pass_search(g, &so);
	CgHost *h = cg_host_new(s, false, false, &d);
	assert_non_null(h);
	const bool *need = cg_host_buffers(h);
	int nt = g->ntensors ? g->ntensors : 1;
	HostTensor *own = xcalloc((size_t)nt, sizeof *own);
	void **data = xcalloc((size_t)nt, sizeof *data);
	for (int i = 0; i < g->ninputs; i++)
		data[g->inputs[i]] = in[i].data;
	for (int t = 0; t < g->ntensors; t++) {
		const Tensor *gt = &g->tensors[t];
		if (!need[t] || gt->role == ROLE_INPUT)
			continue;
		assert_int_equal(host_alloc(&own[t], gt->dtype, gt->rank, gt->dim, &d), 0);
		data[t] = own[t].data;
	}
	assert_int_equal(cg_host_run(h, data, &d), 0);
	for (int k = 0; k < g->noutputs; k++) {
		int o = g->outputs[k];
		const Tensor *gt = &g->tensors[o];
		/* a copy: an output may alias another tensor's buffer (codegen.h) */
		assert_int_equal(host_alloc(&out[k], gt->dtype, gt->rank, gt->dim, &d), 0);
		memcpy(out[k].data, data[o], (size_t)out[k].n * (size_t)ir_dtype_size(gt->dtype));
	}
	for (int t = 0; t < g->ntensors; t++)
		host_free(&own[t]);
	free(own);
	free(data);
	cg_host_free(h);
	pass_free_schedule(s);
}

/* Run g's generated kernels on in; out gets output 0. */
static void run_kernels(const Graph *g, const HostTensor *in, HostTensor *out)
{
	HostTensor *all = xcalloc((size_t)g->noutputs + 1, sizeof *all);
	run_kernels_all(g, in, all);
	*out = all[0];
	for (int k = 1; k < g->noutputs; k++)
		host_free(&all[k]);
	free(all);
}

/* Check got against c's reference and bounds (output 0); prints the figures. */
static CheckResult check_against(const Case *c, const HostTensor *got, const char *what)
{
	HostTensor *ref = xcalloc((size_t)c->g->noutputs + 1, sizeof *ref);
	HostTensor *bound = xcalloc((size_t)c->g->noutputs + 1, sizeof *bound);
	Diag d;
	assert_int_equal(interp_run_bounds(c->g, c->in, ref, bound, &d), 0);
	CheckResult r;
	check_compare(got, &ref[0], &bound[0], 0, 0, &r);
	fprintf(stderr, "[check] %-44s max_err/bound %-9.3g bad %lld of %lld%s\n", what,
		r.max_ratio, (long long)r.nbad, (long long)got->n,
		r.nunbounded ? " (some unbounded)" : "");
	for (int i = 0; i < c->g->noutputs; i++) {
		host_free(&ref[i]);
		host_free(&bound[i]);
	}
	free(ref);
	free(bound);
	return r;
}

static void expect_ok(const Case *c, const char *what)
{
	HostTensor got;
	run_kernels(c->g, c->in, &got);
	CheckResult r = check_against(c, &got, what);
	assert_true(r.ok);
	assert_int_equal(r.nunbounded, 0);
	host_free(&got);
}

/* ---- correct results pass ------------------------------------------------------ */

static void test_correct_long_reductions(void **state)
{
	(void)state;
	static const struct { const char *dt; int64_t m, k, n; } cases[] = {
		{"f32", 64, 4096, 64}, {"f32", 16, 16384, 32},
		{"f16", 64, 4096, 64}, {"bf16", 64, 4096, 64}, {"f16", 16, 16384, 16},
	};
	for (size_t i = 0; i < SUITE_COUNT(cases); i++) {
		char *text = matmul_text(cases[i].dt, cases[i].m, cases[i].k, cases[i].n, true, true);
		Case c;
		case_new(&c, text, 11);
		char what[96];
		snprintf(what, sizeof what, "correct %s matmul+bias+relu K=%lld", cases[i].dt,
			 (long long)cases[i].k);
		expect_ok(&c, what);
		case_free(&c);
		free(text);
	}
}

/* Sums whose terms cancel: each row holds r and -r(1 + 2^-12), shuffled by a
 * stride, so the sum is small against the sum of magnitudes. */
static void test_correct_cancellation(void **state)
{
	(void)state;
	static const char *const dts[] = {"f32", "f16", "bf16"};
	for (int t = 0; t < 3; t++) {
		char text[512];
		snprintf(text, sizeof text,
			 "format: fusec-graph/1\n"
			 "inputs: {x: {dtype: %s, shape: [8, 16384]}}\n"
			 "ops:\n"
			 "  - {op: sum, in: [x], axis: 1, out: s}\n"
			 "  - {op: mean, in: [x], axis: 1, out: mu}\n"
			 "  - {op: sub, in: [x, mu], out: y}\n"
			 "  - {op: mul, in: [y, y], out: y2}\n"
			 "  - {op: sum, in: [y2], axis: 1, out: v}\n"
			 "  - {op: add, in: [s, v], out: out}\n"
			 "outputs: [out]\n", dts[t]);
		Case c;
		case_new(&c, text, 5);
		HostTensor *x = &c.in[0];
		for (int64_t row = 0; row < 8; row++)
			for (int64_t i = 0; i < 8192; i++) {
				double r = host_get(x, row * 16384 + i);
				int64_t j = row * 16384 + 8192 + (i * 37) % 8192;
				host_set(x, j, -r * (1 + 0x1p-12));
			}
		char what[96];
		snprintf(what, sizeof what, "correct %s cancelling sums n=16384", dts[t]);
		expect_ok(&c, what);
		case_free(&c);
	}
}

/* An MLP block at [16,256] x [256,1024] x [1024,256] in dt: matmul, bias, then
 * gelu (mlp) or nothing, matmul (and its bias, mlp). The first matmul's tiled
 * kernel keeps its result in f32 for the bias add while the reference rounds it to
 * dt, so a quarter or so of the intermediate's elements round the other way, and
 * the second matmul sums 1024 such flips (docs/tolerances.md, "Fused
 * intermediates"). */
static void mlp_text(char *s, size_t size, const char *dt, bool mlp)
{
	snprintf(s, size,
		 "format: fusec-graph/1\n"
		 "inputs:\n"
		 "  x: {dtype: %s, shape: [16, 256]}\n"
		 "  w1: {dtype: %s, shape: [256, 1024]}\n"
		 "  b1: {dtype: %s, shape: [1, 1024]}\n"
		 "  w2: {dtype: %s, shape: [1024, 256]}\n"
		 "  b2: {dtype: %s, shape: [1, 256]}\n"
		 "ops:\n"
		 "  - {op: matmul, in: [x, w1], out: h}\n"
		 "  - {op: add, in: [h, b1], out: hb}\n"
		 "%s"
		 "  - {op: matmul, in: [%s, w2], out: o}\n"
		 "  - {op: %s, in: [o, b2], out: y}\n"
		 "outputs: [y]\n",
		 dt, dt, dt, dt, dt, mlp ? "  - {op: gelu, in: [hb], out: a}\n" : "",
		 mlp ? "a" : "hb", mlp ? "add" : "max");
}

static void test_correct_half_mlp(void **state)
{
	(void)state;
	static const struct { const char *dt; bool mlp; int seeds; } cases[] = {
		{"bf16", true, 4}, {"bf16", false, 2}, {"f16", true, 1}, {"f16", false, 1},
	};
	for (size_t i = 0; i < SUITE_COUNT(cases); i++)
		for (int seed = 0; seed < cases[i].seeds; seed++) {
			char text[1024], what[96];
			mlp_text(text, sizeof text, cases[i].dt, cases[i].mlp);
			Case c;
			case_new(&c, text, (uint64_t)seed);
			snprintf(what, sizeof what, "correct %s %s, seed %d", cases[i].dt,
				 cases[i].mlp ? "MLP (gelu)" : "matmul+add+matmul", seed);
			expect_ok(&c, what);
			case_free(&c);
		}
}

/* ---- the ONNX transformer fixtures ------------------------------------------ */

static const char *const fixtures[] = {"bert", "gpt2", "llama", "vit2"};

static Graph *load_fixture(Arena *a, const char *name)
{
	char path[256];
	snprintf(path, sizeof path, "onnx/models/%s/model.onnx", name);
	Diag d;
	Graph *g = onnx_read_file(a, path, NULL, &d);
	if (!g)
		fail_msg("%s: %s", path, d.msg);
	return g;
}

/* Inputs as a model sees them: token ids in [0, 100) (the fixtures' vocabulary),
 * an attention mask of ones, floats in [-1, 1]. */
static HostTensor *fixture_inputs(const Graph *g, uint64_t seed)
{
	HostTensor *in = xcalloc((size_t)g->ninputs + 1, sizeof *in);
	Diag d;
	for (int i = 0; i < g->ninputs; i++) {
		const Tensor *t = &g->tensors[g->inputs[i]];
		assert_int_equal(host_alloc(&in[i], t->dtype, t->rank, t->dim, &d), 0);
		if (t->data) {
			memcpy(in[i].data, t->data, (size_t)in[i].n * (size_t)ir_dtype_size(t->dtype));
			continue;
		}
		HostRng r;
		host_rng_init(&r, seed, host_input_stream(t->name));
		bool mask = strstr(t->name, "mask") != NULL;
		host_fill_random(&in[i], &r, ir_dtype_is_float(t->dtype) ? -1 : mask ? 1 : 0,
				 ir_dtype_is_float(t->dtype) ? 1 : mask ? 1 : 99);
	}
	return in;
}

static void free_tensors(HostTensor *t, int n)
{
	for (int i = 0; i < n; i++)
		host_free(&t[i]);
	free(t);
}

/* The kernels of g_run against the reference and bounds of g (same inputs); the
 * worst output's result, every output's figures printed. */
/* Each output of g compared with its reference and bound (printed); the worst
 * verdict: a FAIL, else the largest err/bound, `not checked` if any element has no
 * bound. */
static CheckResult worst_output(const Graph *g, const HostTensor *got, const HostTensor *ref,
				const HostTensor *bound, const char *what)
{
	CheckResult worst = {0};
	for (int k = 0; k < g->noutputs; k++) {
		CheckResult r;
		check_compare(&got[k], &ref[k], &bound[k], 0, 0, &r);
		fprintf(stderr, "[check] %-34s %-8s max_err/bound %-9.3g bad %lld unbounded %lld "
			"of %lld: %s\n", what, g->tensors[g->outputs[k]].name, r.max_ratio,
			(long long)r.nbad, (long long)r.nunbounded, (long long)got[k].n,
			check_status_name(r.status));
		if (k == 0 || r.status == CHECK_FAIL || (worst.status != CHECK_FAIL &&
							 r.max_ratio > worst.max_ratio))
			worst = r;
		if (r.nunbounded && worst.status == CHECK_OK)
			worst.status = CHECK_NOT_CHECKED;
	}
	return worst;
}

static CheckResult check_graphs(const Graph *g, const Graph *g_run, const HostTensor *in,
				const char *what)
{
	HostTensor *got = xcalloc((size_t)g->noutputs + 1, sizeof *got);
	HostTensor *ref = xcalloc((size_t)g->noutputs + 1, sizeof *ref);
	HostTensor *bound = xcalloc((size_t)g->noutputs + 1, sizeof *bound);
	Diag d;
	run_kernels_all(g_run, in, got);
	assert_int_equal(interp_run_bounds(g, in, ref, bound, &d), 0);
	CheckResult worst = worst_output(g, got, ref, bound, what);
	free_tensors(got, g->noutputs);
	free_tensors(ref, g->noutputs);
	free_tensors(bound, g->noutputs);
	return worst;
}

/* Layer norm, rms norm and softmax over rows of 768, as the ONNX importer lowers
 * them (mean, sub, mul, sqrt, recip; mul, mean, sqrt, div; max_dim, sub, exp, sum,
 * div), then a matmul of the softmax with a second input: every element bounded,
 * every bound kept, in f32, f16 and bf16. */
static void test_correct_norms_softmax(void **state)
{
	(void)state;
	static const char *const dts[] = {"f32", "f16", "bf16"};
	for (int t = 0; t < 3; t++) {
		char text[2048], what[64];
		snprintf(text, sizeof text,
			 "format: fusec-graph/1\n"
			 "inputs:\n"
			 "  x: {dtype: %s, shape: [64, 768]}\n"
			 "  g: {dtype: %s, shape: [1, 768]}\n"
			 "  v: {dtype: %s, shape: [768, 64]}\n"
			 "constants:\n"
			 "  one: {dtype: %s, shape: [1, 1], data: [1]}\n"
			 "ops:\n"
			 "  - {op: mean, in: [x], axis: 1, out: mu}\n"
			 "  - {op: sub, in: [x, mu], out: xc}\n"
			 "  - {op: mul, in: [xc, xc], out: sq}\n"
			 "  - {op: mean, in: [sq], axis: 1, out: var}\n"
			 "  - {op: add_scalar, in: [var], scalar: 1e-5, out: ve}\n"
			 "  - {op: sqrt, in: [ve], out: sd}\n"
			 "  - {op: recip, in: [sd], out: rs}\n"
			 "  - {op: mul, in: [xc, rs], out: xn}\n"
			 "  - {op: mul, in: [xn, g], out: ln}\n"
			 "  - {op: mul, in: [ln, ln], out: p2}\n"
			 "  - {op: mean, in: [p2], axis: 1, out: ms}\n"
			 "  - {op: add_scalar, in: [ms], scalar: 1e-6, out: mse}\n"
			 "  - {op: sqrt, in: [mse], out: rms}\n"
			 "  - {op: div, in: [one, rms], out: rr}\n"
			 "  - {op: mul, in: [ln, rr], out: rn}\n"
			 "  - {op: mul_scalar, in: [rn], scalar: 2, out: z}\n"
			 "  - {op: max_dim, in: [z], axis: 1, out: zm}\n"
			 "  - {op: sub, in: [z, zm], out: zs}\n"
			 "  - {op: exp, in: [zs], out: ze}\n"
			 "  - {op: sum, in: [ze], axis: 1, out: zsum}\n"
			 "  - {op: div, in: [ze, zsum], out: sm}\n"
			 "  - {op: matmul, in: [sm, v], out: y}\n"
			 "outputs: [rn, sm, y]\n",
			 dts[t], dts[t], dts[t], dts[t]);
		Arena *a = arena_new();
		Graph *g = test_graph(a, "norms.yaml", text);
		HostTensor *in = xcalloc((size_t)g->ninputs + 1, sizeof *in);
		Diag d;
		for (int i = 0; i < g->ninputs; i++) {
			const Tensor *gt = &g->tensors[g->inputs[i]];
			assert_int_equal(host_alloc(&in[i], gt->dtype, gt->rank, gt->dim, &d), 0);
			if (gt->data) {
				memcpy(in[i].data, gt->data,
				       (size_t)in[i].n * (size_t)ir_dtype_size(gt->dtype));
				continue;
			}
			HostRng r;
			host_rng_init(&r, 12, host_input_stream(gt->name));
			host_fill_random(&in[i], &r, -2, 2);
		}
		snprintf(what, sizeof what, "correct %s norms, softmax", dts[t]);
		CheckResult r = check_graphs(g, g, in, what);
		assert_int_equal(r.status, CHECK_OK);
		free_tensors(in, g->ninputs);
		arena_free(a);
	}
}

static void test_correct_transformers(void **state)
{
	(void)state;
	for (size_t i = 0; i < SUITE_COUNT(fixtures); i++)
		for (uint64_t seed = 0; seed < 2; seed++) {
			Arena *a = arena_new();
			Graph *g = load_fixture(a, fixtures[i]);
			HostTensor *in = fixture_inputs(g, seed);
			char what[64];
			snprintf(what, sizeof what, "correct %s f32, seed %d", fixtures[i], (int)seed);
			CheckResult r = check_graphs(g, g, in, what);
			assert_int_equal(r.status, CHECK_OK);
			free_tensors(in, g->ninputs);
			arena_free(a);
		}
}

/* ---- faults are caught --------------------------------------------------------- */

static void expect_caught(const Case *c, const HostTensor *got, const char *what)
{
	CheckResult r = check_against(c, got, what);
	assert_false(r.ok);
	assert_true(r.max_ratio > 2);
}

static void test_fault_off_by_one(void **state)
{
	(void)state;
	char *text = matmul_text("f32", 64, 4096, 64, true, true);
	Case c;
	case_new(&c, text, 3);
	/* B with rows shifted by one: the kernel reads b[p + 1] for b[p] */
	HostTensor shifted[3];
	Diag d;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(host_alloc(&shifted[i], c.in[i].dtype, c.in[i].rank, c.in[i].dim,
					    &d), 0);
		memcpy(shifted[i].data, c.in[i].data, (size_t)c.in[i].n * 4);
	}
	int64_t k = 4096, n = 64;
	for (int64_t p = 0; p < k; p++)
		memcpy((float *)shifted[1].data + p * n, (float *)c.in[1].data + (p + 1) % k * n,
		       (size_t)n * 4);
	HostTensor got;
	run_kernels(c.g, shifted, &got);
	expect_caught(&c, &got, "fault: off-by-one in K (f32, K=4096)");
	host_free(&got);
	for (int i = 0; i < 3; i++)
		host_free(&shifted[i]);
	case_free(&c);
	free(text);
}

static void test_fault_dropped_epilogue(void **state)
{
	(void)state;
	char *full = matmul_text("f32", 64, 4096, 64, true, true);
	char *no_bias = matmul_text("f32", 64, 4096, 64, false, true);
	char *no_relu = matmul_text("f32", 64, 4096, 64, true, false);
	Case c;
	case_new(&c, full, 4);
	Arena *a = arena_new();
	HostTensor got;
	run_kernels(test_graph(a, "nobias.yaml", no_bias), c.in, &got);
	expect_caught(&c, &got, "fault: dropped bias add (f32, K=4096)");
	host_free(&got);
	run_kernels(test_graph(a, "norelu.yaml", no_relu), c.in, &got);
	expect_caught(&c, &got, "fault: dropped relu (f32, K=4096)");
	host_free(&got);
	arena_free(a);
	case_free(&c);
	free(full);
	free(no_bias);
	free(no_relu);
}

/* out = a·b accumulated in dt (each product and each partial sum rounded to dt). */
static void matmul_low_acc(const Case *c, DType dt, int64_t m, int64_t k, int64_t n,
			   HostTensor *out)
{
	Diag d;
	assert_int_equal(host_alloc(out, dt, 2, (int64_t[]){m, n}, &d), 0);
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			double acc = 0;
			for (int64_t p = 0; p < k; p++) {
				double prod = host_round(dt, host_get(&c->in[0], i * k + p) *
							     host_get(&c->in[1], p * n + j));
				acc = host_round(dt, acc + prod);
			}
			host_set(out, i * n + j, acc);
		}
}

static void test_fault_accumulation_dtype(void **state)
{
	(void)state;
	static const struct { const char *dt; DType t; int64_t k; } cases[] = {
		{"f16", DT_F16, 4096}, {"bf16", DT_BF16, 4096}, {"f16", DT_F16, 16384},
	};
	for (size_t i = 0; i < SUITE_COUNT(cases); i++) {
		int64_t m = 16, n = 16;
		char *text = matmul_text(cases[i].dt, m, cases[i].k, n, false, false);
		Case c;
		case_new(&c, text, 6);
		HostTensor got;
		matmul_low_acc(&c, cases[i].t, m, cases[i].k, n, &got);
		char what[96];
		snprintf(what, sizeof what, "fault: %s matmul accumulated in %s, K=%lld",
			 cases[i].dt, cases[i].dt, (long long)cases[i].k);
		expect_caught(&c, &got, what);
		host_free(&got);
		case_free(&c);
		free(text);
	}
}

static void test_fault_bf16_round_to_zero(void **state)
{
	(void)state;
	int64_t m = 64, k = 4096, n = 64;
	char *text = matmul_text("bf16", m, k, n, true, false);
	char *twin = matmul_text("f32", m, k, n, true, false);
	Case c;
	case_new(&c, text, 8);
	Arena *a = arena_new();
	Graph *g32 = test_graph(a, "twin.yaml", twin);
	HostTensor in32[3], got32, got;
	Diag d;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(host_alloc(&in32[i], DT_F32, c.in[i].rank, c.in[i].dim, &d), 0);
		for (int64_t e = 0; e < c.in[i].n; e++)
			host_set(&in32[i], e, host_get(&c.in[i], e));
	}
	run_kernels(g32, in32, &got32);
	assert_int_equal(host_alloc(&got, DT_BF16, 2, (int64_t[]){m, n}, &d), 0);
	for (int64_t e = 0; e < got.n; e++) {
		float f = ((float *)got32.data)[e];
		uint32_t bits;
		memcpy(&bits, &f, 4);
		((uint16_t *)got.data)[e] = (uint16_t)(bits >> 16);   /* toward zero */
	}
	expect_caught(&c, &got, "fault: bf16 rounded toward zero (K=4096)");
	/* the same f32 results rounded to nearest even pass */
	for (int64_t e = 0; e < got.n; e++)
		host_set(&got, e, ((float *)got32.data)[e]);
	CheckResult r = check_against(&c, &got, "correct: the same, rounded to nearest");
	assert_true(r.ok);
	host_free(&got);
	host_free(&got32);
	for (int i = 0; i < 3; i++)
		host_free(&in32[i]);
	arena_free(a);
	case_free(&c);
	free(text);
	free(twin);
}

/* The last op of kind k whose scalar passes keep (NULL: any), in a's copy. */
static Attrs *find_scalar_op(Graph *g, OpKind k, bool last, bool (*keep)(double))
{
	Attrs *found = NULL;
	for (int i = 0; i < g->nops; i++) {
		const Op *op = &g->ops[i];
		if (op->kind != k || !op->attr || (keep && !keep(op->attr->scalar)))
			continue;
		found = (Attrs *)op->attr;
		if (!last)
			break;
	}
	if (!found)
		fail_msg("no %s op to perturb", ir_ops[k].file);
	return found;
}

static bool is_attention_scale(double s)
{
	return fabs(s - sqrt(8.0)) < 1e-6;   /* the fixtures' heads are 8 wide */
}

static bool is_epsilon(double s)
{
	return s > 0 && s < 1e-4;
}

static void test_fault_transformers(void **state)
{
	(void)state;
	for (size_t i = 0; i < SUITE_COUNT(fixtures); i++)
		for (int fault = 0; fault < 2; fault++) {
			Arena *a = arena_new();
			Graph *g = load_fixture(a, fixtures[i]);
			Graph *bad = load_fixture(a, fixtures[i]);
			HostTensor *in = fixture_inputs(g, 1);
			char what[64];
			if (fault == 0) {
				find_scalar_op(bad, OP_DIV_SCALAR, true, is_attention_scale)->scalar *=
					1 + 0x1p-8;
				snprintf(what, sizeof what, "fault: %s attention scale", fixtures[i]);
			} else {
				/* llama's rms norm adds its epsilon with add_scalar too */
				find_scalar_op(bad, OP_ADD_SCALAR, false, is_epsilon)->scalar *= 100;
				snprintf(what, sizeof what, "fault: %s norm epsilon x100", fixtures[i]);
			}
			CheckResult r = check_graphs(g, bad, in, what);
			assert_int_equal(r.status, CHECK_FAIL);
			free_tensors(in, g->ninputs);
			arena_free(a);
		}
}

/* ---- reduced precision (--precision, passes/precision.c) ---------------------- */

/* The kernels of the converted graph g_run (inputs in) against the reference and
 * bounds of info's shadow (docs/tolerances.md, "Reduced precision"): every output,
 * as `fusec run --check --precision` compares them. The shadow's inputs are in
 * with the converted constants' f32 data. */
static CheckResult check_converted(const Graph *g_run, const PrecisionInfo *info,
				   const HostTensor *in, const char *what)
{
	const Graph *s = info->shadow;
	HostTensor *sin = xcalloc((size_t)s->ninputs + 1, sizeof *sin);
	Diag d;
	for (int i = 0; i < s->ninputs; i++) {
		const Tensor *t = &s->tensors[s->inputs[i]];
		assert_int_equal(host_alloc(&sin[i], t->dtype, t->rank, t->dim, &d), 0);
		memcpy(sin[i].data, t->data ? t->data : in[i].data,
		       (size_t)sin[i].n * (size_t)ir_dtype_size(t->dtype));
	}
	HostTensor *got = xcalloc((size_t)s->noutputs + 1, sizeof *got);
	HostTensor *ref = xcalloc((size_t)s->noutputs + 1, sizeof *ref);
	HostTensor *bound = xcalloc((size_t)s->noutputs + 1, sizeof *bound);
	run_kernels_all(g_run, in, got);
	assert_int_equal(interp_run_bounds_stored(s, info->store, sin, ref, bound, false, &d), 0);
	CheckResult worst = worst_output(s, got, ref, bound, what);
	free_tensors(sin, s->ninputs);
	free_tensors(got, s->noutputs);
	free_tensors(ref, s->noutputs);
	free_tensors(bound, s->noutputs);
	return worst;
}

/* The fixtures converted to bf16 and f16 pass against the f32 reference with every
 * element bounded, and the shadow computes exactly the original graph's values. */
static void test_correct_precision(void **state)
{
	(void)state;
	for (size_t i = 0; i < SUITE_COUNT(fixtures); i++)
		for (int h = 0; h < 2; h++) {
			Arena *a = arena_new();
			Graph *orig = load_fixture(a, fixtures[i]);
			Graph *g = load_fixture(a, fixtures[i]);
			HostTensor *in_orig = fixture_inputs(orig, 1);
			PrecisionOptions o = {h ? DT_F16 : DT_BF16, NULL};
			PrecisionInfo info;
			Diag d;
			assert_int_equal(pass_precision(g, &o, &info, &d), 0);
			HostTensor *in = fixture_inputs(g, 1);   /* the converted constants */
			assert_int_equal(g->ninputs, orig->ninputs);
			char what[64];
			snprintf(what, sizeof what, "correct %s %s", fixtures[i], h ? "f16" : "bf16");
			CheckResult r = check_converted(g, &info, in, what);
			assert_int_equal(r.status, CHECK_OK);
			/* the shadow's values are the original graph's, to the bit */
			HostTensor *want = xcalloc((size_t)orig->noutputs + 1, sizeof *want);
			HostTensor *shad = xcalloc((size_t)orig->noutputs + 1, sizeof *shad);
			assert_int_equal(interp_run(orig, in_orig, want, &d), 0);
			assert_int_equal(interp_run(info.shadow, in_orig, shad, &d), 0);
			for (int k = 0; k < orig->noutputs; k++) {
				assert_int_equal(want[k].n, shad[k].n);
				assert_memory_equal(want[k].data, shad[k].data,
						    (size_t)want[k].n * (size_t)ir_dtype_size(want[k].dtype));
			}
			free_tensors(in_orig, orig->ninputs);
			free_tensors(want, orig->noutputs);
			free_tensors(shad, orig->noutputs);
			free_tensors(in, g->ninputs);
			arena_free(a);
		}
}

/* Every constant of g converted to bf16 written one element off (element k holds
 * element k + 1, rounded to nearest even): a conversion that misplaces the bytes
 * it writes. */
static void shift_weights(Graph *g, const PrecisionInfo *info)
{
	for (int t = 0; t < g->ntensors; t++) {
		Tensor *x = &g->tensors[t];
		const Tensor *sx = &info->shadow->tensors[t];
		if (!x->data || x->dtype == sx->dtype || x->dtype != DT_BF16)
			continue;
		int64_t n = 1;
		for (int k = 0; k < x->rank; k++)
			n *= x->dim[k];
		uint16_t *b = arena_alloc(g->arena, (size_t)n * 2);
		const uint32_t *f = sx->data;
		for (int64_t k = 0; k < n; k++) {
			uint32_t u = f[k + 1 < n ? k + 1 : k];
			b[k] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
		}
		x->data = b;
	}
}

/* Case c of the graph text (inputs x, w1, b1, w2, b2) with every input but x made
 * a constant, converted to bf16; c->in holds what the converted graph reads. */
static void mlp_converted(Case *c, const char *text, PrecisionInfo *info)
{
	case_new(c, text, 0);
	for (int k = 0; k < c->g->ninputs; k++) {
		Tensor *t = &c->g->tensors[c->g->inputs[k]];
		if (strcmp(t->name, "x")) {
			t->data = arena_alloc(c->arena, (size_t)c->in[k].n * 4);
			memcpy((void *)t->data, c->in[k].data, (size_t)c->in[k].n * 4);
		}
	}
	PrecisionOptions o = {DT_BF16, NULL};
	Diag d;
	assert_int_equal(pass_precision(c->g, &o, info, &d), 0);
	for (int k = 0; k < c->g->ninputs; k++) {
		const Tensor *t = &c->g->tensors[c->g->inputs[k]];
		if (t->data && t->dtype != c->in[k].dtype) {
			HostTensor h;
			assert_int_equal(host_alloc(&h, t->dtype, t->rank, t->dim, &d), 0);
			memcpy(h.data, t->data, (size_t)h.n * 2);
			host_free(&c->in[k]);
			c->in[k] = h;
		}
	}
}

/* Faults in a converted graph are caught against the f32 reference: the last
 * attention scale multiplied instead of divided (BERT, GPT-2, Llama), and in the
 * bf16 MLP with constant weights, its weights written one element off and its
 * first bias add dropped. */
static void test_fault_precision(void **state)
{
	(void)state;
	/* ViT's scale fault stays within its bf16 bounds (err/bound 0.042), and a
	 * norm's epsilon made 1 within every fixture's (at most 0.65):
	 * docs/tolerances.md, "Reduced precision" */
	for (size_t i = 0; i < 3; i++) {
		Arena *a = arena_new();
		/* the reference: the shadow of the graph as it is (bad's shares its
		 * ops' attributes) */
		Graph *g = load_fixture(a, fixtures[i]);
		Graph *bad = load_fixture(a, fixtures[i]);
		PrecisionOptions o = {DT_BF16, NULL};
		PrecisionInfo info, info_bad;
		Diag d;
		assert_int_equal(pass_precision(g, &o, &info, &d), 0);
		assert_int_equal(pass_precision(bad, &o, &info_bad, &d), 0);
		HostTensor *in = fixture_inputs(bad, 1);
		char what[64];
		find_scalar_op(bad, OP_DIV_SCALAR, true, is_attention_scale)->scalar /= 8;
		snprintf(what, sizeof what, "fault: %s bf16 scale multiplied", fixtures[i]);
		CheckResult r = check_converted(bad, &info, in, what);
		assert_int_equal(r.status, CHECK_FAIL);
		free_tensors(in, bad->ninputs);
		arena_free(a);
	}
	/* the MLP with constant weights: as converted, with its weights one element
	 * off, without its first bias add */
	for (int fault = 0; fault < 3; fault++) {
		char text[1024], bad[1024];
		mlp_text(text, sizeof text, "f32", true);
		snprintf(bad, sizeof bad, "%s", text);
		if (fault == 2) {
			char *p = strstr(bad, "  - {op: add, in: [h, b1], out: hb}\n");
			assert_non_null(p);
			char tail[1024];
			snprintf(tail, sizeof tail, "%s", p + strlen("  - {op: add, in: [h, b1], out: hb}\n"));
			snprintf(p, sizeof bad - (size_t)(p - bad),
				 "  - {op: mul_scalar, in: [b1], scalar: 1, out: unused}\n"
				 "  - {op: mul_scalar, in: [h], scalar: 1, out: hb}\n%s", tail);
		}
		Case c, k;
		PrecisionInfo info, info_k;
		mlp_converted(&c, text, &info);
		mlp_converted(&k, bad, &info_k);
		if (fault == 1)
			shift_weights(k.g, &info_k);
		for (int n = 0; n < k.g->ninputs; n++)
			if (k.g->tensors[k.g->inputs[n]].data)
				memcpy(k.in[n].data, k.g->tensors[k.g->inputs[n]].data,
				       (size_t)k.in[n].n * 2);
		static const char *const what[] = {"correct bf16 MLP, constant weights",
			"fault: bf16 MLP weights one element off", "fault: bf16 MLP bias dropped"};
		CheckResult r = check_converted(k.g, &info, k.in, what[fault]);
		assert_int_equal(r.status, fault ? CHECK_FAIL : CHECK_OK);
		case_free(&c);
		case_free(&k);
	}
}

/* An output is ok only when every element was held to a finite bound: one
 * unbounded element makes it `not checked`, one element over its bound `FAIL`. */
static void test_check_status(void **state)
{
	(void)state;
	HostTensor got, want, bound;
	Diag d;
	int64_t dim[1] = {4};
	assert_int_equal(host_alloc(&got, DT_F32, 1, dim, &d), 0);
	assert_int_equal(host_alloc(&want, DT_F32, 1, dim, &d), 0);
	assert_int_equal(host_alloc(&bound, DT_F64, 1, dim, &d), 0);
	for (int64_t k = 0; k < 4; k++) {
		host_set(&got, k, 1.0 + 0x1p-20);
		host_set(&want, k, 1.0);
		host_set(&bound, k, 0x1p-19);
	}
	CheckResult r;
	check_compare(&got, &want, &bound, 0, 0, &r);
	assert_int_equal(r.status, CHECK_OK);
	assert_string_equal(check_status_name(r.status), "ok");
	host_set(&bound, 2, INFINITY);
	check_compare(&got, &want, &bound, 0, 0, &r);
	assert_int_equal(r.status, CHECK_NOT_CHECKED);
	assert_true(r.ok);   /* nothing over its bound */
	assert_int_equal(r.nunbounded, 1);
	assert_string_equal(check_status_name(r.status), "not checked");
	host_set(&bound, 1, 0x1p-22);
	check_compare(&got, &want, &bound, 0, 0, &r);
	assert_int_equal(r.status, CHECK_FAIL);
	assert_string_equal(check_status_name(r.status), "FAIL");
	/* a flat tolerance is finite: every element checked */
	check_compare(&got, &want, NULL, 1e-3, 0, &r);
	assert_int_equal(r.status, CHECK_OK);
	host_free(&got);
	host_free(&want);
	host_free(&bound);
}

const struct CMUnitTest check_tests[] = {
	cmocka_unit_test(test_check_status),
	cmocka_unit_test(test_correct_half_mlp),
	cmocka_unit_test(test_correct_norms_softmax),
	cmocka_unit_test(test_correct_transformers),
	cmocka_unit_test(test_fault_transformers),
	cmocka_unit_test(test_correct_long_reductions),
	cmocka_unit_test(test_correct_cancellation),
	cmocka_unit_test(test_fault_off_by_one),
	cmocka_unit_test(test_fault_dropped_epilogue),
	cmocka_unit_test(test_fault_accumulation_dtype),
	cmocka_unit_test(test_fault_bf16_round_to_zero),
	cmocka_unit_test(test_correct_precision),
	cmocka_unit_test(test_fault_precision),
};
const size_t check_ntests = SUITE_COUNT(check_tests);
