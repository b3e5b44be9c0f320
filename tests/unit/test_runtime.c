/* test_runtime.c: the CUDA runtime's host side: plan validation and its messages,
 * kernel-argument packing, bytes that must move, medians, driver error text, and
 * the failure without a driver library; then CUDA graphs against the stand-in
 * driver beside the unit binary (build/tests/fakecuda.so, which emulates
 * tests/runtime/axpb's kernels and records what it runs): a graph replays the
 * direct launches, a rebound buffer brings a new capture, a failed capture falls
 * back, and nothing leaks. (fusec-run on the stand-in: tests/cli/t_runtime.sh,
 * t_graph.sh.) Runs from tests/. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "../../runtime/rt_driver.h"

/* any 64 hex digits: these plans are parsed, their PTX never read */
#define SHA "6c409d3742a15491674570b069529ae9ecb2a25ce42955ff2c78cb2b093de54f"

static const char base_plan[] =
	"{\"format\": \"fusec-plan/1\", \"compiler\": \"fusec 0.1.0\", \"arch\": \"sm_90\",\n"
	" \"ptx\": \"g.ptx\", \"plans\": [{\"id\": 0}],\n"
	" \"ptx_sha256\": \"" SHA "\",\n"
	" \"tensors\": [\n"
	"  {\"name\": \"a\", \"dtype\": \"f32\", \"shape\": [64, 64], \"role\": \"input\", \"buffer\": true},\n"
	"  {\"name\": \"s\", \"dtype\": \"i64\", \"shape\": [], \"role\": \"input\", \"buffer\": true},\n"
	"  {\"name\": \"t2\", \"dtype\": \"f32\", \"shape\": [64, 64], \"role\": \"intermediate\", \"buffer\": false},\n"
	"  {\"name\": \"y\", \"dtype\": \"f16\", \"shape\": [64, 64], \"role\": \"output\", \"buffer\": true}],\n"
	" \"kernels\": [\n"
	"  {\"name\": \"k0\", \"entry\": \"fusec_k0\", \"params\": [\"ptr\", \"ptr\", \"f64\", \"i64\", \"ptr\", \"i32\", \"f32\", \"ptr\"],\n"
	"   \"block\": [256, 1, 1], \"shared_bytes\": 0, \"score\": 630}],\n"
	" \"steps\": [\n"
	"  {\"segment\": 0, \"plan\": 0, \"mode\": \"explored\", \"launches\": [\n"
	"   {\"kernel\": \"k0\", \"grid\": [16, 1, 1], \"shared_bytes\": 128,\n"
	"    \"args\": [{\"tensor\": \"a\"}, {\"tensor\": \"s\"}, {\"f64\": 2.5}, {\"i64\": 4096},\n"
	"             {\"tensor\": \"y\"}, {\"i32\": -7}, {\"f32\": \"-inf\"}, {\"tensor\": \"a\"}]}]}]}\n";

/* Parse base_plan with the first occurrence of `from` replaced by `to`; return the
 * formatted error, or "(ok)". */
static const char *mutated(const char *from, const char *to)
{
	static char msg[1200];
	const char *at = strstr(base_plan, from);
	assert_non_null(at);
	Buf b = {0};
	buf_write(&b, base_plan, (size_t)(at - base_plan));
	buf_puts(&b, to);
	buf_puts(&b, at + strlen(from));
	Diag d;
	RtPlan *p = rt_plan_parse("dir/g.plan.json", b.data, b.len, &d);
	if (p)
		snprintf(msg, sizeof msg, "(ok)");
	else
		diag_format(&d, msg, sizeof msg);
	rt_plan_free(p);
	buf_free(&b);
	return msg;
}

static void test_plan_input_also_output(void **state)
{
	(void)state;
	assert_string_equal(mutated("\"role\": \"input\", \"buffer\"",
				    "\"role\": \"input\", \"output\": true, \"buffer\""), "(ok)");
	assert_string_equal(mutated("\"role\": \"input\", \"buffer\"",
				    "\"role\": \"input\", \"output\": 1, \"buffer\""),
			    "dir/g.plan.json: error: tensors[0].output: expected a boolean, got a number");
	Diag d;
	const char *at = strstr(base_plan, "\"buffer\"");
	Buf b = {0};
	buf_write(&b, base_plan, (size_t)(at - base_plan));
	buf_puts(&b, "\"output\": true, ");
	buf_puts(&b, at);
	RtPlan *p = rt_plan_parse("dir/g.plan.json", b.data, b.len, &d);
	assert_non_null(p);
	assert_int_equal(p->tensors[0].role, ROLE_INPUT);
	assert_true(p->tensors[0].output);
	assert_int_equal(rt_plan_bytes_out(p), 64 * 64 * 2 + 64 * 64 * 4);
	rt_plan_free(p);
	buf_free(&b);
}

/* {"scratch": N} binds a ptr parameter to the run's zeroed workspace */
static void test_plan_scratch(void **state)
{
	(void)state;
	const char *from = "{\"tensor\": \"a\"}]}]}]}";
	const char *at = strstr(base_plan, from);
	assert_non_null(at);
	Buf b = {0};
	buf_write(&b, base_plan, (size_t)(at - base_plan));
	buf_puts(&b, "{\"scratch\": 4096}]}]}]}\n");
	Diag d;
	RtPlan *p = rt_plan_parse("dir/g.plan.json", b.data, b.len, &d);
	assert_non_null(p);
	assert_int_equal(p->launches[0].args[7].tensor, p->ntensors);
	assert_int_equal(p->launches[0].args[7].i, 4096);
	assert_int_equal(p->scratch_bytes, 4096);
	rt_plan_free(p);
	buf_free(&b);
	assert_string_equal(mutated("{\"tensor\": \"a\"}]}]}]}", "{\"scratch\": 0}]}]}]}"),
			    "dir/g.plan.json: error: steps[0].launches[0].args[7].scratch: 0 is out of range "
			    "[1, 4611686018427387903]");
	assert_string_equal(mutated("{\"f64\": 2.5}", "{\"scratch\": 8}"),
			    "dir/g.plan.json: error: steps[0].launches[0].args[2]: expected {\"f64\": …} for "
			    "parameter 2 (f64) of kernel 'k0', got {\"scratch\": …}");
}

/* base_plan with variants for sm_90a and sm_80 (docs/plan-format.md, "Several
 * arches"): each its own PTX, kernel (another block, a scratch parameter for
 * sm_90a) and launch. `from` → `to` as mutated() does, inside the variants. */
static const char variants_json[] =
	", \"variants\": [\n"
	" {\"arch\": \"sm_90a\", \"ptx\": \"g.sm_90a.ptx\", \"ptx_sha256\": \"" SHA "\",\n"
	"  \"kernels\": [{\"name\": \"k0h\", \"entry\": \"fusec_k0h\", \"params\": [\"ptr\", \"ptr\", "
	"\"f64\", \"i64\", \"ptr\", \"i32\", \"f32\", \"ptr\", \"ptr\"], \"block\": [128, 1, 1]}],\n"
	"  \"launches\": [{\"kernel\": \"k0h\", \"grid\": [32, 1, 1],\n"
	"    \"args\": [{\"tensor\": \"a\"}, {\"tensor\": \"s\"}, {\"f64\": 2.5}, {\"i64\": 4096},\n"
	"             {\"tensor\": \"y\"}, {\"i32\": -7}, {\"f32\": 1}, {\"tensor\": \"a\"}, "
	"{\"scratch\": 2048}]}]},\n"
	" {\"arch\": \"sm_80\", \"ptx\": \"g.sm_80.ptx\", \"ptx_sha256\": \"" SHA "\",\n"
	"  \"kernels\": [{\"name\": \"k0\", \"entry\": \"fusec_k0\", \"params\": [\"ptr\", \"ptr\", "
	"\"f64\", \"i64\", \"ptr\", \"i32\", \"f32\", \"ptr\"], \"block\": [64, 1, 1]}],\n"
	"  \"launches\": [{\"kernel\": \"k0\", \"grid\": [64, 1, 1],\n"
	"    \"args\": [{\"tensor\": \"a\"}, {\"tensor\": \"s\"}, {\"f64\": 2.5}, {\"i64\": 4096},\n"
	"             {\"tensor\": \"y\"}, {\"i32\": -7}, {\"f32\": 1}, {\"tensor\": \"a\"}]}]}]}\n";

static RtPlan *variants_plan(const char *from, const char *to, char *msg, size_t n)
{
	Buf v = {0}, b = {0};
	buf_puts(&v, variants_json);
	if (from) {
		const char *at = strstr(v.data, from);
		assert_non_null(at);
		Buf w = {0};
		buf_write(&w, v.data, (size_t)(at - v.data));
		buf_puts(&w, to);
		buf_puts(&w, at + strlen(from));
		buf_free(&v);
		v = w;
	}
	size_t end = strlen(base_plan) - 2;   /* before the last "}\n" */
	assert_string_equal(base_plan + end, "}\n");
	buf_write(&b, base_plan, end);
	buf_puts(&b, v.data);
	Diag d;
	RtPlan *p = rt_plan_parse("dir/g.plan.json", b.data, b.len, &d);
	if (p)
		snprintf(msg, n, "(ok)");
	else
		diag_format(&d, msg, n);
	buf_free(&v);
	buf_free(&b);
	return p;
}

static const char *variants_error(const char *from, const char *to)
{
	static char msg[1200];
	RtPlan *p = variants_plan(from, to, msg, sizeof msg);
	rt_plan_free(p);
	return msg;
}

static void test_plan_variants(void **state)
{
	(void)state;
	char msg[1200];
	RtPlan *p = variants_plan(NULL, NULL, msg, sizeof msg);
	assert_string_equal(msg, "(ok)");
	assert_int_equal(p->nvariants, 3);
	/* the top level after loading */
	assert_string_equal(p->arch, "sm_90");
	assert_string_equal(p->ptx_path, "dir/g.ptx");
	assert_string_equal(p->kernels[0].name, "k0");
	assert_int_equal(p->scratch_bytes, 0);
	/* each variant's own kernels, launches and scratch; the steps are shared */
	const RtVariant *h = &p->variants[1];
	assert_string_equal(h->arch, "sm_90a");
	assert_string_equal(h->ptx_path, "dir/g.sm_90a.ptx");
	assert_int_equal(h->nkernels, 1);
	assert_int_equal(h->kernels[0].nparams, 9);
	assert_int_equal(h->nlaunches, 1);
	assert_int_equal(h->launches[0].grid[0], 32);
	assert_int_equal(h->launches[0].block[0], 128);
	assert_int_equal(h->launches[0].step, 0);
	assert_int_equal(h->scratch_bytes, 2048);
	assert_int_equal(p->variants[2].launches[0].block[0], 64);

	/* the pick: the highest arch the device runs; sm_90a on 9.0 only */
	assert_int_equal(rt_plan_pick(p, 9, 0), 1);    /* sm_90a over sm_90 */
	assert_int_equal(rt_plan_pick(p, 10, 0), 0);   /* sm_90, not sm_90a */
	assert_int_equal(rt_plan_pick(p, 12, 0), 0);
	assert_int_equal(rt_plan_pick(p, 8, 9), 2);    /* sm_80 */
	assert_int_equal(rt_plan_pick(p, 8, 0), 2);
	assert_int_equal(rt_plan_pick(p, 7, 5), -1);
	RtPlan view = *p;
	rt_plan_use(&view, 1);
	assert_string_equal(view.arch, "sm_90a");
	assert_string_equal(view.kernels[0].entry, "fusec_k0h");
	assert_int_equal(view.launches[0].grid[0], 32);
	assert_int_equal(view.scratch_bytes, 2048);
	assert_int_equal(view.ntensors, p->ntensors);
	assert_string_equal(p->arch, "sm_90");   /* the plan itself keeps its first */
	rt_plan_free(p);

	/* sm_80 and sm_90a (the top level made sm_80, the variant for sm_80 cut): 9.0
	 * takes sm_90a, 8.9 and 10.0 sm_80 */
	Buf b = {0};
	buf_write(&b, base_plan, strlen(base_plan) - 2);
	const char *cut = strstr(variants_json, ",\n {\"arch\": \"sm_80\"");
	buf_write(&b, variants_json, (size_t)(cut - variants_json));
	buf_puts(&b, "]}\n");
	char *top = strstr(b.data, "\"arch\": \"sm_90\"");
	memcpy(top, "\"arch\": \"sm_80\"", 15);
	Diag d;
	p = rt_plan_parse("dir/g.plan.json", b.data, b.len, &d);
	assert_non_null(p);
	assert_int_equal(p->nvariants, 2);
	assert_int_equal(rt_plan_pick(p, 9, 0), 1);
	assert_int_equal(rt_plan_pick(p, 8, 9), 0);
	assert_int_equal(rt_plan_pick(p, 10, 0), 0);
	rt_plan_free(p);
	buf_free(&b);

	/* one arch: sm_90a runs on 9.0 alone; a plan without an arch anywhere */
	b = (Buf){0};
	buf_puts(&b, base_plan);
	top = strstr(b.data, "\"arch\": \"sm_90\",");
	memcpy(top, "\"arch\":\"sm_90a\",", 16);
	p = rt_plan_parse("dir/g.plan.json", b.data, b.len, &d);
	assert_non_null(p);
	assert_int_equal(p->nvariants, 1);
	assert_int_equal(rt_plan_pick(p, 9, 0), 0);
	assert_int_equal(rt_plan_pick(p, 8, 0), -1);
	assert_int_equal(rt_plan_pick(p, 10, 0), -1);
	rt_plan_free(p);
	memcpy(top, "\"wrch\":\"sm_90a\",", 16);
	p = rt_plan_parse("dir/g.plan.json", b.data, b.len, &d);
	assert_non_null(p);
	assert_int_equal(rt_plan_pick(p, 7, 0), 0);
	rt_plan_free(p);
	buf_free(&b);
}

static void test_plan_variant_errors(void **state)
{
	(void)state;
	assert_string_equal(variants_error("\"grid\": [64, 1, 1],", "\"grid\": [64, 1, 1]},"
					   "{\"kernel\": \"k0\", \"grid\": [1, 1, 1],"),
			    "dir/g.plan.json: error: variants[1].launches: 2 launches, but the plan's "
			    "steps have 1");
	assert_string_equal(variants_error("\"arch\": \"sm_80\"", "\"arch\": \"sm_90a\""),
			    "dir/g.plan.json: error: variants[1].arch: the plan has a variant for "
			    "sm_90a already");
	assert_string_equal(variants_error("\"arch\": \"sm_80\"", "\"arch\": \"sm_90\""),
			    "dir/g.plan.json: error: variants[1].arch: the plan has a variant for "
			    "sm_90 already");
	assert_string_equal(variants_error("\"arch\": \"sm_80\"", "\"arch\": \"turing\""),
			    "dir/g.plan.json: error: variants[1].arch: \"turing\" is not an arch "
			    "(sm_80, sm_90a, ...)");
	assert_string_equal(variants_error("\"arch\": \"sm_80\", ", ""),
			    "dir/g.plan.json: error: variants[1]: missing key \"arch\"");
	assert_string_equal(variants_error("\"ptx\": \"g.sm_80.ptx\"", "\"ptx\": \"g.ptx\""),
			    "dir/g.plan.json: error: variants[1].ptx: another variant's PTX file has "
			    "this name");
	assert_string_equal(variants_error("\"ptx\": \"g.sm_80.ptx\"", "\"ptx\": \"../g.ptx\""),
			    "dir/g.plan.json: error: variants[1].ptx: \"../g.ptx\" is not a plain file "
			    "name: the PTX file must lie beside the plan");
	assert_string_equal(variants_error("\"ptx_sha256\": \"" SHA "\",\n  \"kernels\": [{\"name\": \"k0\"",
					   "\"kernels\": [{\"name\": \"k0\""),
			    "dir/g.plan.json: error: variants[1]: missing key \"ptx_sha256\": a plan must "
			    "record the SHA-256 of its PTX file, so that no other file is used in its "
			    "place (fusec compile writes it)");
	assert_string_equal(variants_error("\"ptx_sha256\": \"6c", "\"ptx_sha256\": \"6C"),
			    "dir/g.plan.json: error: variants[0].ptx_sha256: expected 64 lowercase hex "
			    "digits");
	/* a variant's launch names its own kernels, not the top level's */
	assert_string_equal(variants_error("\"kernel\": \"k0h\"", "\"kernel\": \"k0\""),
			    "dir/g.plan.json: error: variants[0].launches[0].kernel: unknown kernel 'k0'");
	assert_string_equal(variants_error("{\"scratch\": 2048}", "{\"tensor\": \"t2\"}"),
			    "dir/g.plan.json: error: variants[0].launches[0].args[8].tensor: tensor 't2' "
			    "is bound to a pointer but has no buffer");
	assert_string_equal(variants_error("\"params\": [\"ptr\", \"ptr\", \"f64\", \"i64\", \"ptr\", "
					   "\"i32\", \"f32\", \"ptr\"], \"block\": [64",
					   "\"params\": [\"ptr\"], \"block\": [64"),
			    "dir/g.plan.json: error: variants[1].launches[0].args: 8 arguments for the "
			    "1 parameters of kernel 'k0'");
	assert_string_equal(variants_error("\"kernels\": [{\"name\": \"k0h\"",
					   "\"kernels\": [{\"name\": \"k0\", \"entry\": \"x\", "
					   "\"params\": []}, {\"name\": \"k0\""),
			    "dir/g.plan.json: error: variants[0].kernels[1]: kernel 'k0' is listed twice "
			    "(also variants[0].kernels[0])");
	assert_string_equal(variants_error(", \"variants\": [", ", \"variants\": [7, "),
			    "dir/g.plan.json: error: variants[0]: expected an object, got a number");
	assert_string_equal(mutated("\"ptx\": \"g.ptx\",", "\"ptx\": \"g.ptx\", \"variants\": 3,"),
			    "dir/g.plan.json: error: variants: expected an array, got a number");
	assert_string_equal(mutated("\"ptx\": \"g.ptx\",", "\"ptx\": \"g.ptx\", \"variants\": [],"),
			    "(ok)");
	/* the top level names its arch when there are variants */
	char msg[1200];
	Buf b = {0};
	buf_write(&b, base_plan, strlen(base_plan) - 2);
	buf_puts(&b, variants_json);
	char *top = strstr(b.data, "\"arch\": \"sm_90\",");
	memcpy(top, "\"xrch\"", 6);
	Diag d;
	RtPlan *p = rt_plan_parse("dir/g.plan.json", b.data, b.len, &d);
	assert_null(p);
	diag_format(&d, msg, sizeof msg);
	assert_string_equal(msg, "dir/g.plan.json: error: missing key \"arch\": a plan with variants "
			    "names the arch of its top level");
	buf_free(&b);
}

static void test_plan_good(void **state)
{
	(void)state;
	Diag d;
	RtPlan *p = rt_plan_parse("dir/g.plan.json", base_plan, strlen(base_plan), &d);
	assert_non_null(p);
	assert_string_equal(p->ptx_path, "dir/g.ptx");
	assert_string_equal(p->arch, "sm_90");
	assert_int_equal(p->ntensors, 4);
	assert_int_equal(p->tensors[1].rank, 0);
	assert_int_equal(p->tensors[1].n, 1);
	assert_int_equal(p->tensors[1].bytes, 8);
	assert_int_equal(p->tensors[3].dtype, DT_F16);
	assert_int_equal(p->tensors[3].bytes, 64 * 64 * 2);
	assert_int_equal(p->tensors[3].role, ROLE_OUTPUT);
	assert_true(p->tensors[3].output);
	assert_false(p->tensors[0].output);
	assert_false(p->tensors[2].buffer);
	assert_int_equal(p->nkernels, 1);
	assert_string_equal(p->kernels[0].entry, "fusec_k0");
	assert_int_equal(p->kernels[0].nparams, 8);
	assert_int_equal(p->nsteps, 1);
	assert_string_equal(p->steps[0].mode, "explored");
	assert_int_equal(p->nlaunches, 1);
	const RtLaunch *l = &p->launches[0];
	assert_int_equal(l->grid[0], 16);
	assert_int_equal(l->block[0], 256);     /* from the kernel */
	assert_int_equal(l->shared_bytes, 128);
	assert_int_equal(l->args[0].tensor, 0);
	assert_int_equal(l->args[4].tensor, 3);
	assert_int_equal(l->args[3].i, 4096);
	assert_int_equal(l->args[5].i, -7);
	assert_true(l->args[2].f == 2.5);
	assert_true(isinf(l->args[6].f) && l->args[6].f < 0);
	assert_int_equal(rt_plan_find_tensor(p, "y"), 3);
	assert_int_equal(rt_plan_find_tensor(p, "zz"), -1);
	rt_plan_free(p);
}

static void test_plan_errors(void **state)
{
	(void)state;
	static const struct { const char *from, *to, *want; } cases[] = {
		{"\"format\": \"fusec-plan/1\", ", "",
		 "missing key \"format\""},
		{"fusec-plan/1", "fusec-plan/3",
		 "format: unsupported plan format \"fusec-plan/3\" (expected \"fusec-plan/1\" "
		 "or \"fusec-plan/2\")"},
		/* format 2 needs its named dims (docs/plan-format.md, "Format 2") */
		{"fusec-plan/1", "fusec-plan/2", "missing key \"dims\""},
		{"\"ptx\": \"g.ptx\"", "\"ptx\": 3",
		 "ptx: expected a string, got a number"},
		{"\"tensors\"", "\"tensorz\"",
		 "missing key \"tensors\""},
		/* the files beside the plan: plain names, with their hashes (issue 25) */
		{"\"ptx\": \"g.ptx\"", "\"ptx\": \"/etc/passwd\"",
		 "ptx: \"/etc/passwd\" is not a plain file name: the PTX file must lie beside the plan"},
		{"\"ptx\": \"g.ptx\"", "\"ptx\": \"../g.ptx\"",
		 "ptx: \"../g.ptx\" is not a plain file name: the PTX file must lie beside the plan"},
		{"\"ptx\": \"g.ptx\"", "\"ptx\": \"..\"",
		 "ptx: \"..\" is not a plain file name: the PTX file must lie beside the plan"},
		{" \"ptx_sha256\": \"" SHA "\",\n", "",
		 "missing key \"ptx_sha256\": a plan must record the SHA-256 of its PTX file, so "
		 "that no other file is used in its place (fusec compile writes it)"},
		{"\"ptx_sha256\": \"" SHA "\"", "\"ptx_sha256\": \"\"",
		 "ptx_sha256: expected 64 lowercase hex digits"},
		{"\"ptx_sha256\": \"" SHA "\"", "\"ptx_sha256\": \"" SHA "\", \"weights\": \"g.weights.bin\"",
		 "missing key \"weights_sha256\": a plan must record the SHA-256 of its weights file, "
		 "so that no other file is used in its place (fusec compile writes it)"},
		{"\"ptx_sha256\": \"" SHA "\"", "\"ptx_sha256\": \"" SHA "\", \"weights\": \"..\"",
		 "weights: the weights file must be a plain file name beside the plan"},
		{"\"ptx_sha256\": \"" SHA "\"", "\"ptx_sha256\": \"" SHA "\", \"weights_sha256\": \"" SHA "\"",
		 "weights_sha256: the plan names no weights file"},
		{"\"dtype\": \"f32\", \"shape\": [64, 64], \"role\": \"input\"", "\"dtype\": \"f33\", \"shape\": [64, 64], \"role\": \"input\"",
		 "tensors[0].dtype: unknown dtype \"f33\""},
		{"\"shape\": [64, 64], \"role\": \"input\"", "\"shape\": [64, 0], \"role\": \"input\"",
		 "tensors[0].shape[1]: 0 is out of range [1, 1099511627776]"},
		{"\"shape\": [64, 64], \"role\": \"input\"", "\"shape\": [64, 1.5], \"role\": \"input\"",
		 "tensors[0].shape[1]: expected an integer, got 1.5"},
		{"\"shape\": [64, 64], \"role\": \"input\"", "\"shape\": \"64x64\", \"role\": \"input\"",
		 "tensors[0].shape: expected an array, got a string"},
		{"\"shape\": [64, 64], \"role\": \"input\"", "\"shape\": [1,1,1,1,1,1,1,1,1], \"role\": \"input\"",
		 "tensors[0].shape: rank 9 is more than 8"},
		{"\"role\": \"input\", \"buffer\": true}", "\"role\": \"input\", \"buffer\": false}",
		 "tensors[0].buffer: input tensor 'a' must have a buffer"},
		{"\"role\": \"output\"", "\"role\": \"result\"",
		 "tensors[3].role: unknown role \"result\" (input, output or intermediate)"},
		{"\"name\": \"s\"", "\"name\": \"a\"",
		 "tensors[1]: tensor 'a' is listed twice (also tensors[0])"},
		{"\"name\": \"s\", ", "",
		 "tensors[1]: missing key \"name\""},
		{"\"params\": [\"ptr\", \"ptr\"", "\"params\": [\"ptr\", \"u64\"",
		 "kernels[0].params[1]: unknown parameter type \"u64\" (ptr, i64, i32, f64 or f32)"},
		{"{\"kernel\": \"k0\"", "{\"kernel\": \"k9\"",
		 "steps[0].launches[0].kernel: unknown kernel 'k9'"},
		{"{\"kernel\": \"k0\", ", "{",
		 "steps[0].launches[0]: missing key \"kernel\""},
		{", {\"tensor\": \"a\"}]}", "]}",
		 "steps[0].launches[0].args: 7 arguments for the 8 parameters of kernel 'k0'"},
		{"{\"f64\": 2.5}", "{\"i64\": 2}",
		 "steps[0].launches[0].args[2]: expected {\"f64\": …} for parameter 2 (f64) of kernel 'k0', got {\"i64\": …}"},
		{"{\"f64\": 2.5}", "2.5",
		 "steps[0].launches[0].args[2]: expected {\"f64\": …} for parameter 2 (f64) of kernel 'k0'"},
		{"{\"f64\": 2.5}", "{\"f64\": \"two\"}",
		 "steps[0].launches[0].args[2].f64: expected a number, \"inf\", \"-inf\" or \"nan\", got \"two\""},
		{"{\"tensor\": \"s\"}", "{\"tensor\": \"t2\"}",
		 "steps[0].launches[0].args[1].tensor: tensor 't2' is bound to a pointer but has no buffer"},
		{"{\"tensor\": \"s\"}", "{\"tensor\": \"q\"}",
		 "steps[0].launches[0].args[1].tensor: unknown tensor 'q'"},
		{"{\"i32\": -7}", "{\"i32\": 3000000000}",
		 "steps[0].launches[0].args[5].i32: 3000000000 is out of range [-2147483648, 2147483647]"},
		{"{\"i64\": 4096}", "{\"i64\": 4096.5}",
		 "steps[0].launches[0].args[3].i64: expected an integer, got 4096.5"},
		{"\"grid\": [16, 1, 1]", "\"grid\": [16, 1]",
		 "steps[0].launches[0].grid: expected 3 integers [x, y, z], got 2"},
		{"\"grid\": [16, 1, 1]", "\"grid\": [16, 70000, 1]",
		 "steps[0].launches[0].grid[1]: 70000 is out of range [1, 65535]"},
		{"\"block\": [256, 1, 1]", "\"block\": [256, 8, 1]",
		 "steps[0].launches[0].block: 256×8×1 threads is more than 1024 per block"},
		{"\"block\": [256, 1, 1], ", "",
		 "steps[0].launches[0]: missing key \"block\""},
		{"\"launches\": [", "\"launchez\": [",
		 "steps[0]: missing key \"launches\""},
		{"\"segment\": 0", "\"segment\": \"0\"",
		 "steps[0].segment: expected a number, got a string"},
	};
	char want[1200];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(want, sizeof want, "dir/g.plan.json: error: %s", cases[i].want);
		const char *got = mutated(cases[i].from, cases[i].to);
		if (strcmp(got, want) != 0)
			fail_msg("case %zu:\n  got  %s\n  want %s", i, got, want);
	}
}

static void test_plan_bad_json(void **state)
{
	(void)state;
	Diag d;
	char msg[1200];
	const char *text = "{\"format\": \"fusec-plan/1\",\n \"ptx\": \"x.ptx\",\n \"tensors\": [}\n";
	assert_null(rt_plan_parse("p.json", text, strlen(text), &d));
	diag_format(&d, msg, sizeof msg);
	assert_string_equal(msg, "p.json:3: error: the plan is not valid JSON");
	text = "[1, 2]";
	assert_null(rt_plan_parse("p.json", text, strlen(text), &d));
	diag_format(&d, msg, sizeof msg);
	assert_string_equal(msg, "p.json: error: a plan is a JSON object, got an array");
	text = "{} {}";
	assert_null(rt_plan_parse("p.json", text, strlen(text), &d));
	diag_format(&d, msg, sizeof msg);
	assert_string_equal(msg, "p.json:1: error: unexpected text after the plan's JSON object");
}

static void test_plan_load_paths(void **state)
{
	(void)state;
	Diag d;
	char msg[1200];
	RtPlan *p = rt_plan_load("runtime", &d);
	assert_non_null(p);
	assert_string_equal(p->path, "runtime/axpb.plan.json");
	assert_string_equal(p->ptx_path, "runtime/axpb.ptx");
	assert_int_equal(p->nlaunches, 2);
	rt_plan_free(p);
	assert_null(rt_plan_load("unit", &d));
	diag_format(&d, msg, sizeof msg);
	assert_string_equal(msg, "unit: error: holds no plan (*.plan.json)");
	assert_null(rt_plan_load("runtime/none.plan.json", &d));
	diag_format(&d, msg, sizeof msg);
	assert_string_equal(msg, "runtime/none.plan.json: error: cannot open: No such file or directory");
}

static void test_pack_args(void **state)
{
	(void)state;
	Diag d;
	RtPlan *p = rt_plan_parse("g.plan.json", base_plan, strlen(base_plan), &d);
	assert_non_null(p);
	const RtLaunch *l = &p->launches[0];
	uint64_t bufs[4] = {0x7f0000001000ULL, 0x7f0000002000ULL, 0, 0x7f0000003000ULL};
	RtArgSlot slots[8];
	void *argv[8];
	memset(slots, 0xcc, sizeof slots);
	rt_pack_args(l, bufs, slots, argv);
	for (int i = 0; i < 8; i++)
		assert_ptr_equal(argv[i], &slots[i]);
	uint64_t u;
	double f64;
	int64_t i64;
	int32_t i32;
	float f32;
	memcpy(&u, argv[0], 8);
	assert_true(u == 0x7f0000001000ULL);
	memcpy(&u, argv[1], 8);
	assert_true(u == 0x7f0000002000ULL);
	memcpy(&f64, argv[2], 8);
	assert_true(f64 == 2.5);
	memcpy(&i64, argv[3], 8);
	assert_int_equal(i64, 4096);
	memcpy(&u, argv[4], 8);
	assert_true(u == 0x7f0000003000ULL);
	memcpy(&i32, argv[5], 4);
	assert_int_equal(i32, -7);
	memcpy(&f32, argv[6], 4);
	assert_true(isinf(f32) && f32 < 0);
	memcpy(&u, argv[7], 8);
	assert_true(u == 0x7f0000001000ULL);
	/* 4-byte values are stored at the slot's start, the rest zeroed. */
	const unsigned char *raw = argv[5];
	assert_memory_equal(raw, &i32, 4);
	for (int k = 4; k < 8; k++)
		assert_int_equal(raw[k], 0);
	rt_plan_free(p);
}

static void test_bytes_moved(void **state)
{
	(void)state;
	Diag d;
	RtPlan *p = rt_plan_parse("g.plan.json", base_plan, strlen(base_plan), &d);
	assert_non_null(p);
	assert_int_equal(rt_plan_bytes_in(p), 64 * 64 * 4 + 8);
	assert_int_equal(rt_plan_bytes_out(p), 64 * 64 * 2);
	/* a, s, y; a is bound twice but counted once */
	assert_int_equal(rt_launch_bytes(p, &p->launches[0]), 64 * 64 * 4 + 8 + 64 * 64 * 2);
	rt_plan_free(p);
	p = rt_plan_load("runtime/axpb.plan.json", &d);
	assert_non_null(p);
	assert_int_equal(rt_plan_bytes_in(p), 3 * 37000 * 4);
	assert_int_equal(rt_plan_bytes_out(p), 37000 * 4 + 37000);
	rt_plan_free(p);
}

static void test_median(void **state)
{
	(void)state;
	double odd[] = {5, 1, 4, 2, 3};
	double even[] = {8, 2, 6, 4};
	double one[] = {7};
	assert_true(rt_median(odd, 5) == 3);
	assert_true(rt_median(even, 4) == 5);
	assert_true(rt_median(one, 1) == 7);
	assert_true(rt_median(one, 0) == 0);
}

static void test_driver_error_text(void **state)
{
	(void)state;
	RtDriver none;
	Diag d;
	memset(&none, 0, sizeof none);
	assert_int_equal(rt_driver_fail(&none, &d, "cuModuleLoadDataEx", 218), RT_ERR_DEVICE);
	assert_string_equal(d.msg, "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX "
			    "(a PTX JIT compilation failed)");
	rt_driver_fail(&none, &d, "cuInit", 12345);
	assert_string_equal(d.msg, "cuInit failed: CUDA error 12345");
	assert_string_equal(rt_call_name_("cuMemAlloc(&p, n)"), "cuMemAlloc_v2");
	assert_string_equal(rt_call_name_("cuEventDestroy(ev)"), "cuEventDestroy_v2");
	assert_string_equal(rt_call_name_("cuInit(0)"), "cuInit");
}

static void test_no_driver(void **state)
{
	(void)state;
	const char *old = getenv("FUSEC_LIBCUDA");
	char *saved = old ? strdup(old) : NULL;
	setenv("FUSEC_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
	Diag d;
	RtPlan *p = rt_plan_load("runtime/axpb.plan.json", &d);
	assert_non_null(p);
	RtSession *s = (RtSession *)&d;
	assert_int_equal(rt_session_open(&s, p, 0, &d), RT_ERR_DEVICE);
	assert_null(s);
	assert_string_equal(d.file, "");
	const char *want = "cannot load the CUDA driver library '/nonexistent/libcuda.so.1': ";
	assert_memory_equal(d.msg, want, strlen(want));
	assert_non_null(strstr(d.msg, "is an NVIDIA driver installed?"));

	/* rt_cuda_run: inputs are checked before the driver is touched. */
	RtNamed in[3], out[2] = {{"y", {0}}, {"m", {0}}};
	const char *names[3] = {"a", "b", "c"};
	int64_t dim[2] = {1000, 37};
	for (int i = 0; i < 3; i++) {
		in[i].name = names[i];
		assert_int_equal(host_alloc(&in[i].t, DT_F32, 2, dim, &d), 0);
	}
	assert_int_equal(rt_cuda_run("runtime/axpb.plan.json", in, 2, out, 2, &d), RT_ERR_INPUT);
	assert_string_equal(d.msg, "no value given for input 'c'");
	in[1].t.dim[0] = 999;
	assert_int_equal(rt_cuda_run("runtime/axpb.plan.json", in, 3, out, 2, &d), RT_ERR_INPUT);
	assert_string_equal(d.msg, "tensor 'b': expected f32[1000,37], got f32[999,37]");
	in[1].t.dim[0] = 1000;
	assert_int_equal(rt_cuda_run("runtime/axpb.plan.json", in, 3, out, 2, &d), RT_ERR_DEVICE);
	assert_memory_equal(d.msg, want, strlen(want));
	assert_null(out[0].t.data);
	assert_null(out[1].t.data);
	for (int i = 0; i < 3; i++)
		host_free(&in[i].t);
	rt_plan_free(p);
	if (saved) {
		setenv("FUSEC_LIBCUDA", saved, 1);
		free(saved);
	} else {
		unsetenv("FUSEC_LIBCUDA");
	}
}

/* rt_ptx_check_params reads the PTX as (pointer, length), never past the length:
 * each text below is cut inside a parameter list, copied into a buffer of exactly
 * its size (no NUL after it, so ASan sees a read past the end; found by fuzz_plan). */
static void test_ptx_check_bounded(void **state)
{
	(void)state;
	static const char *const cut[] = {
		".visible .entry fusec_k0(\n\t.par",
		".visible .entry fusec_k0(\n\t.param .u64 a,\n\t.p",
		".visible .entry fusec_k0(",
		".visible .entry fusec_k0(\n\t.param .u6",
	};
	Diag d;
	RtPlan *p = rt_plan_parse("dir/g.plan.json", base_plan, strlen(base_plan), &d);
	assert_non_null(p);
	for (size_t i = 0; i < sizeof cut / sizeof cut[0]; i++) {
		size_t n = strlen(cut[i]);
		char *ptx = malloc(n);
		memcpy(ptx, cut[i], n);
		assert_int_equal(rt_ptx_check_params(p, ptx, n, &d), -1);
		assert_non_null(strstr(d.msg, "fusec_k0"));
		free(ptx);
	}
	rt_plan_free(p);
}

/* A PTX that defines an entry twice is refused, whichever of the two would match
 * the plan (found by fuzz_plan: the runtime checked one, the driver read the other). */
static void test_ptx_check_duplicate_entry(void **state)
{
	(void)state;
	static const char ptx[] =
		".visible .entry fusec_k0(\n\t.param .u64 a\n)\n{\n}\n"
		".visible .entry fusec_k0(\n\t.param .u64 a,\n\t.param .u64 b\n)\n{\n}\n";
	Diag d;
	RtPlan *p = rt_plan_parse("dir/g.plan.json", base_plan, strlen(base_plan), &d);
	assert_non_null(p);
	assert_int_equal(rt_ptx_check_params(p, ptx, sizeof ptx - 1, &d), -1);
	assert_non_null(strstr(d.msg, "defines entry 'fusec_k0' twice"));
	rt_plan_free(p);
}

/* ---- CUDA graphs on the stand-in driver ------------------------------------ */

typedef struct {
	void *lib;             /* fakecuda.so, held open: its counters outlive sessions */
	int (*live)(void);     /* fakecuda_live: driver objects alive */
	int live0;             /* alive before the test (a failed test's leftovers) */
	char trace[64];        /* FAKECUDA_TRACE */
	RtPlan *p;
	RtSession *s;
	int y, m;              /* output tensors */
} Fake;

/* Load the stand-in driver (skip the test when it is not built), point the runtime
 * and its trace at it, and clear the knobs a test may set. */
static void fake_begin(Fake *f)
{
	memset(f, 0, sizeof *f);
	char exe[1024], lib[1100];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	*strrchr(exe, '/') = '\0';
	snprintf(lib, sizeof lib, "%s/tests/fakecuda.so", exe);
	f->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!f->lib)
		skip();
	f->live = (int (*)(void))dlsym(f->lib, "fakecuda_live");
	assert_non_null(f->live);
	f->live0 = f->live();
	setenv("FUSEC_LIBCUDA", lib, 1);
	snprintf(f->trace, sizeof f->trace, "/tmp/fusec-trace-XXXXXX");
	int fd = mkstemp(f->trace);
	assert_true(fd >= 0);
	close(fd);
	setenv("FAKECUDA_TRACE", f->trace, 1);
	unsetenv("FAKECUDA_CAPTURE_FAIL");
	unsetenv("FAKECUDA_LAUNCH_US");
	unsetenv("FUSEC_NO_GRAPH");
}

/* Open a session on the fixture with inputs a, b, c of fixed values. */
static void fake_open(Fake *f)
{
	Diag d;
	f->p = rt_plan_load("runtime/axpb.plan.json", &d);
	assert_non_null(f->p);
	if (rt_session_open(&f->s, f->p, 0, &d) != RT_OK)
		fail_msg("%s", d.msg);
	f->y = rt_plan_find_tensor(f->p, "y");
	f->m = rt_plan_find_tensor(f->p, "m");
	int64_t dim[2] = {1000, 37};
	for (int k = 0; k < 3; k++) {
		HostTensor h;
		assert_int_equal(host_alloc(&h, DT_F32, 2, dim, &d), 0);
		for (int64_t i = 0; i < h.n; i++)
			((float *)h.data)[i] = (float)((i * (k + 3)) % 17) / 8 - 1;
		assert_int_equal(rt_session_upload(f->s, rt_plan_find_tensor(f->p, (const char *[]){"a", "b", "c"}[k]), &h, &d), RT_OK);
		host_free(&h);
	}
}

static void fake_close(Fake *f)
{
	rt_session_close(f->s);
	rt_plan_free(f->p);
	f->s = NULL;
	f->p = NULL;
}

static void fake_end(Fake *f)
{
	assert_int_equal(f->live(), f->live0);   /* every stream, graph, buffer freed */
	dlclose(f->lib);
	unlink(f->trace);
	unsetenv("FUSEC_LIBCUDA");
	unsetenv("FAKECUDA_TRACE");
	unsetenv("FAKECUDA_CAPTURE_FAIL");
	unsetenv("FAKECUDA_LAUNCH_US");
	unsetenv("FUSEC_NO_GRAPH");
}

/* The trace since the last call (then emptied); with kernels_only, only its kernel
 * lines, each without its " (graph)" / " (direct)" tail, which *via receives (the
 * last one's; "" without kernel lines). */
static char *fake_trace(Fake *f, bool kernels_only, char *via, size_t vsize)
{
	Buf b = {0};
	FILE *in = fopen(f->trace, "r");
	assert_non_null(in);
	char line[1024];
	if (via)
		via[0] = '\0';
	while (fgets(line, sizeof line, in)) {
		if (kernels_only) {
			if (strncmp(line, "kernel ", 7) != 0)
				continue;
			char *tail = strrchr(line, '(');
			assert_non_null(tail);
			if (via)
				snprintf(via, vsize, "%.*s", (int)strcspn(tail + 1, ")"), tail + 1);
			strcpy(tail - 1, "\n");
		}
		buf_puts(&b, line);
	}
	fclose(in);
	FILE *out = fopen(f->trace, "w");
	assert_non_null(out);
	fclose(out);
	if (!b.data)
		buf_puts(&b, "");
	return b.data;
}

static void fake_outputs(Fake *f, HostTensor *y, HostTensor *m)
{
	Diag d;
	assert_int_equal(rt_session_download(f->s, f->y, y, &d), RT_OK);
	assert_int_equal(rt_session_download(f->s, f->m, m, &d), RT_OK);
}

/* Outputs back to "never written" (0xff bytes), as when the session opened. */
static void fake_scrub(Fake *f)
{
	const RtPlan *p = f->p;
	assert_int_equal(f->s->drv.cuMemsetD8(f->s->bufs[f->y], 0xff, p->tensors[f->y].bytes), 0);
	assert_int_equal(f->s->drv.cuMemsetD8(f->s->bufs[f->m], 0xff, p->tensors[f->m].bytes), 0);
}

static void test_graph_replays_direct_launches(void **state)
{
	(void)state;
	Fake f;
	Diag d;
	RtGraphInfo gi;
	char via[16];
	fake_begin(&f);
	fake_open(&f);
	rt_session_graph_info(f.s, &gi);
	assert_int_equal(gi.mode, RT_GRAPH_ON);   /* the default */
	assert_string_equal(gi.why, "");

	rt_session_set_graph(f.s, false);
	rt_session_graph_info(f.s, &gi);
	assert_int_equal(gi.mode, RT_GRAPH_OFF);
	assert_string_equal(gi.why, "turned off by the caller");
	free(fake_trace(&f, false, NULL, 0));
	assert_int_equal(rt_session_run(f.s, &d), RT_OK);
	char *direct = fake_trace(&f, true, via, sizeof via);
	assert_string_equal(via, "direct");
	HostTensor y1, m1, y2, m2;
	fake_outputs(&f, &y1, &m1);

	fake_scrub(&f);
	rt_session_set_graph(f.s, true);
	assert_int_equal(rt_session_run(f.s, &d), RT_OK);
	/* captured (nothing runs), instantiated, then replayed: the same kernels, in
	 * the same order, with the same grids and argument values */
	char *all = fake_trace(&f, false, NULL, 0);
	assert_non_null(strstr(all, "capture begin\ncaptured fix_fma (1)\ncaptured fix_affine (2)\n"
			       "capture end: 2 launches\ninstantiate: 2 launches\n"
			       "graph launch: 2 launches\nkernel fix_fma "));
	free(all);
	assert_int_equal(rt_session_run(f.s, &d), RT_OK);
	char *graph = fake_trace(&f, true, via, sizeof via);
	assert_string_equal(via, "graph");
	assert_string_equal(graph, direct);
	fake_outputs(&f, &y2, &m2);
	assert_memory_equal(y1.data, y2.data, f.p->tensors[f.y].bytes);
	assert_memory_equal(m1.data, m2.data, f.p->tensors[f.m].bytes);
	rt_session_graph_info(f.s, &gi);
	assert_int_equal(gi.mode, RT_GRAPH_ON);
	assert_int_equal(gi.captures, 1);   /* the second run replayed the same graph */
	assert_int_equal(gi.replays, 2);
	host_free(&y1), host_free(&m1), host_free(&y2), host_free(&m2);
	free(direct);
	free(graph);
	fake_close(&f);
	fake_end(&f);
}

/* A graph holds the addresses it was captured with: binding another buffer brings
 * a new capture, and the kernels write into the new buffer, not the old one. */
static void test_graph_rebind(void **state)
{
	(void)state;
	Fake f;
	Diag d;
	RtGraphInfo gi;
	fake_begin(&f);
	fake_open(&f);
	assert_int_equal(rt_session_run(f.s, &d), RT_OK);
	HostTensor want, got, m;
	fake_outputs(&f, &want, &m);
	host_free(&m);
	uint64_t bytes = f.p->tensors[f.y].bytes, old = f.s->bufs[f.y];
	CUdeviceptr mine = 0;
	assert_int_equal(f.s->drv.cuMemAlloc(&mine, bytes), 0);
	assert_int_equal(f.s->drv.cuMemsetD8(old, 0, bytes), 0);

	assert_int_equal(rt_session_bind(f.s, f.y, mine, &d), RT_OK);
	free(fake_trace(&f, false, NULL, 0));
	assert_int_equal(rt_session_run(f.s, &d), RT_OK);
	rt_session_graph_info(f.s, &gi);
	assert_int_equal(gi.captures, 2);
	char *t = fake_trace(&f, false, NULL, 0);
	assert_non_null(strstr(t, "capture begin\n"));
	free(t);
	unsigned char *raw = malloc(bytes);
	assert_int_equal(f.s->drv.cuMemcpyDtoH(raw, mine, bytes), 0);
	assert_memory_equal(raw, want.data, bytes);            /* written where bound */
	assert_int_equal(f.s->drv.cuMemcpyDtoH(raw, old, bytes), 0);
	for (uint64_t i = 0; i < bytes; i++)
		if (raw[i])
			fail_msg("the old buffer of y was written (byte %llu)", (unsigned long long)i);
	assert_int_equal(rt_session_download(f.s, f.y, &got, &d), RT_OK);   /* from mine */
	assert_memory_equal(got.data, want.data, bytes);
	host_free(&got);

	/* the same addresses again: no capture; the session's own buffer: one more */
	assert_int_equal(rt_session_run(f.s, &d), RT_OK);
	rt_session_graph_info(f.s, &gi);
	assert_int_equal(gi.captures, 2);
	assert_int_equal(rt_session_bind(f.s, f.y, 0, &d), RT_OK);
	assert_int_equal(rt_session_run(f.s, &d), RT_OK);
	rt_session_graph_info(f.s, &gi);
	assert_int_equal(gi.captures, 3);
	assert_int_equal(gi.replays, 4);
	assert_int_equal(f.s->drv.cuMemcpyDtoH(raw, old, bytes), 0);
	assert_memory_equal(raw, want.data, bytes);

	int ab = rt_plan_find_tensor(f.p, "ab");
	assert_int_equal(rt_session_bind(f.s, ab, mine, &d), RT_ERR_INPUT);
	assert_string_equal(d.msg, "cannot bind tensor 3: it has no buffer of its own (bind the "
			    "tensor it aliases)");
	assert_int_equal(rt_session_bind(f.s, 99, mine, &d), RT_ERR_INPUT);
	assert_string_equal(d.msg, "cannot bind tensor 99: the plan has no such tensor");
	free(raw);
	host_free(&want);
	assert_int_equal(f.s->drv.cuMemFree(mine), 0);
	fake_close(&f);
	fake_end(&f);
}

/* A tensor map argument is encoded when the session opens and again when its
 * tensor is bound elsewhere, in 64-byte aligned storage, over the tensor's
 * address; a buffer the driver refuses (not 16-byte aligned) fails the bind with
 * the argument and the tensor named. fakecuda's encoding: the address, the rank,
 * the dims, the strides (tests/runtime/fakecuda.c). */
static void test_tmap_bind(void **state)
{
	(void)state;
	Fake f;
	Diag d;
	fake_begin(&f);
	f.p = rt_plan_load("runtime/tmap/tmap.plan.json", &d);
	if (!f.p)
		fail_msg("%s", d.msg);
	if (rt_session_open(&f.s, f.p, 0, &d) != RT_OK)
		fail_msg("%s", d.msg);
	int x = rt_plan_find_tensor(f.p, "x");
	void *map = f.s->argv[0][1];
	unsigned long long w[12];
	assert_int_equal((uintptr_t)map % 64, 0);
	memcpy(w, map, sizeof w);
	assert_int_equal(w[0], f.s->bufs[x]);
	assert_int_equal(w[1], 2);
	assert_int_equal(w[2], 64);
	assert_int_equal(w[3], 96);
	assert_int_equal(w[8], 128);
	CUdeviceptr mine = 0;
	assert_int_equal(f.s->drv.cuMemAlloc(&mine, f.p->tensors[x].bytes + 16), 0);
	assert_int_equal(rt_session_bind(f.s, x, mine + 16, &d), RT_OK);
	memcpy(w, f.s->argv[0][1], sizeof w);
	assert_int_equal(w[0], mine + 16);
	assert_int_equal(rt_session_bind(f.s, x, mine + 2, &d), RT_ERR_DEVICE);
	assert_non_null(strstr(d.msg, "the tensor map of argument 1 over tensor 'x'"));
	assert_non_null(strstr(d.msg, "cuTensorMapEncodeTiled failed"));
	assert_int_equal(rt_session_bind(f.s, x, 0, &d), RT_OK);
	memcpy(w, f.s->argv[0][1], sizeof w);
	assert_int_equal(w[0], f.s->bufs[x]);
	assert_int_equal(f.s->drv.cuMemFree(mine), 0);
	fake_close(&f);
	fake_end(&f);
}

/* A capture that fails at any step leaves the run on direct launches, with the
 * same results and the failing call named; nothing of the capture is left. */
static void test_graph_capture_fails(void **state)
{
	(void)state;
	static const struct { const char *step, *why; } cases[] = {
		{"begin", "cuStreamBeginCapture_v2 failed: CUDA_ERROR_NOT_SUPPORTED (operation not "
		 "supported)"},
		{"launch", "capturing launch 0 (step 0, kernel 'k_fma'): cuLaunchKernel failed: "
		 "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (operation not permitted when stream is "
		 "capturing)"},
		{"end", "cuStreamEndCapture failed: CUDA_ERROR_UNKNOWN (unknown error)"},
		{"instantiate", "cuGraphInstantiateWithFlags failed: CUDA_ERROR_OUT_OF_MEMORY (out "
		 "of memory)"},
	};
	Fake f;
	Diag d;
	RtGraphInfo gi;
	HostTensor want, wm, y, m;
	char via[16];
	fake_begin(&f);
	setenv("FUSEC_NO_GRAPH", "1", 1);
	fake_open(&f);
	rt_session_graph_info(f.s, &gi);
	assert_int_equal(gi.mode, RT_GRAPH_OFF);
	assert_string_equal(gi.why, "turned off by FUSEC_NO_GRAPH=1");
	assert_int_equal(rt_session_run(f.s, &d), RT_OK);
	char *direct = fake_trace(&f, true, via, sizeof via);
	fake_outputs(&f, &want, &wm);
	rt_session_graph_info(f.s, &gi);
	assert_int_equal(gi.captures, 0);
	fake_close(&f);
	setenv("FUSEC_NO_GRAPH", "0", 1);   /* "0" is not off */

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		setenv("FAKECUDA_CAPTURE_FAIL", cases[i].step, 1);
		fake_open(&f);
		free(fake_trace(&f, false, NULL, 0));
		assert_int_equal(rt_session_run(f.s, &d), RT_OK);
		rt_session_graph_info(f.s, &gi);
		assert_int_equal(gi.mode, RT_GRAPH_FALLBACK);
		assert_string_equal(gi.why, cases[i].why);
		assert_int_equal(gi.captures, 0);
		char *t = fake_trace(&f, true, via, sizeof via);
		assert_string_equal(via, "direct");
		assert_string_equal(t, direct);
		free(t);
		fake_outputs(&f, &y, &m);
		assert_memory_equal(y.data, want.data, f.p->tensors[f.y].bytes);
		assert_memory_equal(m.data, wm.data, f.p->tensors[f.m].bytes);
		host_free(&y), host_free(&m);
		/* the fallback stays: no capture is tried at every run */
		assert_int_equal(rt_session_run(f.s, &d), RT_OK);
		t = fake_trace(&f, false, NULL, 0);
		assert_null(strstr(t, "capture"));
		free(t);
		/* asked for again, the capture is tried again (and fails the same way) */
		rt_session_set_graph(f.s, true);
		assert_int_equal(rt_session_run(f.s, &d), RT_OK);
		rt_session_graph_info(f.s, &gi);
		assert_int_equal(gi.mode, RT_GRAPH_FALLBACK);
		fake_close(&f);
		assert_int_equal(f.live(), f.live0);
	}

	/* a graph that fails to launch is an error of the run, named */
	setenv("FAKECUDA_CAPTURE_FAIL", "graph-launch", 1);
	fake_open(&f);
	assert_int_equal(rt_session_run(f.s, &d), RT_ERR_DEVICE);
	assert_string_equal(d.msg, "replaying the plan's 2 launches as a CUDA graph "
			    "(FUSEC_NO_GRAPH=1 launches them one by one): cuGraphLaunch failed: "
			    "CUDA_ERROR_LAUNCH_FAILED (unspecified launch failure)");
	fake_close(&f);
	host_free(&want), host_free(&wm);
	free(direct);
	fake_end(&f);
}

/* rt_bench times direct launches and graph replays; the stand-in's launch cost
 * (3 us of idle device per direct launch, per graph launch once) tells them apart. */
static void test_graph_bench(void **state)
{
	(void)state;
	Fake f;
	Diag d;
	RtGraphInfo gi;
	RtBenchOptions o;
	RtBenchResult r;
	fake_begin(&f);
	setenv("FAKECUDA_LAUNCH_US", "3", 1);
	fake_open(&f);
	assert_int_equal(rt_session_run(f.s, &d), RT_OK);
	rt_bench_defaults(&o);
	o.iters = 5;
	o.warmup = 1;
	o.max_sets = 4;
	if (rt_bench(f.s, &o, &r, &d) != RT_OK)
		fail_msg("%s", d.msg);
	assert_int_equal(r.nsets, 4);
	assert_true(fabs(r.launch_ms[0] - 0.013) < 1e-6);
	assert_true(fabs(r.launch_ms[1] - 0.008) < 1e-6);
	assert_true(fabs(r.total_ms - 0.021) < 1e-6);
	assert_true(fabs(r.latency_ms - 0.021) < 1e-6);
	assert_true(r.graph);
	assert_true(fabs(r.graph_total_ms - 0.018) < 1e-6);
	assert_true(fabs(r.graph_total_min_ms - 0.018) < 1e-6);
	assert_true(fabs(r.graph_latency_ms - 0.018) < 1e-6);
	rt_session_graph_info(f.s, &gi);
	assert_int_equal(gi.captures, 4);   /* the session's graph, then one per other set */
	Buf b = {0};
	rt_bench_report(&b, f.s, &r);
	assert_non_null(strstr(b.data, "\ngraph total: median 18.00 us, min 18.00 us (replayed "
			       "as a CUDA graph, back to back)\n"));
	assert_non_null(strstr(b.data, "\ngraph latency: median 18.00 us, min 18.00 us "
			       "(replayed as a CUDA graph, one run at a time, launch cost included)\n"));
	buf_free(&b);
	rt_bench_result_free(&r);
	/* after the bench, the session's runs still replay its own graph */
	assert_int_equal(rt_session_run(f.s, &d), RT_OK);
	rt_session_graph_info(f.s, &gi);
	assert_int_equal(gi.captures, 4);
	fake_close(&f);

	setenv("FAKECUDA_CAPTURE_FAIL", "instantiate", 1);
	fake_open(&f);
	assert_int_equal(rt_bench(f.s, &o, &r, &d), RT_OK);
	assert_false(r.graph);
	assert_string_equal(r.graph_why, "cuGraphInstantiateWithFlags failed: "
			    "CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
	rt_bench_report(&b, f.s, &r);
	assert_non_null(strstr(b.data, "\ngraph: not timed: cuGraphInstantiateWithFlags failed: "));
	assert_null(strstr(b.data, "graph total"));
	buf_free(&b);
	rt_bench_result_free(&r);
	fake_close(&f);
	fake_end(&f);
}

const struct CMUnitTest runtime_tests[] = {
	cmocka_unit_test(test_ptx_check_bounded),
	cmocka_unit_test(test_ptx_check_duplicate_entry),
	cmocka_unit_test(test_plan_good),
	cmocka_unit_test(test_plan_scratch),
	cmocka_unit_test(test_plan_variants),
	cmocka_unit_test(test_plan_variant_errors),
	cmocka_unit_test(test_plan_input_also_output),
	cmocka_unit_test(test_plan_errors),
	cmocka_unit_test(test_plan_bad_json),
	cmocka_unit_test(test_plan_load_paths),
	cmocka_unit_test(test_pack_args),
	cmocka_unit_test(test_bytes_moved),
	cmocka_unit_test(test_median),
	cmocka_unit_test(test_driver_error_text),
	cmocka_unit_test(test_no_driver),
	cmocka_unit_test(test_graph_replays_direct_launches),
	cmocka_unit_test(test_graph_rebind),
	cmocka_unit_test(test_tmap_bind),
	cmocka_unit_test(test_graph_capture_fails),
	cmocka_unit_test(test_graph_bench),
};
const size_t runtime_ntests = SUITE_COUNT(runtime_tests);
