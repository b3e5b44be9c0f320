/* test_coop.c: the cooperative-kernel builder (codegen/coop.h).
 *
 * One kernel is written against the builder: groups of G threads (block.x = G,
 * block.y = groups per block) sum a row each, f32 and i64 together, with
 * cg_coop_group_reduce (butterfly shuffles, then shared memory across warps); then
 * every thread passes a value to its neighbour through dynamic shared memory across a
 * barrier. The host lowering runs it at several geometries, whole and split over two
 * host threads, against sums computed here; the NVPTX lowering is verified and
 * assembled by ptxas for sm_90 and sm_80. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "../../codegen/cg_impl.h"
#include "../../codegen/jit.h"

#include <llvm-c/Analysis.h>

typedef void (*CoopFn)(void **args, int64_t thread, int64_t nthreads);

static void combine_add(CgCoop *c, LLVMValueRef *acc, const LLVMValueRef *o, void *ctx)
{
	(void)ctx;
	acc[0] = LLVMBuildFAdd(c->kb->b, acc[0], o[0], "");
	acc[1] = LLVMBuildAdd(c->kb->b, acc[1], o[1], "");
}

static LLVMValueRef at(CgKb *kb, LLVMTypeRef t, LLVMValueRef base, LLVMValueRef i)
{
	return LLVMBuildGEP2(kb->b, t, base, &i, 1, "");
}

/* params: x f32, xi i64, out f32, outi i64, rot f32, n (i64) */
static void build(CgModule *m)
{
	CgKb kb0, *kb = &kb0;
	memset(kb, 0, sizeof *kb);
	kb->m = m;
	kb->b = m->b;
	kb->ntensors = 5;
	kb->buf = calloc(6, sizeof *kb->buf);
	kb->dim = calloc(3, sizeof *kb->dim);
	kb->ndims = 2;
	CgParam ps[6] = {
		{CG_PARAM_BUFFER, 0, DT_F32, true, false}, {CG_PARAM_BUFFER, 1, DT_I64, true, false},
		{CG_PARAM_BUFFER, 2, DT_F32, false, true}, {CG_PARAM_BUFFER, 3, DT_I64, false, true},
		{CG_PARAM_BUFFER, 4, DT_F32, false, true}, {CG_PARAM_DIM, 1, DT_I64, false, false},
	};
	CgCoop c;
	cg_coop_function(kb, "coop_test", ps, 6, 1024, &c);
	LLVMBuilderRef b = kb->b;
	LLVMTypeRef f32 = m->t_f32, i64 = m->t_i64;
	LLVMValueRef n = kb->dim[1];
	LLVMValueRef G = c.ntid[0], R = c.ntid[1];
	CgVar v[2] = {cg_coop_var(&c, f32), cg_coop_var(&c, i64)};

	cg_coop_phase_begin(&c);
	LLVMValueRef g = LLVMBuildAdd(b, LLVMBuildMul(b, c.block, R, ""), c.tidx[1], "");
	LLVMValueRef base = LLVMBuildMul(b, g, n, "");
	CgLoop l;
	cg_loop_begin(kb, &l, c.tidx[0], n, G);
	LLVMValueRef s = cg_carry(kb, &l, LLVMConstReal(f32, 0));
	LLVMValueRef si = cg_carry(kb, &l, cg_i64(kb, 0));
	LLVMValueRef j = LLVMBuildAdd(b, base, l.i, "");
	cg_carry_next(kb, &l, s, LLVMBuildFAdd(b, s, LLVMBuildLoad2(b, f32, at(kb, f32, kb->buf[0], j), ""), ""));
	cg_carry_next(kb, &l, si, LLVMBuildAdd(b, si, LLVMBuildLoad2(b, i64, at(kb, i64, kb->buf[1], j), ""), ""));
	cg_loop_end(kb, &l);
	cg_coop_set(&c, v[0], s);
	cg_coop_set(&c, v[1], si);
	cg_coop_phase_end(&c);

	cg_coop_group_reduce(&c, v, 2, G, combine_add, NULL);

	/* every thread of the group holds the sum: the last one writes it */
	cg_coop_phase_begin(&c);
	g = LLVMBuildAdd(b, LLVMBuildMul(b, c.block, R, ""), c.tidx[1], "");
	LLVMBasicBlockRef w = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "w");
	LLVMBasicBlockRef wd = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "wd");
	LLVMValueRef last = LLVMBuildSub(b, G, cg_i64(kb, 1), "");
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, c.tidx[0], last, ""), w, wd);
	LLVMPositionBuilderAtEnd(b, w);
	LLVMBuildStore(b, cg_coop_get(&c, v[0]), at(kb, f32, kb->buf[2], g));
	LLVMBuildStore(b, cg_coop_get(&c, v[1]), at(kb, i64, kb->buf[3], g));
	LLVMBuildBr(b, wd);
	LLVMPositionBuilderAtEnd(b, wd);
	cg_coop_phase_end(&c);

	/* rot[block*T + t] = x[block*T + (t + 1) % T] through dynamic shared memory */
	LLVMValueRef dyn = cg_coop_dynamic_shared(&c);
	cg_coop_phase_begin(&c);
	LLVMValueRef gi = LLVMBuildAdd(b, LLVMBuildMul(b, c.block, c.nthreads, ""), c.tid, "");
	LLVMBuildStore(b, LLVMBuildLoad2(b, f32, at(kb, f32, kb->buf[0], gi), ""), at(kb, f32, dyn, c.tid));
	cg_coop_phase_end(&c);
	cg_coop_barrier(&c);
	cg_coop_phase_begin(&c);
	gi = LLVMBuildAdd(b, LLVMBuildMul(b, c.block, c.nthreads, ""), c.tid, "");
	LLVMValueRef nb = LLVMBuildURem(b, LLVMBuildAdd(b, c.tid, cg_i64(kb, 1), ""), c.nthreads, "");
	LLVMBuildStore(b, LLVMBuildLoad2(b, f32, at(kb, f32, dyn, nb), ""), at(kb, f32, kb->buf[4], gi));
	cg_coop_phase_end(&c);
	cg_coop_finish(&c);
	free(kb->buf);
	free(kb->dim);
	char *msg = NULL;
	if (LLVMVerifyModule(cg_module_llvm(m), LLVMReturnStatusAction, &msg))
		fail_msg("verify: %s", msg);
	LLVMDisposeMessage(msg);
}

static void run_geometry(CoopFn fn, int G, int R, int nblocks, int64_t n, int parts)
{
	int64_t groups = (int64_t)nblocks * R, T = (int64_t)G * R;
	int64_t nx = groups * n > nblocks * T ? groups * n : nblocks * T;
	float *x = malloc(sizeof *x * (size_t)nx);
	int64_t *xi = malloc(sizeof *xi * (size_t)nx);
	for (int64_t i = 0; i < nx; i++) {
		x[i] = (float)((i * 7) % 13) - 6;
		xi[i] = (i * 1000003) % 100000 - 50000 + ((int64_t)1 << 40);
	}
	float *out = calloc((size_t)groups, sizeof *out), *rot = calloc((size_t)(nblocks * T), sizeof *rot);
	int64_t *outi = calloc((size_t)groups, sizeof *outi);
	void *ptrs[5] = {x, xi, out, outi, rot};
	void *args[7];
	for (int i = 0; i < 5; i++)
		args[i] = &ptrs[i];
	args[5] = &n;
	int64_t geom[7] = {nblocks, 1, 1, G, R, 1, T * 4};
	args[6] = geom;
	for (int p = 0; p < parts; p++)
		fn(args, p, parts);
	for (int64_t g = 0; g < groups; g++) {
		double s = 0;
		int64_t si = 0;
		for (int64_t j = 0; j < n; j++) {
			s += x[g * n + j];
			si += xi[g * n + j];
		}
		if (out[g] != (float)s || outi[g] != si)
			fail_msg("G=%d R=%d n=%lld group %lld: %g %lld, want %g %lld", G, R, (long long)n,
				 (long long)g, out[g], (long long)outi[g], s, (long long)si);
	}
	for (int64_t bl = 0; bl < nblocks; bl++)
		for (int64_t t = 0; t < T; t++)
			assert_true(rot[bl * T + t] == x[bl * T + (t + 1) % T]);
	free(x);
	free(xi);
	free(out);
	free(outi);
	free(rot);
}

static void test_coop_host(void **state)
{
	(void)state;
	Arena *a = arena_new();
	Diag d;
	CgOptions o = {CG_TARGET_HOST, NULL, NULL, "coop", false, false, false};
	CgModule *m = cg_module_new(&o, a, &d);
	assert_non_null(m);
	build(m);
	if (cg_module_finish(m, &d))
		fail_msg("finish: %s", d.msg);
	LLVMModuleRef mod;
	LLVMContextRef ctx;
	assert_int_equal(cg_module_take(m, &mod, &ctx, &d), 0);
	CgJit *j = cg_jit_new(&d);
	assert_non_null(j);
	if (cg_jit_add_module(j, mod, ctx, &d))
		fail_msg("jit: %s", d.msg);
	void *f = cg_jit_lookup(j, "coop_test", &d);
	assert_non_null(f);
	CoopFn fn;
	memcpy(&fn, &f, sizeof f);
	static const int geo[][2] = {{1, 32}, {8, 32}, {32, 8}, {64, 2}, {256, 1}, {1024, 1}};
	static const int64_t ns[] = {1, 31, 33, 127, 1000};
	for (size_t gi = 0; gi < sizeof geo / sizeof *geo; gi++)
		for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
			run_geometry(fn, geo[gi][0], geo[gi][1], 3, ns[ni], 1 + (int)(ni % 2));
	cg_jit_free(j);
	cg_module_free(m);
	arena_free(a);
}

static void test_coop_ptx(void **state)
{
	(void)state;
	static const char *const archs[] = {"sm_90", "sm_80"};
	for (int ai = 0; ai < 2; ai++) {
		Arena *a = arena_new();
		Diag d;
		CgOptions o = {CG_TARGET_NVPTX, archs[ai], NULL, "coop", false, false, false};
		CgModule *m = cg_module_new(&o, a, &d);
		assert_non_null(m);
		build(m);
		if (cg_module_finish(m, &d))
			fail_msg("finish: %s", d.msg);
		Buf ptx = {0};
		if (cg_module_emit_ptx(m, &ptx, &d))
			fail_msg("emit: %s", d.msg);
		assert_non_null(strstr(ptx.data, "bar.sync"));
		assert_non_null(strstr(ptx.data, "shfl.sync.bfly"));
		assert_non_null(strstr(ptx.data, ".shared"));
		int rc = test_ptxas(ptx.data, archs[ai]);
		if (rc > 0) {
			fprintf(stderr, "%s\n", ptx.data);
			fail_msg("ptxas -arch=%s failed (status %d)", archs[ai], rc);
		}
		buf_free(&ptx);
		cg_module_free(m);
		arena_free(a);
	}
}

const struct CMUnitTest coop_tests[] = {
	cmocka_unit_test(test_coop_host),
	cmocka_unit_test(test_coop_ptx),
};
const size_t coop_ntests = sizeof coop_tests / sizeof coop_tests[0];
