/* matmul_ws.c: the warp-specialized, persistent tile loop of the wgmma
 * configurations `wg...ws` (sm_90a, on the GPU; the host runs their tiles as the
 * plain wgmma loop of matmul_kernel.c: the same tiles, stages and reduction order).
 *
 * The block has MM_WS_THREADS threads: warpgroups 0 and 1 multiply (each its 64
 * rows of the tile, as in matmul_wgmma.c), warpgroup 2 copies. The grid is at most
 * one block per SM (CG_MM_PERSIST); every block walks the same tiles as the plain
 * loop would, t = block, block + nblocks, ..., and both roles walk them in step.
 * The K steps of all the block's tiles form one sequence j = 0, 1, ...; step j
 * fills stage j % STAGES, so the stage ring runs on across tiles:
 *   - two mbarriers a stage in shared memory after the epilogue's region: full[s]
 *     (MM_WS_COPIERS arrivals: every copying thread, once its copies of the stage
 *     landed) and empty[s] (MM_THREADS arrivals: every multiplying thread, once the
 *     wgmma that read it completed). Round r = j / STAGES of stage s waits for
 *     phase parity r & 1 of full[s] (multiplying) and (r & 1) ^ 1 of empty[s]
 *     (copying: in round 0 that is the phase before the first, complete at init);
 *   - the copiers issue step j's cp.async (the chunks split over their 128
 *     threads), then wait for step j - WS_LAG (cp.async.wait_group WS_LAG),
 *     fence the async proxy (wgmma reads shared memory through it) and arrive on
 *     its full[]; after the last tile the last steps' arrivals follow. So WS_LAG + 1
 *     steps are in flight a thread, and the copiers run up to STAGES steps ahead
 *     of the multiplication, over a tile's end: the next tile's first stages load
 *     while the multiplying warpgroups run the epilogue;
 *   - the multipliers wait for full[] of step j, issue its wgmma group, wait until
 *     only it is in flight (so step j - 1's group is done) and arrive on step
 *     j - 1's empty[]; at a tile's end they wait for all and free the last. Then
 *     the epilogue, staged through its own region (Mm.epi_base) with the named
 *     barrier of their 256 threads (Mm.wsbar).
 * WS_LAG is STAGES - 2: the copiers wait at step j for the stage of step j - STAGES,
 * which the multipliers free at step j - STAGES + 1 once its full[] arrived, at
 * the copiers' step j - STAGES + 1 + WS_LAG: no later than j - 1. */
#include "matmul.h"

/* ---- mbarriers (32-bit shared addresses) ------------------------------------- */

static void mbar_init(Mm *x, LLVMValueRef a, int count)
{
	LLVMValueRef args[2] = {a, mm_i32c(x, count)};
	mm_asm_call(x, x->kb->m->t_void, "mbarrier.init.shared::cta.b64 [$0], $1;",
		    "r,r,~{memory}", args, 2);
}

static void mbar_arrive(Mm *x, LLVMValueRef a)
{
	mm_asm_call(x, x->kb->m->t_void, "mbarrier.arrive.shared::cta.b64 _, [$0];",
		    "r,~{memory}", &a, 1);
}

/* Wait until the phase of parity `parity` (i32) of the mbarrier at a completed. */
static void mbar_wait(Mm *x, LLVMValueRef a, LLVMValueRef parity)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	LLVMBasicBlockRef spin = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "mbar.wait");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "mbar.done");
	LLVMBuildBr(x->b, spin);
	LLVMPositionBuilderAtEnd(x->b, spin);
	LLVMValueRef args[2] = {a, parity};
	LLVMValueRef ok = mm_asm_call(x, m->t_i32,
		"{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2; "
		"selp.u32 $0, 1, 0, p; }", "=r,r,r,~{memory}", args, 2);
	LLVMBuildCondBr(x->b, LLVMBuildICmp(x->b, LLVMIntNE, ok, mm_i32c(x, 0), ""), done, spin);
	LLVMPositionBuilderAtEnd(x->b, done);
}

/* ---- the step sequence -------------------------------------------------------- */

typedef struct {
	LLVMValueRef jslot;       /* i32 alloca: the next step of the sequence */
	int bars;                 /* byte offset of full[0]; empty[s] STAGES later */
} Ws;

static LLVMValueRef entry_alloca(Mm *x, LLVMTypeRef t)
{
	LLVMBuilderRef b = LLVMCreateBuilderInContext(x->kb->m->ctx);
	LLVMBasicBlockRef e = LLVMGetEntryBasicBlock(x->kb->fn);
	LLVMValueRef first = LLVMGetFirstInstruction(e);
	if (first)
		LLVMPositionBuilderBefore(b, first);
	else
		LLVMPositionBuilderAtEnd(b, e);
	LLVMValueRef a = LLVMBuildAlloca(b, t, "ws.j");
	LLVMDisposeBuilder(b);
	return a;
}

/* The shared address of full[] (empty: false) or empty[] of step j's stage. */
static LLVMValueRef bar_of(Mm *x, const Ws *w, LLVMValueRef j, bool empty)
{
	LLVMValueRef s = LLVMBuildURem(x->b, j, mm_i32c(x, x->c->stages), "");
	LLVMValueRef off = mm_addc(x, mm_mulc(x, s, 8), w->bars + (empty ? x->c->stages * 8 : 0));
	return mm_saddr(x, off);
}

/* The parity of step j's round, flipped (the copiers' wait on empty[]) or not. */
static LLVMValueRef parity_of(Mm *x, LLVMValueRef j, bool flip)
{
	LLVMValueRef r = LLVMBuildUDiv(x->b, j, mm_i32c(x, x->c->stages), "");
	r = LLVMBuildAnd(x->b, r, mm_i32c(x, 1), "");
	return flip ? LLVMBuildXor(x->b, r, mm_i32c(x, 1), "") : r;
}

/* The byte offset (ot) of step j's stage. */
static LLVMValueRef stage_of(Mm *x, LLVMValueRef j)
{
	LLVMValueRef s = LLVMBuildURem(x->b, j, mm_i32c(x, x->c->stages), "");
	return mm_mulc(x, s, x->stage_bytes);
}

static void cp_wait(Mm *x, int n)
{
	LLVMValueRef v = mm_i32c(x, n);
	mm_intrinsic(x, "llvm.nvvm.cp.async.wait.group", NULL, 0, &v, 1);
}

/* The copiers' arrival for step p (i32) once its copies landed (the caller waited). */
static void landed(Mm *x, const Ws *w, LLVMValueRef p)
{
	mbar_arrive(x, bar_of(x, w, p, false));
}

/* ---- the two roles ------------------------------------------------------------- */

/* One tile's K steps, copying (copy) or multiplying; nk (i64) steps. */
static void tile_steps(Mm *x, const Ws *w, LLVMValueRef nk, bool copy)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	int lag = x->c->stages - 2;
	CgLoop lk;
	cg_loop_begin(kb, &lk, mm_i64c(x, 0), nk, mm_i64c(x, 1));
	LLVMValueRef j = LLVMBuildLoad2(x->b, m->t_i32, w->jslot, "");
	if (copy) {
		mbar_wait(x, bar_of(x, w, j, true), parity_of(x, j, true));
		mm_load_stage(x, stage_of(x, j), lk.i);
		mm_intrinsic(x, "llvm.nvvm.cp.async.commit.group", NULL, 0, NULL, 0);
		LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.landed");
		LLVMBasicBlockRef on = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.next");
		LLVMBuildCondBr(x->b, LLVMBuildICmp(x->b, LLVMIntUGE, j, mm_i32c(x, lag), ""), go, on);
		LLVMPositionBuilderAtEnd(x->b, go);
		cp_wait(x, lag);
		mm_asm_call(x, m->t_void, "fence.proxy.async.shared::cta;", "~{memory}", NULL, 0);
		landed(x, w, LLVMBuildSub(x->b, j, mm_i32c(x, lag), ""));
		LLVMBuildBr(x->b, on);
		LLVMPositionBuilderAtEnd(x->b, on);
	} else {
		mbar_wait(x, bar_of(x, w, j, false), parity_of(x, j, false));
		mm_compute_stage(x, stage_of(x, j));
		/* the group of the step before is done: its stage is free */
		LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.free");
		LLVMBasicBlockRef on = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.next");
		LLVMBuildCondBr(x->b, LLVMBuildICmp(x->b, LLVMIntSGT, lk.i, mm_i64c(x, 0), ""), go, on);
		LLVMPositionBuilderAtEnd(x->b, go);
		mbar_arrive(x, bar_of(x, w, LLVMBuildSub(x->b, j, mm_i32c(x, 1), ""), true));
		LLVMBuildBr(x->b, on);
		LLVMPositionBuilderAtEnd(x->b, on);
	}
	LLVMBuildStore(x->b, LLVMBuildAdd(x->b, j, mm_i32c(x, 1), ""), w->jslot);
	cg_loop_end(kb, &lk);
	if (copy)
		return;
	mm_wg_wait(x, 0);
	LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.last");
	LLVMBasicBlockRef on = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.epi");
	LLVMBuildCondBr(x->b, LLVMBuildICmp(x->b, LLVMIntSGT, nk, mm_i64c(x, 0), ""), go, on);
	LLVMPositionBuilderAtEnd(x->b, go);
	LLVMValueRef jn = LLVMBuildLoad2(x->b, m->t_i32, w->jslot, "");
	mbar_arrive(x, bar_of(x, w, LLVMBuildSub(x->b, jn, mm_i32c(x, 1), ""), true));
	LLVMBuildBr(x->b, on);
	LLVMPositionBuilderAtEnd(x->b, on);
}

/* One role's walk over the block's tiles. */
static void role(Mm *x, const Ws *w, LLVMValueRef block, LLVMValueRef nblocks, const int *wr,
		 int nw, bool copy)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	LLVMBuildStore(x->b, mm_i32c(x, 0), w->jslot);
	LLVMValueRef nb, ntm, ntn;
	LLVMValueRef per_batch = mm_tile_grid(x, &nb, &ntm, &ntn);
	LLVMValueRef total = mm_mul(x, nb, per_batch);
	LLVMValueRef nk = mm_ceil_div(x, x->K, x->c->bk);
	int G = x->ngroup > 1 ? x->ngroup : 1;
	CgLoop lt;
	cg_loop_begin(kb, &lt, block, mm_mul(x, total, mm_i64c(x, G)), nblocks);
	kb->nmemo = 0;
	LLVMValueRef t = lt.i;
	LLVMBasicBlockRef skip = mm_group_units(x, &t, total);
	mm_tile_at(x, t, per_batch, ntm, ntn);
	if (!copy) {
		for (int e = 0; e < x->nacc; e++)
			mm_acc_store(x, mm_i64c(x, e), LLVMConstReal(m->t_f32, 0));
	}
	tile_steps(x, w, nk, copy);
	if (!copy)
		mm_epilogue(x, wr, nw);
	mm_group_end(x);
	if (skip) {
		LLVMBuildBr(x->b, skip);
		LLVMPositionBuilderAtEnd(x->b, skip);
	}
	cg_loop_end(kb, &lt);
	if (!copy)
		return;
	/* the last steps' arrivals: every copy landed */
	int lag = x->c->stages - 2;
	cp_wait(x, 0);
	mm_asm_call(x, m->t_void, "fence.proxy.async.shared::cta;", "~{memory}", NULL, 0);
	LLVMValueRef j = LLVMBuildLoad2(x->b, m->t_i32, w->jslot, "");
	for (int i = lag; i >= 1; i--) {
		LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.drain");
		LLVMBasicBlockRef on = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.drained");
		LLVMBuildCondBr(x->b, LLVMBuildICmp(x->b, LLVMIntUGE, j, mm_i32c(x, i), ""), go, on);
		LLVMPositionBuilderAtEnd(x->b, go);
		landed(x, w, LLVMBuildSub(x->b, j, mm_i32c(x, i), ""));
		LLVMBuildBr(x->b, on);
		LLVMPositionBuilderAtEnd(x->b, on);
	}
}

/* The kernel's tile loop for a ws configuration on the GPU (in place of
 * matmul_kernel.c's tile_loop, in each of its two copies). */
void mm_ws_tile_loop(Mm *x, LLVMValueRef block, LLVMValueRef nblocks, const int *wr, int nw)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	const MmConfig *c = x->c;
	Ws w = {entry_alloca(x, m->t_i32),
		x->epi_base + x->epi_rows * (c->bn + MM_EPI_PAD) * 4};
	/* thread 0 sets the mbarriers up, then everyone may use them */
	LLVMBasicBlockRef bi = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.init");
	LLVMBasicBlockRef bs = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.split");
	LLVMBuildCondBr(x->b, LLVMBuildICmp(x->b, LLVMIntEQ, x->tid, mm_i64c(x, 0), ""), bi, bs);
	LLVMPositionBuilderAtEnd(x->b, bi);
	for (int s = 0; s < c->stages; s++) {
		mbar_init(x, mm_saddr(x, mm_i32c(x, w.bars + s * 8)), MM_WS_COPIERS);
		mbar_init(x, mm_saddr(x, mm_i32c(x, w.bars + (c->stages + s) * 8)), MM_THREADS);
	}
	LLVMBuildBr(x->b, bs);
	LLVMPositionBuilderAtEnd(x->b, bs);
	mm_intrinsic(x, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
	LLVMBasicBlockRef bm = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.multiply");
	LLVMBasicBlockRef bc = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.copy");
	LLVMBasicBlockRef bd = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.done");
	LLVMValueRef tid = x->tid;
	LLVMBuildCondBr(x->b, LLVMBuildICmp(x->b, LLVMIntULT, tid, mm_i64c(x, MM_THREADS), ""), bm, bc);

	LLVMPositionBuilderAtEnd(x->b, bm);
	x->wsbar = true;
	role(x, &w, block, nblocks, wr, nw, false);
	x->wsbar = false;
	LLVMBuildBr(x->b, bd);

	LLVMPositionBuilderAtEnd(x->b, bc);
	x->tid = LLVMBuildSub(x->b, tid, mm_i64c(x, MM_THREADS), "");
	x->ldn = MM_WS_COPIERS;
	role(x, &w, block, nblocks, wr, nw, true);
	x->ldn = 0;
	x->tid = tid;
	LLVMBuildBr(x->b, bd);

	LLVMPositionBuilderAtEnd(x->b, bd);
}
