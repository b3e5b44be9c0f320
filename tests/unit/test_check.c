/* test_check.c: the numeric check (host/check.c, interp_run_bounds) must catch real
 * bugs and must not flag correct results, at realistic sizes.
 *
 * Correct results: the generated kernels (the cpu backend: fusion search, codegen,
 * host JIT) against the interpreter's bounds on long reductions (K = 4096 and
 * 16384), mixed signs with cancellation, and f16/bf16 inputs.
 *
 * Faults, and where each is injected (nothing here edits a kernel's code):
 * - off-by-one index: the generated matmul kernel runs on B with its rows shifted
 *   by one (what a kernel reading b[(p + 1)·N + j] computes);
 * - dropped epilogue op: the generated kernels of the graph without its bias add
 *   (or without its relu) are compared with the reference of the whole graph;
 * - wrong accumulation dtype: the f16 (bf16) matmul recomputed on the host in this
 *   file with its running sum rounded to f16 (bf16) after every term;
 * - bf16 rounding toward zero: the generated kernel of the f32 twin of a bf16 matmul
 *   (same values), its f32 result truncated to bf16 here.
 * Each check prints its worst err/bound, the figures docs/tolerances.md quotes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../codegen/codegen.h"
#include "../../host/interp.h"
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

/* Run g's generated kernels (cpu backend) on in; out gets output 0. */
static void run_kernels(const Graph *g, const HostTensor *in, HostTensor *out)
{
	Diag d;
	SearchOptions so;
	pass_default_options(&so);
	so.no_record = true;
	Schedule *s = pass_search(g, &so);
	CgHost *h = cg_host_new(s, false, &d);
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
	int o = g->outputs[0];
	if (own[o].data) {
		*out = own[o];
		memset(&own[o], 0, sizeof own[o]);
	} else {   /* an output that aliases another tensor's buffer (codegen.h) */
		const Tensor *gt = &g->tensors[o];
		assert_int_equal(host_alloc(out, gt->dtype, gt->rank, gt->dim, &d), 0);
		memcpy(out->data, data[o], (size_t)out->n * (size_t)ir_dtype_size(gt->dtype));
	}
	for (int t = 0; t < g->ntensors; t++)
		host_free(&own[t]);
	free(own);
	free(data);
	cg_host_free(h);
	pass_free_schedule(s);
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

const struct CMUnitTest check_tests[] = {
	cmocka_unit_test(test_correct_long_reductions),
	cmocka_unit_test(test_correct_cancellation),
	cmocka_unit_test(test_fault_off_by_one),
	cmocka_unit_test(test_fault_dropped_epilogue),
	cmocka_unit_test(test_fault_accumulation_dtype),
	cmocka_unit_test(test_fault_bf16_round_to_zero),
};
const size_t check_ntests = SUITE_COUNT(check_tests);
