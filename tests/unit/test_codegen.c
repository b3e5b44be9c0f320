/* test_codegen.c: the kernel builder (codegen/codegen.h).
 *
 * Kernels are built from the relative form of real graphs. Every module is verified;
 * PTX is emitted for sm_90 and sm_80 and, when ptxas exists (PATH or
 * /usr/local/cuda/bin), assembled for that arch. The host build runs through the JIT
 * (codegen/jit.h) and its numbers are compared with values computed here in plain C
 * (double), element by element. FUSEC_TEST_PTX=1 prints every PTX module built here,
 * FUSEC_TEST_LL=1 the IR of every host module before optimization. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "../../codegen/codegen.h"
#include "../../codegen/jit.h"
#include "../../host/host.h"

#include <llvm-c/Analysis.h>

/* ---- relative form of a graph ---------------------------------------------- */

typedef struct {
	Arena *a;
	Graph *g;
	RelConv *conv;
	RelOp *ops;
	int nops;
	const int *rel2g;     /* relative id -> global tensor */
	int nrel;
	const int64_t *dims;
	int ndims;
	const double *vals;
	int nvals;
} Rel;

static void rel_open(Rel *r, const char *text)
{
	memset(r, 0, sizeof *r);
	r->a = arena_new();
	r->g = test_graph(r->a, "g.yaml", text);
	r->conv = ir_rel_new(r->g);
	const Segment *seg = &r->g->segs[0];
	r->ops = ARENA_NEW(r->a, RelOp, seg->nops);
	r->nops = seg->nops;
	for (int i = 0; i < seg->nops; i++)
		ir_rel_op(r->conv, r->a, seg->ops[i], &r->ops[i]);
	r->rel2g = ir_rel_tensors(r->conv, &r->nrel);
	r->dims = ir_rel_dims(r->conv, &r->ndims);
	r->vals = ir_rel_values(r->conv, &r->nvals);
}

static void rel_close(Rel *r)
{
	ir_rel_free(r->conv);
	arena_free(r->a);
}

/* written[] for ops [first, first+n): graph outputs and tensors read outside them */
static bool *rel_written(Rel *r, int first, int n)
{
	bool *w = ARENA_NEW(r->a, bool, r->nrel + 1);
	for (int id = 0; id < r->nrel; id++) {
		const Tensor *t = &r->g->tensors[r->rel2g[id]];
		if (t->is_output)
			w[id] = true;
	}
	for (int i = 0; i < r->nops; i++) {
		if (i >= first && i < first + n)
			continue;
		for (int k = 0; k < r->ops[i].nin; k++)
			w[r->ops[i].t[k].id] = true;
	}
	return w;
}

static CgKernelSpec rel_spec(Rel *r, CgKernelKind kind, int first, int n)
{
	CgKernelSpec s = {kind, &r->ops[first], n, rel_written(r, first, n), r->nrel, 0, 0, false, 0, 0, 0};
	return s;
}

/* ---- PTX and ptxas ----------------------------------------------------------- */


static int nptxas_runs;

/* Assemble ptx for arch; returns the exit status of ptxas, or -1 without ptxas. */
static int run_ptxas(const char *ptx, const char *arch)
{
	const char *ptxas = test_find_ptxas();
	if (!ptxas)
		return -1;
	char file[] = "/tmp/fusec-test-XXXXXX";
	int fd = mkstemp(file);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fputs(ptx, f);
	fclose(f);
	char cmd[1200];
	snprintf(cmd, sizeof cmd, "'%s' -arch=%s '%s' -o /dev/null 2>&1", ptxas, arch, file);
	int rc = system(cmd);
	unlink(file);
	nptxas_runs++;
	return rc;
}

static void check_ptx_text(const char *ptx, int nkernels)
{
	assert_non_null(strstr(ptx, ".target"));
	assert_null(strstr(ptx, ".extern"));      /* no call to an unresolved function */
	int entries = 0;
	for (const char *p = ptx; (p = strstr(p, ".entry")); p++)
		entries++;
	assert_int_equal(entries, nkernels);
}

/* Build the specs into an NVPTX module for arch; verify, emit, assemble. */
static void ptx_for(const CgKernelSpec *specs, int n, const char *arch, Buf *out)
{
	Arena *a = arena_new();
	Diag d;
	CgOptions o = {CG_TARGET_NVPTX, arch, NULL, "t", false, false, false};
	CgModule *m = cg_module_new(&o, a, &d);
	assert_non_null(m);
	int distinct = 0;
	const CgKernel *seen[64];
	for (int i = 0; i < n; i++) {
		const CgKernel *k = cg_kernel(m, &specs[i], &d);
		if (!k)
			fail_msg("kernel %d: %s", i, d.msg);
		bool old = false;
		for (int j = 0; j < distinct; j++)
			old |= seen[j] == k;
		if (!old && distinct < 64)
			seen[distinct++] = k;
	}
	char *msg = NULL;
	assert_int_equal(LLVMVerifyModule(cg_module_llvm(m), LLVMReturnStatusAction, &msg), 0);
	LLVMDisposeMessage(msg);
	if (cg_module_finish(m, &d))
		fail_msg("finish: %s", d.msg);
	Buf ptx = {0};
	if (cg_module_emit_ptx(m, &ptx, &d))
		fail_msg("emit: %s", d.msg);
	check_ptx_text(ptx.data, distinct);
	char target[32];
	snprintf(target, sizeof target, ".target %s", arch);
	assert_non_null(strstr(ptx.data, target));
	int rc = run_ptxas(ptx.data, arch);
	if (rc > 0) {
		fprintf(stderr, "%s\n", ptx.data);
		fail_msg("ptxas -arch=%s failed (status %d)", arch, rc);
	}
	if (getenv("FUSEC_TEST_PTX"))
		fprintf(stderr, "%s\n", ptx.data);
	if (out)
		buf_write(out, ptx.data, ptx.len);
	buf_free(&ptx);
	cg_module_free(m);
	arena_free(a);
}

static void ptx_both(const CgKernelSpec *specs, int n)
{
	ptx_for(specs, n, "sm_90", NULL);
	ptx_for(specs, n, "sm_80", NULL);
}

/* ---- host runs --------------------------------------------------------------- */

typedef void (*HostKernel)(void **args, int64_t thread, int64_t nthreads);

/* Tensors of a graph run: one HostTensor per global tensor id. */
typedef struct {
	HostTensor *t;
	int n;
} Tensors;

static void tensors_new(Tensors *ts, const Graph *g, uint64_t seed)
{
	ts->n = g->ntensors;
	ts->t = calloc((size_t)g->ntensors, sizeof *ts->t);
	Diag d;
	for (int i = 0; i < g->ntensors; i++) {
		const Tensor *t = &g->tensors[i];
		assert_int_equal(host_alloc(&ts->t[i], t->dtype, t->rank, t->dim, &d), 0);
		if (t->producer < 0) {
			HostRng r;
			host_rng_init(&r, seed, (uint64_t)i);
			double lo, hi;
			host_default_range(t->dtype, &lo, &hi);
			host_fill_random(&ts->t[i], &r, lo, hi);
		}
	}
}

static void tensors_free(Tensors *ts)
{
	for (int i = 0; i < ts->n; i++)
		host_free(&ts->t[i]);
	free(ts->t);
}

static HostTensor *tensor_named(Rel *r, Tensors *ts, const char *name)
{
	for (int i = 0; i < r->g->ntensors; i++)
		if (!strcmp(r->g->tensors[i].name, name))
			return &ts->t[i];
	fail_msg("no tensor %s", name);
	return NULL;
}

/* Call a host kernel the way a launch would: args from the segment's bindings,
 * the grid covered by `parts` calls (thread p of parts). misalign: buffers are
 * shifted by one element (copied), so the vector path must not be taken. */
static void call_kernel(Rel *r, Tensors *ts, const CgKernel *k, HostKernel fn, int parts)
{
	void **args = calloc((size_t)k->nparams + 2, sizeof *args);
	void **ptrs = calloc((size_t)k->nparams + 1, sizeof *ptrs);
	double *sc = calloc((size_t)k->nparams + 1, sizeof *sc);
	int64_t *dm = calloc((size_t)k->nparams + 1, sizeof *dm);
	for (int i = 0; i < k->nparams; i++) {
		const CgParam *p = &k->params[i];
		switch (p->kind) {
		case CG_PARAM_BUFFER:
			assert_true(p->id < r->nrel);
			ptrs[i] = ts->t[r->rel2g[p->id]].data;
			assert_int_equal(p->dtype, r->g->tensors[r->rel2g[p->id]].dtype);
			args[i] = &ptrs[i];
			break;
		case CG_PARAM_SCALAR:
			assert_true(p->id < r->nvals);
			sc[i] = r->vals[p->id];
			args[i] = &sc[i];
			break;
		case CG_PARAM_DIM:
			assert_true(p->id > 0 && p->id < r->ndims);
			dm[i] = r->dims[p->id];
			args[i] = &dm[i];
			break;
		case CG_PARAM_SCRATCH:
			ptrs[i] = NULL;   /* set below, once the launch is known */
			args[i] = &ptrs[i];
			break;
		case CG_PARAM_TMAP:
			fail_msg("a host kernel takes a tensor map");
			break;
		}
	}
	/* cooperative kernels: the launch's geometry after the last parameter */
	CgDims at;
	cg_launch_dims(k, r->dims, r->ndims, &at);
	int64_t geom[7] = {at.grid[0], at.grid[1], at.grid[2], at.block[0], at.block[1],
			   at.block[2], at.shared_bytes};
	args[k->nparams] = geom;
	void *scratch = at.scratch_bytes ? calloc((size_t)at.scratch_bytes, 1) : NULL;
	for (int i = 0; i < k->nparams; i++)
		if (k->params[i].kind == CG_PARAM_SCRATCH)
			ptrs[i] = scratch;
	for (int p = 0; p < parts; p++)
		fn(args, p, parts);
	free(scratch);
	free(args);
	free(ptrs);
	free(sc);
	free(dm);
}

/* Compile specs for the host and run them in order over ts. */
static void host_run(Rel *r, Tensors *ts, const CgKernelSpec *specs, int n, int parts)
{
	Arena *a = arena_new();
	Diag d;
	CgOptions o = {CG_TARGET_HOST, NULL, NULL, "h", false, false, false};
	CgModule *m = cg_module_new(&o, a, &d);
	assert_non_null(m);
	const CgKernel **ks = calloc((size_t)n, sizeof *ks);
	for (int i = 0; i < n; i++) {
		ks[i] = cg_kernel(m, &specs[i], &d);
		if (!ks[i])
			fail_msg("kernel %d: %s", i, d.msg);
	}
	if (getenv("FUSEC_TEST_LL")) {
		Buf ll = {0};
		cg_module_emit_ll(m, &ll, &d);
		fprintf(stderr, "%s\n", ll.data);
		buf_free(&ll);
	}
	if (cg_module_finish(m, &d))
		fail_msg("finish: %s", d.msg);
	LLVMModuleRef mod;
	LLVMContextRef ctx;
	assert_int_equal(cg_module_take(m, &mod, &ctx, &d), 0);
	CgJit *j = cg_jit_new(&d);
	assert_non_null(j);
	if (cg_jit_add_module(j, mod, ctx, &d))
		fail_msg("jit: %s", d.msg);
	for (int i = 0; i < n; i++) {
		HostKernel fn = (HostKernel)cg_jit_lookup(j, ks[i]->name, &d);
		if (!fn)
			fail_msg("lookup %s: %s", ks[i]->name, d.msg);
		call_kernel(r, ts, ks[i], fn, parts);
	}
	cg_jit_free(j);
	free(ks);
	cg_module_free(m);
	arena_free(a);
}

/* Fused: all ops of segment 0 as one kernel of `kind`. */
static void host_fused(Rel *r, Tensors *ts, CgKernelKind kind, int parts)
{
	CgKernelSpec s = rel_spec(r, kind, 0, r->nops);
	host_run(r, ts, &s, 1, parts);
}

/* Unfused: every op its own single kernel. */
static void host_single(Rel *r, Tensors *ts, int parts)
{
	CgKernelSpec *s = calloc((size_t)r->nops, sizeof *s);
	for (int i = 0; i < r->nops; i++)
		s[i] = rel_spec(r, CG_KERNEL_SINGLE, i, 1);
	host_run(r, ts, s, r->nops, parts);
	free(s);
}

/* Compare got with want (computed in double, rounded as a store rounds). */
static void expect_close(const HostTensor *got, const double *want, double atol, double rtol)
{
	for (int64_t i = 0; i < got->n; i++) {
		double w = host_round(got->dtype, want[i]);
		double g = host_get(got, i);
		if (isnan(w) && isnan(g))
			continue;
		if (!(fabs(g - w) <= atol + rtol * fabs(w)))
			fail_msg("%s element %lld: got %.9g, want %.9g", ir_dtype_name(got->dtype),
				 (long long)i, g, w);
	}
}

/* ---- tests: structure ---------------------------------------------------------- */

static const char *reuse_graph(char *buf, size_t n, int h, int w, double s)
{
	snprintf(buf, n,
		 "format: fusec-graph/1\n"
		 "inputs:\n"
		 "  a: {dtype: f32, shape: [%d, %d]}\n"
		 "  b: {dtype: f32, shape: [%d, %d]}\n"
		 "  c: {dtype: f32, shape: [%d, %d]}\n"
		 "ops:\n"
		 "  - {op: mul, in: [a, b], out: t0}\n"
		 "  - {op: mul_scalar, in: [c], scalar: %g, out: t1}\n"
		 "  - {op: add, in: [t0, t1], out: t2}\n"
		 "  - {op: exp, in: [t2], out: y}\n"
		 "outputs: [y]\n", h, w, h, w, h, w, s);
	return buf;
}

static char *function_ir(CgModule *m, const char *name)
{
	LLVMValueRef f = LLVMGetNamedFunction(cg_module_llvm(m), name);
	assert_non_null(f);
	char *s = LLVMPrintValueToString(f);
	char *dup = strdup(s);
	LLVMDisposeMessage(s);
	return dup;
}

static void test_reuse_same_kernel(void **state)
{
	(void)state;
	char text[1024];
	Rel r64, r32, r6432;
	rel_open(&r64, reuse_graph(text, sizeof text, 64, 64, 2.0));
	rel_open(&r32, reuse_graph(text, sizeof text, 32, 32, 3.0));
	rel_open(&r6432, reuse_graph(text, sizeof text, 64, 32, 2.0));
	CgKernelSpec s64 = rel_spec(&r64, CG_KERNEL_ELEMWISE, 0, 4);
	CgKernelSpec s32 = rel_spec(&r32, CG_KERNEL_ELEMWISE, 0, 4);
	CgKernelSpec s6432 = rel_spec(&r6432, CG_KERNEL_ELEMWISE, 0, 4);

	Arena *a = arena_new();
	Diag d;
	CgOptions o = {CG_TARGET_NVPTX, "sm_90", NULL, "t", false, false, false};
	/* two separate modules build byte-identical functions */
	CgModule *m1 = cg_module_new(&o, a, &d), *m2 = cg_module_new(&o, a, &d);
	const CgKernel *k1 = cg_kernel(m1, &s64, &d);
	const CgKernel *k2 = cg_kernel(m2, &s32, &d);
	assert_non_null(k1);
	assert_non_null(k2);
	assert_string_equal(k1->name, k2->name);
	char *ir1 = function_ir(m1, k1->name), *ir2 = function_ir(m2, k2->name);
	assert_string_equal(ir1, ir2);
	free(ir1);
	free(ir2);
	/* in one module, the second spec finds the first kernel */
	assert_ptr_equal(cg_kernel(m1, &s32, &d), k1);
	const CgKernel *k3 = cg_kernel(m1, &s6432, &d);
	assert_non_null(k3);
	assert_ptr_not_equal(k3, k1);
	assert_string_not_equal(k3->name, k1->name);

	/* parameters: 3 read buffers, 1 written, the scalar, the shape id */
	assert_int_equal(k1->nparams, 6);
	int written = 0, read = 0;
	for (int i = 0; i < k1->nparams; i++) {
		const CgParam *p = &k1->params[i];
		if (p->kind == CG_PARAM_BUFFER) {
			written += p->written;
			read += p->read;
			assert_int_equal(p->dtype, DT_F32);
		}
	}
	assert_int_equal(written, 1);
	assert_int_equal(read, 3);
	assert_int_equal(k1->params[3].kind, CG_PARAM_BUFFER);
	assert_true(k1->params[3].written);
	assert_int_equal(k1->params[3].id, 6);       /* y: a b t0 c t1 t2 y */
	assert_int_equal(k1->params[4].kind, CG_PARAM_SCALAR);
	assert_int_equal(k1->params[4].id, 0);
	assert_int_equal(k1->params[5].kind, CG_PARAM_DIM);
	assert_int_equal(k1->params[5].id, 1);
	assert_int_equal(k3->nparams, 7);            /* shape ids 1 and 2 */

	/* launch rule: work [1,1], vectorized by 4 */
	assert_true(k1->vectorized);
	assert_int_equal(k1->launch.nwork, 2);
	assert_int_equal(k1->launch.vec, 4);
	CgDims at;
	cg_launch_dims(k1, r64.dims, r64.ndims, &at);
	assert_int_equal(at.threads, 64 * 64 / 4);
	assert_int_equal(at.block[0], 256);
	assert_int_equal(at.grid[0], 4);
	assert_int_equal(at.grid[1] * at.grid[2] * at.block[1] * at.block[2], 1);
	assert_int_equal(at.shared_bytes + at.scratch_bytes, 0);
	cg_launch_dims(k1, r32.dims, r32.ndims, &at);
	assert_int_equal(at.threads, 32 * 32 / 4);
	assert_int_equal(at.grid[0], 1);

	cg_module_free(m1);
	cg_module_free(m2);
	arena_free(a);
	rel_close(&r64);
	rel_close(&r32);
	rel_close(&r6432);
}

/* The fused (a*b + c*2).exp() writes y only, whatever its intermediates. */
static void test_fused_writes_only_output(void **state)
{
	(void)state;
	char text[1024];
	Rel r;
	rel_open(&r, reuse_graph(text, sizeof text, 8, 8, 2.0));
	CgKernelSpec s = rel_spec(&r, CG_KERNEL_ELEMWISE, 0, 4);
	Buf ptx = {0};
	ptx_for(&s, 1, "sm_90", &ptx);
	/* one st.global in the vector body, one in the scalar tail */
	int st = 0, ld = 0;
	for (const char *p = ptx.data; (p = strstr(p, "st.global")); p++)
		st++;
	for (const char *p = ptx.data; (p = strstr(p, "ld.global")); p++)
		ld++;
	assert_int_equal(st, 2);
	assert_int_equal(ld, 6);
	assert_non_null(strstr(ptx.data, "st.global.v4.f32"));
	assert_non_null(strstr(ptx.data, "ld.global.v4.f32"));
	buf_free(&ptx);

	Tensors ts;
	tensors_new(&ts, r.g, 7);
	host_fused(&r, &ts, CG_KERNEL_ELEMWISE, 1);
	HostTensor *A = tensor_named(&r, &ts, "a"), *B = tensor_named(&r, &ts, "b");
	HostTensor *C = tensor_named(&r, &ts, "c"), *Y = tensor_named(&r, &ts, "y");
	double want[64];
	for (int i = 0; i < 64; i++)
		want[i] = exp(host_get(A, i) * host_get(B, i) + 2 * host_get(C, i));
	expect_close(Y, want, 1e-6, 1e-5);
	/* the intermediates were never written */
	for (int i = 0; i < 64; i++) {
		assert_true(host_get(tensor_named(&r, &ts, "t0"), i) == 0);
		assert_true(host_get(tensor_named(&r, &ts, "t2"), i) == 0);
	}
	tensors_free(&ts);
	rel_close(&r);
}

/* ---- tests: many ops and dtypes through PTX and ptxas --------------------------- */

static const char *const ptx_graphs[] = {
	/* every binary, scalar, compare and unary float op, f32 */
	"format: fusec-graph/1\n"
	"inputs: {a: {dtype: f32, shape: [16, 8]}, b: {dtype: f32, shape: [1, 8]}}\n"
	"ops:\n"
	"  - {op: add, in: [a, b], out: t0}\n"
	"  - {op: sub, in: [t0, b], out: t1}\n"
	"  - {op: mul, in: [t1, a], out: t2}\n"
	"  - {op: div, in: [t2, b], out: t3}\n"
	"  - {op: rem, in: [t3, b], out: t4}\n"
	"  - {op: pow, in: [t4, a], out: t5}\n"
	"  - {op: max, in: [t5, a], out: t6}\n"
	"  - {op: min, in: [t6, a], out: t7}\n"
	"  - {op: powf, in: [t7, a], out: t8}\n"
	"  - {op: add_scalar, in: [t8], scalar: 1.5, out: s0}\n"
	"  - {op: sub_scalar, in: [s0], scalar: 1.5, out: s1}\n"
	"  - {op: mul_scalar, in: [s1], scalar: 2, out: s2}\n"
	"  - {op: div_scalar, in: [s2], scalar: 3, out: s3}\n"
	"  - {op: rem_scalar, in: [s3], scalar: 0.7, out: s4}\n"
	"  - {op: pow_scalar, in: [s4], scalar: 2.5, out: s5}\n"
	"  - {op: clamp, in: [s5], min: -1, max: 1, out: s6}\n"
	"  - {op: clamp_min, in: [s6], min: -0.5, out: s7}\n"
	"  - {op: clamp_max, in: [s7], max: 0.5, out: s8}\n"
	"  - {op: neg, in: [s8], out: u0}\n"
	"  - {op: abs, in: [u0], out: u1}\n"
	"  - {op: sign, in: [u1], out: u2}\n"
	"  - {op: exp, in: [u2], out: u3}\n"
	"  - {op: log, in: [u3], out: u4}\n"
	"  - {op: log1p, in: [u4], out: u5}\n"
	"  - {op: sqrt, in: [u5], out: u6}\n"
	"  - {op: recip, in: [u6], out: u7}\n"
	"  - {op: sin, in: [u7], out: u8}\n"
	"  - {op: cos, in: [u8], out: u9}\n"
	"  - {op: tanh, in: [u9], out: v0}\n"
	"  - {op: erf, in: [v0], out: v1}\n"
	"  - {op: floor, in: [v1], out: v2}\n"
	"  - {op: ceil, in: [v2], out: v3}\n"
	"  - {op: round, in: [v3], out: v4}\n"
	"  - {op: trunc, in: [v4], out: v5}\n"
	"  - {op: relu, in: [v5], out: v6}\n"
	"  - {op: sigmoid, in: [v6], out: v7}\n"
	"  - {op: silu, in: [v7], out: v8}\n"
	"  - {op: gelu, in: [v8], out: v9}\n"
	"  - {op: gelu, in: [v9], approximate: tanh, out: w0}\n"
	"  - {op: is_nan, in: [w0], out: w1}\n"
	"  - {op: is_inf, in: [w0], out: w2}\n"
	"  - {op: or, in: [w1, w2], out: w3}\n"
	"  - {op: lt, in: [w0, a], out: w4}\n"
	"  - {op: xor, in: [w3, w4], out: w5}\n"
	"  - {op: not, in: [w5], out: w6}\n"
	"  - {op: ge_scalar, in: [w0], scalar: 0.25, out: w7}\n"
	"  - {op: and, in: [w6, w7], out: w8}\n"
	"  - {op: where, in: [w8, w0, a], out: w9}\n"
	"  - {op: mask_fill, in: [w9, w8], scalar: 3, out: y}\n"
	"outputs: [y, w3]\n",
	/* dtypes: f16, bf16, f64 and casts between everything */
	"format: fusec-graph/1\n"
	"inputs: {h: {dtype: f16, shape: [5, 40]}, g: {dtype: bf16, shape: [5, 40]},\n"
	"         d: {dtype: f64, shape: [5, 40]}}\n"
	"ops:\n"
	"  - {op: mul, in: [h, h], out: h1}\n"
	"  - {op: exp, in: [h1], out: h2}\n"
	"  - {op: cast, in: [g], dtype: f16, out: g1}\n"
	"  - {op: add, in: [h2, g1], out: h3}\n"
	"  - {op: cast, in: [h3], dtype: f64, out: d1}\n"
	"  - {op: tanh, in: [d], out: d0}\n"
	"  - {op: mul, in: [d1, d0], out: d2}\n"
	"  - {op: cast, in: [d2], dtype: bf16, out: g2}\n"
	"  - {op: cast, in: [d2], dtype: i32, out: i1}\n"
	"  - {op: cast, in: [i1], dtype: i8, out: i2}\n"
	"  - {op: cast, in: [i2], dtype: u8, out: i3}\n"
	"  - {op: cast, in: [i3], dtype: i64, out: i4}\n"
	"  - {op: cast, in: [i4], dtype: bool, out: i5}\n"
	"  - {op: cast, in: [i5], dtype: f32, out: f1}\n"
	"outputs: [g2, f1, d2]\n",
	/* integers */
	"format: fusec-graph/1\n"
	"inputs: {a: {dtype: i32, shape: [33]}, b: {dtype: i32, shape: [33]},\n"
	"         c: {dtype: i64, shape: [33]}, e: {dtype: i8, shape: [33]}, u: {dtype: u8, shape: [33]}}\n"
	"ops:\n"
	"  - {op: div, in: [a, b], out: t0}\n"
	"  - {op: rem, in: [t0, b], out: t1}\n"
	"  - {op: pow, in: [t1, b], out: t2}\n"
	"  - {op: max, in: [t2, a], out: t3}\n"
	"  - {op: abs, in: [t3], out: t4}\n"
	"  - {op: sign, in: [t4], out: t5}\n"
	"  - {op: relu, in: [t5], out: t6}\n"
	"  - {op: neg, in: [t6], out: t7}\n"
	"  - {op: mul_scalar, in: [c], scalar: 3, out: c1}\n"
	"  - {op: rem_scalar, in: [c1], scalar: 4, out: c2}\n"
	"  - {op: div, in: [e, e], out: e1}\n"
	"  - {op: min, in: [u, u], out: u1}\n"
	"  - {op: div, in: [u1, u], out: u2}\n"
	"  - {op: gt, in: [u2, u1], out: q}\n"
	"outputs: [t7, c2, e1, q]\n",
	/* views and broadcasting */
	"format: fusec-graph/1\n"
	"inputs: {a: {dtype: f32, shape: [4, 6]}, b: {dtype: f32, shape: [6, 4]},\n"
	"         c: {dtype: f32, shape: [1, 6]}, x: {dtype: f32, shape: [24]}}\n"
	"ops:\n"
	"  - {op: permute, in: [b], axes: [1, 0], out: p}\n"
	"  - {op: add, in: [a, p], out: t0}\n"
	"  - {op: expand, in: [c], shape: [4, 6], out: e}\n"
	"  - {op: mul, in: [t0, e], out: t1}\n"
	"  - {op: swap_dims, in: [t1], dims: [0, 1], out: t2}\n"
	"  - {op: slice, in: [t2], ranges: [[1, 5], [1, 3]], out: t3}\n"
	"  - {op: reshape, in: [x], shape: [4, 6], out: r}\n"
	"  - {op: sub, in: [t1, r], out: y}\n"
	"outputs: [y, t3]\n",
};

/* Every op of every graph as its own kernel, and each graph fused where possible. */
static void test_ptx_many_ops(void **state)
{
	(void)state;
	nptxas_runs = 0;
	for (size_t g = 0; g < sizeof ptx_graphs / sizeof ptx_graphs[0]; g++) {
		Rel r;
		rel_open(&r, ptx_graphs[g]);
		CgKernelSpec *s = calloc((size_t)r.nops + 1, sizeof *s);
		for (int i = 0; i < r.nops; i++)
			s[i] = rel_spec(&r, CG_KERNEL_SINGLE, i, 1);
		if (g != 3) {
			s[r.nops] = rel_spec(&r, CG_KERNEL_ELEMWISE, 0, r.nops);
			ptx_both(s, r.nops + 1);
		} else {
			ptx_both(s, r.nops);
		}
		free(s);
		rel_close(&r);
	}
	if (nptxas_runs == 0)
		skip();   /* no ptxas: the PTX was emitted and checked, not assembled */
}

static const char *const ptx_single_graph =
	"format: fusec-graph/1\n"
	"inputs: {a: {dtype: f32, shape: [2, 3, 4]}, b: {dtype: f32, shape: [1, 4, 5]},\n"
	"         h: {dtype: f16, shape: [6, 7]}, i: {dtype: i32, shape: [6, 7]},\n"
	"         ix: {dtype: i64, shape: [6, 3]}, img: {dtype: f32, shape: [2, 4, 9, 9]},\n"
	"         w: {dtype: f32, shape: [6, 2, 3, 3]}, bias: {dtype: f32, shape: [6]},\n"
	"         bh: {dtype: bf16, shape: [6, 7]}}\n"
	"ops:\n"
	"  - {op: matmul, in: [a, b], out: m}\n"
	"  - {op: sum, in: [h], axis: 1, out: r0}\n"
	"  - {op: mean, in: [h], axis: 0, out: r1}\n"
	"  - {op: prod, in: [i], axis: 1, out: r2}\n"
	"  - {op: max_dim, in: [bh], axis: 1, out: r3}\n"
	"  - {op: min_dim, in: [i], axis: 0, out: r4}\n"
	"  - {op: argmax, in: [h], axis: 1, out: r5}\n"
	"  - {op: argmin, in: [i], axis: 0, out: r6}\n"
	"  - {op: cat, in: [h, h, h], axis: 1, out: c0}\n"
	"  - {op: gather, in: [i, ix], axis: 1, out: g0}\n"
	"  - {op: conv2d, in: [img, w, bias], stride: [2, 1], padding: [1, 1], groups: 2, out: v0}\n"
	"  - {op: max_pool2d, in: [img], kernel: [3, 3], stride: [2, 2], padding: [1, 1], out: p0}\n"
	"  - {op: avg_pool2d, in: [img], kernel: [2, 2], out: p1}\n"
	"outputs: [m, r0, r1, r2, r3, r4, r5, r6, c0, g0, v0, p0, p1]\n";

static void test_ptx_single_families(void **state)
{
	(void)state;
	nptxas_runs = 0;
	Rel r;
	rel_open(&r, ptx_single_graph);
	CgKernelSpec *s = calloc((size_t)r.nops, sizeof *s);
	for (int i = 0; i < r.nops; i++)
		s[i] = rel_spec(&r, CG_KERNEL_SINGLE, i, 1);
	ptx_both(s, r.nops);
	free(s);
	rel_close(&r);
	if (nptxas_runs == 0)
		skip();
}

/* ---- tests: errors ----------------------------------------------------------------- */

/* A kernel calling llvm.exp.f32, built behind the builder's back. */
static void add_bad_kernel(CgModule *m, const char *callee)
{
	LLVMModuleRef mod = cg_module_llvm(m);
	LLVMContextRef c = LLVMGetModuleContext(mod);
	LLVMTypeRef f32 = LLVMFloatTypeInContext(c), ptr = LLVMPointerTypeInContext(c, 1);
	LLVMValueRef fn = LLVMAddFunction(mod, "bad", LLVMFunctionType(LLVMVoidTypeInContext(c), &ptr, 1, 0));
	LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
	LLVMTypeRef et = LLVMFunctionType(f32, &f32, 1, 0);
	LLVMValueRef ex = LLVMAddFunction(mod, callee, et);
	LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
	LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c, fn, "e"));
	LLVMValueRef v = LLVMBuildLoad2(b, f32, LLVMGetParam(fn, 0), "");
	v = LLVMBuildCall2(b, et, ex, &v, 1, "");
	LLVMBuildStore(b, v, LLVMGetParam(fn, 0));
	LLVMBuildRetVoid(b);
	LLVMDisposeBuilder(b);
}

static void test_backend_error_is_diag(void **state)
{
	(void)state;
	Arena *a = arena_new();
	Diag d;
	/* the check before emission names the culprit */
	CgOptions o = {CG_TARGET_NVPTX, "sm_90", NULL, "t", false, false, false};
	CgModule *m = cg_module_new(&o, a, &d);
	add_bad_kernel(m, "llvm.exp.f32");
	d.msg[0] = 0;
	assert_int_equal(cg_module_finish(m, &d), -1);
	assert_non_null(strstr(d.msg, "llvm.exp.f32"));
	cg_module_free(m);

	m = cg_module_new(&o, a, &d);
	add_bad_kernel(m, "expf");
	assert_int_equal(cg_module_finish(m, &d), -1);
	assert_non_null(strstr(d.msg, "'expf'"));
	cg_module_free(m);

	/* without the check, NVPTX's own error diagnostic fails the emission */
	o.no_call_check = true;
	m = cg_module_new(&o, a, &d);
	add_bad_kernel(m, "llvm.exp.f32");
	assert_int_equal(cg_module_finish(m, &d), 0);
	Buf ptx = {0};
	d.msg[0] = 0;
	assert_int_equal(cg_module_emit_ptx(m, &ptx, &d), -1);
	assert_non_null(strstr(d.msg, "LLVM error while emitting PTX"));
	assert_int_equal(ptx.len, 0);
	buf_free(&ptx);
	cg_module_free(m);

	/* a bad arch is refused before LLVM sees it */
	o.arch = "compute90";
	assert_null(cg_module_new(&o, a, &d));
	assert_non_null(strstr(d.msg, "compute90"));
	o.arch = "sm_999";
	assert_null(cg_module_new(&o, a, &d));
	assert_non_null(strstr(d.msg, "unknown arch 'sm_999'"));
	/* known to LLVM, older than the kernels need (shfl.sync) */
	o.arch = "sm_62";
	assert_null(cg_module_new(&o, a, &d));
	assert_non_null(strstr(d.msg, "arch 'sm_62' is older than the kernels need: the "
				"lowest supported is sm_70"));
	arena_free(a);
}

/* The emitted PTX calls nothing it does not define. */
static void test_no_unresolved_calls(void **state)
{
	(void)state;
	Rel r;
	rel_open(&r, ptx_graphs[0]);
	CgKernelSpec s = rel_spec(&r, CG_KERNEL_ELEMWISE, 0, r.nops);
	Buf ptx = {0};
	ptx_for(&s, 1, "sm_90", &ptx);
	assert_null(strstr(ptx.data, ".extern"));
	/* every call target is a .func of this file */
	for (const char *p = ptx.data; (p = strstr(p, "call")); p++) {
		if (strncmp(p, "call.uni", 8) && strncmp(p, "call ", 5))
			continue;
		const char *q = p;
		while (*q && *q != '\n' && *q != ',')
			q++;
		char name[128] = {0};
		if (*q == ',') {
			q++;
			while (*q == ' ' || *q == '\n' || *q == '\t')
				q++;
			size_t n = strcspn(q, ",; \n\t(");
			snprintf(name, sizeof name, ".func %.*s", (int)n, q);
			char alt[160];
			snprintf(alt, sizeof alt, ".func  (%s", name);
			bool defined = false;
			for (const char *f = ptx.data; (f = strstr(f, ".func")); f++) {
				const char *e = strchr(f, '\n');
				size_t len = e ? (size_t)(e - f) : strlen(f);
				char line[256];
				snprintf(line, sizeof line, "%.*s", (int)(len < 255 ? len : 255), f);
				if (strstr(line, name + 6))
					defined = true;
			}
			if (!defined)
				fail_msg("call to undefined %s", name + 6);
		}
	}
	buf_free(&ptx);
	rel_close(&r);
}

/* A written tensor of another rank than the others is refused with a Diag. */
static void test_unsupported_is_diag(void **state)
{
	(void)state;
	Rel r;
	rel_open(&r, "format: fusec-graph/1\n"
		     "inputs: {a: {dtype: f32, shape: [4, 6]}}\n"
		     "ops:\n"
		     "  - {op: exp, in: [a], out: t}\n"
		     "  - {op: reshape, in: [t], shape: [24], out: y}\n"
		     "outputs: [t, y]\n");
	Arena *a = arena_new();
	Diag d;
	CgOptions o = {CG_TARGET_NVPTX, "sm_90", NULL, "t", false, false, false};
	CgModule *m = cg_module_new(&o, a, &d);
	CgKernelSpec s = rel_spec(&r, CG_KERNEL_ELEMWISE, 0, 2);
	assert_null(cg_kernel(m, &s, &d));
	assert_non_null(strstr(d.msg, "not supported yet"));
	/* the module stays usable */
	CgKernelSpec s1 = rel_spec(&r, CG_KERNEL_SINGLE, 0, 1);
	assert_non_null(cg_kernel(m, &s1, &d));
	assert_int_equal(cg_module_finish(m, &d), 0);
	Buf ptx = {0};
	assert_int_equal(cg_module_emit_ptx(m, &ptx, &d), 0);
	check_ptx_text(ptx.data, 1);
	buf_free(&ptx);
	cg_module_free(m);
	arena_free(a);
	rel_close(&r);
}

/* ---- tests: host numbers ---------------------------------------------------------- */

static double floor_mod(double a, double b)
{
	double r = fmod(a, b);
	return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

/* f32 broadcasting, scalar, math; run with 1 and 3 host "threads". */
static void test_host_broadcast_math(void **state)
{
	(void)state;
	Rel r;
	rel_open(&r, "format: fusec-graph/1\n"
		     "inputs: {a: {dtype: f32, shape: [5, 1]}, b: {dtype: f32, shape: [1, 7]},\n"
		     "         m: {dtype: bool, shape: [5, 7]}}\n"
		     "ops:\n"
		     "  - {op: add, in: [a, b], out: t0}\n"
		     "  - {op: sub_scalar, in: [t0], scalar: 0.25, out: t1}\n"
		     "  - {op: relu, in: [t1], out: t2}\n"
		     "  - {op: tanh, in: [t0], out: t3}\n"
		     "  - {op: where, in: [m, t2, t3], out: t4}\n"
		     "  - {op: clamp, in: [t4], min: -0.5, max: 0.75, out: y}\n"
		     "  - {op: rem, in: [t0, b], out: z}\n"
		     "outputs: [y, z]\n");
	for (int parts = 1; parts <= 3; parts += 2) {
		Tensors ts;
		tensors_new(&ts, r.g, 11);
		host_fused(&r, &ts, CG_KERNEL_ELEMWISE, parts);
		HostTensor *A = tensor_named(&r, &ts, "a"), *B = tensor_named(&r, &ts, "b");
		HostTensor *M = tensor_named(&r, &ts, "m");
		double wy[35], wz[35];
		for (int i = 0; i < 5; i++)
			for (int j = 0; j < 7; j++) {
				double t0 = (float)(host_get(A, i) + host_get(B, j));
				double t2 = fmax(t0 - 0.25, 0), t3 = tanh(t0);
				double t4 = host_get(M, i * 7 + j) ? t2 : t3;
				wy[i * 7 + j] = fmin(fmax(t4, -0.5), 0.75);
				wz[i * 7 + j] = floor_mod(t0, host_get(B, j));
			}
		expect_close(tensor_named(&r, &ts, "y"), wy, 1e-6, 1e-5);
		expect_close(tensor_named(&r, &ts, "z"), wz, 1e-5, 1e-5);
		tensors_free(&ts);
	}
	rel_close(&r);
}

/* Contiguous kernels: the vector path plus the tail, and the misaligned fallback. */
static void test_host_vector_and_tail(void **state)
{
	(void)state;
	const char *dts[] = {"f32", "f16", "bf16", "f64", "i8"};
	for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
		char text[600];
		bool fl = strcmp(dts[k], "i8") != 0;
		snprintf(text, sizeof text,
			 "format: fusec-graph/1\n"
			 "inputs: {a: {dtype: %s, shape: [3, 23]}, b: {dtype: %s, shape: [3, 23]}}\n"
			 "ops:\n"
			 "  - {op: mul, in: [a, b], out: t0}\n"
			 "  - {op: %s, in: [t0, a], out: y}\n"
			 "  - {op: gt, in: [y, b], out: q}\n"
			 "outputs: [y, q]\n", dts[k], dts[k], fl ? "add" : "sub");
		Rel r;
		rel_open(&r, text);
		Tensors ts;
		tensors_new(&ts, r.g, 5 + k);
		host_fused(&r, &ts, CG_KERNEL_ELEMWISE, 2);
		HostTensor *A = tensor_named(&r, &ts, "a"), *B = tensor_named(&r, &ts, "b");
		HostTensor *Y = tensor_named(&r, &ts, "y"), *Q = tensor_named(&r, &ts, "q");
		double wy[69], wq[69];
		DType dt = A->dtype;
		for (int i = 0; i < 69; i++) {
			double a = host_get(A, i), b = host_get(B, i);
			if (fl) {
				double t0 = dt == DT_F64 ? a * b : (float)(a * b);
				wy[i] = t0 + a;
			} else {
				wy[i] = (double)host_wrap_int(DT_I8, (int64_t)(a * b) - (int64_t)a);
			}
			wq[i] = host_round(dt, wy[i]) > b;
		}
		double tol = dt == DT_F16 ? 1e-3 : dt == DT_BF16 ? 8e-3 : 1e-6;
		expect_close(Y, wy, tol, tol);
		/* q compares the unrounded value in f32: allow disagreement only at ties */
		for (int i = 0; i < 69; i++)
			if (host_get(Q, i) != wq[i] && fabs(host_round(dt, wy[i]) - host_get(B, i)) > tol)
				fail_msg("%s: q[%d] = %g, want %g", dts[k], i, host_get(Q, i), wq[i]);
		tensors_free(&ts);
		rel_close(&r);
	}
}

/* The same kernel on buffers that are not 16-byte aligned takes the scalar loop. */
static void test_host_misaligned(void **state)
{
	(void)state;
	Rel r;
	rel_open(&r, "format: fusec-graph/1\n"
		     "inputs: {a: {dtype: f32, shape: [37]}}\n"
		     "ops:\n"
		     "  - {op: mul_scalar, in: [a], scalar: 3, out: y}\n"
		     "outputs: [y]\n");
	Tensors ts;
	tensors_new(&ts, r.g, 3);
	HostTensor *A = tensor_named(&r, &ts, "a"), *Y = tensor_named(&r, &ts, "y");
	/* shift both buffers by one float */
	float *abuf = calloc(40, sizeof *abuf), *ybuf = calloc(40, sizeof *ybuf);
	memcpy(abuf + 1, A->data, 37 * sizeof(float));
	void *aold = A->data, *yold = Y->data;
	A->data = abuf + 1;
	Y->data = ybuf + 1;
	host_fused(&r, &ts, CG_KERNEL_ELEMWISE, 1);
	double want[37];
	for (int i = 0; i < 37; i++)
		want[i] = 3 * host_get(A, i);
	expect_close(Y, want, 0, 1e-7);
	assert_true(ybuf[0] == 0 && ybuf[38] == 0);
	A->data = aold;
	Y->data = yold;
	free(abuf);
	free(ybuf);
	tensors_free(&ts);
	rel_close(&r);
}

/* Integer semantics: division by zero, floored rem, wrapping pow, casts. */
static void test_host_integers(void **state)
{
	(void)state;
	Rel r;
	rel_open(&r, "format: fusec-graph/1\n"
		     "inputs: {a: {dtype: i32, shape: [50]}, b: {dtype: i32, shape: [50]},\n"
		     "         f: {dtype: f32, shape: [50]}}\n"
		     "ops:\n"
		     "  - {op: div, in: [a, b], out: q}\n"
		     "  - {op: rem, in: [a, b], out: m}\n"
		     "  - {op: pow, in: [a, b], out: p}\n"
		     "  - {op: mul_scalar, in: [f], scalar: 1e10, out: f1}\n"
		     "  - {op: cast, in: [f1], dtype: i32, out: c}\n"
		     "  - {op: cast, in: [a], dtype: u8, out: u}\n"
		     "  - {op: sign, in: [a], out: s}\n"
		     "outputs: [q, m, p, c, u, s]\n");
	Tensors ts;
	tensors_new(&ts, r.g, 9);
	host_single(&r, &ts, 1);
	HostTensor *A = tensor_named(&r, &ts, "a"), *B = tensor_named(&r, &ts, "b");
	HostTensor *F = tensor_named(&r, &ts, "f");
	int zeros = 0;
	for (int i = 0; i < 50; i++) {
		int64_t a = host_get_i64(A, i), b = host_get_i64(B, i);
		int64_t q = b ? a / b : 0, m = b ? a % b : 0;
		if (m != 0 && ((m < 0) != (b < 0)))
			m += b;
		int64_t p;
		if (b < 0)
			p = a == 1 ? 1 : a == -1 ? (b % 2 ? -1 : 1) : 0;
		else {
			p = 1;
			for (int k = 0; k < b; k++)
				p = host_wrap_int(DT_I32, p * a);
		}
		zeros += b == 0;
		assert_int_equal(host_get_i64(tensor_named(&r, &ts, "q"), i), q);
		assert_int_equal(host_get_i64(tensor_named(&r, &ts, "m"), i), m);
		assert_int_equal(host_get_i64(tensor_named(&r, &ts, "p"), i), p);
		double f1 = (float)(host_get(F, i) * 1e10);
		assert_int_equal(host_get_i64(tensor_named(&r, &ts, "c"), i), host_to_int(DT_I32, f1));
		assert_int_equal(host_get_i64(tensor_named(&r, &ts, "u"), i), host_wrap_int(DT_U8, a));
		assert_int_equal(host_get_i64(tensor_named(&r, &ts, "s"), i), (a > 0) - (a < 0));
	}
	assert_true(zeros > 0);   /* the seed does draw divisions by zero */
	tensors_free(&ts);
	rel_close(&r);
}

/* Views unfused (copy kernels) and fused into an elementwise kernel. */
static void test_host_views(void **state)
{
	(void)state;
	Rel r;
	rel_open(&r, ptx_graphs[3]);
	for (int fused = 0; fused < 2; fused++) {
		Tensors ts;
		tensors_new(&ts, r.g, 21);
		if (fused) {
			/* y and t3 have different shapes: y fused with its producers, t3 alone */
			CgKernelSpec s[2];
			s[0] = rel_spec(&r, CG_KERNEL_ELEMWISE, 0, 8);
			bool *w = ARENA_NEW(r.a, bool, r.nrel);
			for (int id = 0; id < r.nrel; id++)
				w[id] = !strcmp(r.g->tensors[r.rel2g[id]].name, "y") ||
					!strcmp(r.g->tensors[r.rel2g[id]].name, "t1");
			s[0].written = w;
			s[1] = rel_spec(&r, CG_KERNEL_ELEMWISE, 4, 2);
			host_run(&r, &ts, s, 2, 1);
		} else {
			host_single(&r, &ts, 1);
		}
		HostTensor *A = tensor_named(&r, &ts, "a"), *B = tensor_named(&r, &ts, "b");
		HostTensor *C = tensor_named(&r, &ts, "c"), *X = tensor_named(&r, &ts, "x");
		double t1[24], y[24], t3[8];
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 6; j++) {
				double t0 = (float)(host_get(A, i * 6 + j) + host_get(B, j * 4 + i));
				t1[i * 6 + j] = (float)(t0 * host_get(C, j));
				y[i * 6 + j] = t1[i * 6 + j] - host_get(X, i * 6 + j);
			}
		/* t2 = t1^T [6,4]; t3 = t2[1:5, 1:3] -> [4,2] */
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 2; j++)
				t3[i * 2 + j] = t1[(j + 1) * 6 + (i + 1)];
		expect_close(tensor_named(&r, &ts, "y"), y, 1e-6, 1e-6);
		expect_close(tensor_named(&r, &ts, "t3"), t3, 1e-6, 1e-6);
		tensors_free(&ts);
	}
	rel_close(&r);
}

/* Reductions, matmul, cat, gather, conv2d and pools, each as a single kernel. */
static void test_host_single_families(void **state)
{
	(void)state;
	Rel r;
	rel_open(&r, ptx_single_graph);
	Tensors ts;
	tensors_new(&ts, r.g, 17);
	/* gather indices must be in range for the reference: draw them in [0, 7) */
	HostTensor *IX = tensor_named(&r, &ts, "ix");
	for (int i = 0; i < 18; i++)
		host_set_i64(IX, i, (i * 5 + 3) % 7);
	host_single(&r, &ts, 2);

	HostTensor *A = tensor_named(&r, &ts, "a"), *B = tensor_named(&r, &ts, "b");
	double want[2 * 4 * 9 * 9 * 3];
	/* matmul [2,3,4] x [1,4,5] */
	for (int bt = 0; bt < 2; bt++)
		for (int i = 0; i < 3; i++)
			for (int j = 0; j < 5; j++) {
				double s = 0;
				for (int k = 0; k < 4; k++)
					s += host_get(A, bt * 12 + i * 4 + k) * host_get(B, k * 5 + j);
				want[bt * 15 + i * 5 + j] = s;
			}
	expect_close(tensor_named(&r, &ts, "m"), want, 1e-6, 1e-5);

	HostTensor *H = tensor_named(&r, &ts, "h"), *I = tensor_named(&r, &ts, "i");
	HostTensor *BH = tensor_named(&r, &ts, "bh");
	double w0[6], w3[6], w5[6], w1[7], w4[7], w6[7];
	int64_t w2[6];
	for (int i = 0; i < 6; i++) {
		double s = 0, mx = -INFINITY, best = -INFINITY;
		int64_t p = 1, arg = 0;
		for (int j = 0; j < 7; j++) {
			s += host_get(H, i * 7 + j);
			p *= host_get_i64(I, i * 7 + j);
			mx = fmax(mx, host_get(BH, i * 7 + j));
			if (host_get(H, i * 7 + j) > best) {
				best = host_get(H, i * 7 + j);
				arg = j;
			}
		}
		w0[i] = s;
		w2[i] = host_wrap_int(DT_I32, p);
		w3[i] = mx;
		w5[i] = (double)arg;
	}
	for (int j = 0; j < 7; j++) {
		double s = 0, mn = INFINITY;
		int64_t arg = 0;
		for (int i = 0; i < 6; i++) {
			s += host_get(H, i * 7 + j);
			if (host_get(I, i * 7 + j) < mn) {
				mn = host_get(I, i * 7 + j);
				arg = i;
			}
		}
		w1[j] = s / 6;
		w4[j] = mn;
		w6[j] = (double)arg;
	}
	expect_close(tensor_named(&r, &ts, "r0"), w0, 2e-3, 2e-3);
	expect_close(tensor_named(&r, &ts, "r1"), w1, 2e-3, 2e-3);
	for (int i = 0; i < 6; i++)
		assert_int_equal(host_get_i64(tensor_named(&r, &ts, "r2"), i), w2[i]);
	expect_close(tensor_named(&r, &ts, "r3"), w3, 0, 0);
	expect_close(tensor_named(&r, &ts, "r4"), w4, 0, 0);
	expect_close(tensor_named(&r, &ts, "r5"), w5, 0, 0);
	expect_close(tensor_named(&r, &ts, "r6"), w6, 0, 0);

	/* cat of h three times along axis 1 -> [6, 21] */
	for (int i = 0; i < 6; i++)
		for (int j = 0; j < 21; j++)
			want[i * 21 + j] = host_get(H, i * 7 + j % 7);
	expect_close(tensor_named(&r, &ts, "c0"), want, 0, 0);
	/* gather i along axis 1 with ix [6, 3] */
	for (int i = 0; i < 6; i++)
		for (int j = 0; j < 3; j++)
			want[i * 3 + j] = host_get(I, i * 7 + host_get_i64(IX, i * 3 + j));
	expect_close(tensor_named(&r, &ts, "g0"), want, 0, 0);

	/* conv2d: x [2,4,9,9], w [6,2,3,3], stride [2,1], padding [1,1], groups 2 -> [2,6,5,9] */
	HostTensor *X = tensor_named(&r, &ts, "img"), *W = tensor_named(&r, &ts, "w");
	HostTensor *BI = tensor_named(&r, &ts, "bias");
	for (int n = 0; n < 2; n++)
		for (int o = 0; o < 6; o++)
			for (int oh = 0; oh < 5; oh++)
				for (int ow = 0; ow < 9; ow++) {
					double s = host_get(BI, o);
					int g = o / 3;
					for (int c = 0; c < 2; c++)
						for (int kh = 0; kh < 3; kh++)
							for (int kw = 0; kw < 3; kw++) {
								int ih = oh * 2 - 1 + kh, iw = ow - 1 + kw;
								if (ih < 0 || ih >= 9 || iw < 0 || iw >= 9)
									continue;
								s += host_get(X, ((n * 4 + g * 2 + c) * 9 + ih) * 9 + iw) *
								     host_get(W, ((o * 2 + c) * 3 + kh) * 3 + kw);
							}
					want[((n * 6 + o) * 5 + oh) * 9 + ow] = s;
				}
	expect_close(tensor_named(&r, &ts, "v0"), want, 1e-5, 1e-5);
	/* max_pool2d k3 s2 p1 -> [2,4,5,5]; avg_pool2d k2 s2 -> [2,4,4,4] */
	for (int nc = 0; nc < 8; nc++)
		for (int oh = 0; oh < 5; oh++)
			for (int ow = 0; ow < 5; ow++) {
				double mx = -INFINITY;
				for (int kh = 0; kh < 3; kh++)
					for (int kw = 0; kw < 3; kw++) {
						int ih = oh * 2 - 1 + kh, iw = ow * 2 - 1 + kw;
						if (ih >= 0 && ih < 9 && iw >= 0 && iw < 9)
							mx = fmax(mx, host_get(X, (nc * 9 + ih) * 9 + iw));
					}
				want[(nc * 5 + oh) * 5 + ow] = mx;
			}
	expect_close(tensor_named(&r, &ts, "p0"), want, 0, 0);
	for (int nc = 0; nc < 8; nc++)
		for (int oh = 0; oh < 4; oh++)
			for (int ow = 0; ow < 4; ow++) {
				double s = 0;
				for (int kh = 0; kh < 2; kh++)
					for (int kw = 0; kw < 2; kw++)
						s += host_get(X, (nc * 9 + oh * 2 + kh) * 9 + ow * 2 + kw);
				want[(nc * 4 + oh) * 4 + ow] = s / 4;
			}
	expect_close(tensor_named(&r, &ts, "p1"), want, 1e-6, 1e-6);
	tensors_free(&ts);
	rel_close(&r);
}

/* A reduce block with ops fused on read and on write (softmax with its max, one
 * cooperative kernel), and a matmul with an epilogue; each one kernel. */
static void test_host_fused_reduce_matmul(void **state)
{
	(void)state;
	Rel r;
	rel_open(&r, "format: fusec-graph/1\n"
		     "inputs: {x: {dtype: f32, shape: [4, 10]}, a: {dtype: f32, shape: [4, 3]},\n"
		     "         b: {dtype: f32, shape: [3, 10]}}\n"
		     "ops:\n"
		     "  - {op: max_dim, in: [x], axis: 1, out: mx}\n"
		     "  - {op: sub, in: [x, mx], out: dx}\n"
		     "  - {op: exp, in: [dx], out: e}\n"
		     "  - {op: sum, in: [e], axis: 1, out: s}\n"
		     "  - {op: div, in: [e, s], out: y}\n"
		     "  - {op: matmul, in: [a, b], out: m}\n"
		     "  - {op: add, in: [m, x], out: m1}\n"
		     "  - {op: relu, in: [m1], out: z}\n"
		     "outputs: [y, s, z]\n");
	CgKernelSpec s[2] = {rel_spec(&r, CG_KERNEL_REDUCE, 0, 5), rel_spec(&r, CG_KERNEL_MATMUL, 5, 3)};

	/* the softmax kernel is a cooperative reduce kernel: rows of 10 take groups of 16
	 * threads, 16 rows a block, so the 4 rows are one block */
	Arena *a = arena_new();
	Diag d;
	CgOptions o = {CG_TARGET_NVPTX, "sm_90", NULL, "t", false, false, false};
	CgModule *m = cg_module_new(&o, a, &d);
	const CgKernel *k = cg_kernel(m, &s[0], &d);
	assert_non_null(k);
	assert_true(k->launch.coop);
	assert_false(k->vectorized);
	CgDims at;
	cg_launch_dims(k, r.dims, r.ndims, &at);
	assert_int_equal(at.block[0], 16);
	assert_int_equal(at.block[1], 16);
	assert_int_equal(at.grid[0], 1);
	assert_int_equal(at.scratch_bytes, 0);
	const CgKernel *km = cg_kernel(m, &s[1], &d);
	assert_non_null(km);
	assert_int_equal(km->launch.nwork, 2);
	cg_module_free(m);
	arena_free(a);
	ptx_both(s, 2);

	Tensors ts;
	tensors_new(&ts, r.g, 4);
	host_run(&r, &ts, s, 2, 3);
	HostTensor *X = tensor_named(&r, &ts, "x"), *A = tensor_named(&r, &ts, "a");
	HostTensor *B = tensor_named(&r, &ts, "b");
	double wy[40], wz[40], ws[4];
	for (int i = 0; i < 4; i++) {
		double mx = -INFINITY, sum = 0;
		for (int j = 0; j < 10; j++)
			mx = fmax(mx, host_get(X, i * 10 + j));
		for (int j = 0; j < 10; j++)
			sum += exp(host_get(X, i * 10 + j) - mx);
		ws[i] = sum;
		for (int j = 0; j < 10; j++) {
			wy[i * 10 + j] = exp(host_get(X, i * 10 + j) - mx) / sum;
			double mm = 0;
			for (int q = 0; q < 3; q++)
				mm += host_get(A, i * 3 + q) * host_get(B, q * 10 + j);
			wz[i * 10 + j] = fmax(mm + host_get(X, i * 10 + j), 0);
		}
	}
	expect_close(tensor_named(&r, &ts, "y"), wy, 1e-6, 1e-5);
	expect_close(tensor_named(&r, &ts, "s"), ws, 1e-6, 1e-5);
	expect_close(tensor_named(&r, &ts, "z"), wz, 1e-6, 1e-5);
	/* mx, e and m were never written */
	assert_true(host_get(tensor_named(&r, &ts, "mx"), 0) == 0);
	assert_true(host_get(tensor_named(&r, &ts, "e"), 0) == 0);
	assert_true(host_get(tensor_named(&r, &ts, "m"), 0) == 0);
	tensors_free(&ts);
	rel_close(&r);
}

/* The PTX module is deterministic byte for byte. */
static void test_deterministic(void **state)
{
	(void)state;
	Rel r;
	rel_open(&r, ptx_single_graph);
	CgKernelSpec *s = calloc((size_t)r.nops, sizeof *s);
	for (int i = 0; i < r.nops; i++)
		s[i] = rel_spec(&r, CG_KERNEL_SINGLE, i, 1);
	Buf p1 = {0}, p2 = {0};
	ptx_for(s, r.nops, "sm_90", &p1);
	ptx_for(s, r.nops, "sm_90", &p2);
	assert_int_equal(p1.len, p2.len);
	assert_memory_equal(p1.data, p2.data, p1.len);
	buf_free(&p1);
	buf_free(&p2);
	free(s);
	rel_close(&r);
}

const struct CMUnitTest codegen_tests[] = {
	cmocka_unit_test(test_reuse_same_kernel),
	cmocka_unit_test(test_fused_writes_only_output),
	cmocka_unit_test(test_ptx_many_ops),
	cmocka_unit_test(test_ptx_single_families),
	cmocka_unit_test(test_backend_error_is_diag),
	cmocka_unit_test(test_no_unresolved_calls),
	cmocka_unit_test(test_unsupported_is_diag),
	cmocka_unit_test(test_host_broadcast_math),
	cmocka_unit_test(test_host_vector_and_tail),
	cmocka_unit_test(test_host_misaligned),
	cmocka_unit_test(test_host_integers),
	cmocka_unit_test(test_host_views),
	cmocka_unit_test(test_host_single_families),
	cmocka_unit_test(test_host_fused_reduce_matmul),
	cmocka_unit_test(test_deterministic),
};
const size_t codegen_ntests = SUITE_COUNT(codegen_tests);
