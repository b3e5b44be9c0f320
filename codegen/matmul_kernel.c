/* matmul_kernel.c: the tiled matmul kernel (mm_tile_kernel; cg_matmul_tiled in
 * matmul_pick.c hands it the tile configurations): its storage, the loop over output
 * tiles with the K pipeline in two copies (both operands copied by whole chunks, or
 * not); tiny M takes the gemv loop (matmul_gemv.c). A stage's loads and compute
 * are matmul_stage.c's, the epilogue and the split-K combine matmul_epilogue.c's,
 * the rest the builder's primitives (matmul_tile.c).
 *
 * Structure, the same on both targets:
 *   - a block of MM_THREADS threads takes BM x BN output tiles in a block-stride
 *     loop over batch x tile rows x tile columns (tile rows grouped by 8 so that a
 *     wave of blocks shares operand tiles in L2);
 *   - K advances BK at a time through STAGES shared-memory stages: the A tile (BM x
 *     BK) and the B tile (BK x BN) are copied row-major in 16-byte chunks, each chunk
 *     at its column chunk XOR a few bits of its row (the swizzle: the 8 rows an
 *     ldmatrix or a column read touches fall in 8 different 16-byte bank groups;
 *     SIMT tiles are padded instead, mm_swz);
 *     out-of-range rows and columns are filled with zeros, so edges need no other
 *     test until the store. When the leading dimension is a multiple of 16 bytes and
 *     the buffer is 16-byte aligned (checked at run time per operand) a chunk is one
 *     cp.async of 16 bytes (zero-filled past the edge); otherwise it is assembled
 *     element by element;
 *   - each stage is multiplied into the accumulators by tensor cores (mma.sync:
 *     matmul_mma.c; wgmma: matmul_wgmma.c) or by SIMT FMAs (matmul_simt.c);
 *   - the epilogue runs in registers (matmul_epilogue.c).
 *
 * On the host (the `cpu` backend) a block's threads become loops: each stretch
 * between two barriers (a phase) runs as a loop over the thread ids, thread-private
 * accumulators live in an array indexed by thread id, shared memory is a stack
 * array with the same swizzled layout, cp.async is a plain copy, and the mma.sync
 * fragment is replaced by its scalar definition (matmul_mma.c): the thread's
 * accumulator at (row, col) of the warp tile gains sum_k A[row][k] * B[k][col] over
 * the stage, read from the same shared layout. So tile edges, swizzles,
 * fragment-to-element maps, batch broadcasting and epilogues are checked against the
 * interpreter without a GPU; ldmatrix's and mma's register layouts are checked by the
 * numeric check on the GPU (tests/bench/gpu/run_gpu.sh check).
 *
 * Operands may arrive through swap_dims / permute views (the Matmul fuser takes them
 * in front of the matmul): mm_operand_layout (matmul_stage.c) turns the view into
 * strides of the tensor it reads; an operand whose rows are contiguous (transposed)
 * is kept transposed in shared memory and read with the other ldmatrix form. Tiny M
 * (M <= 16) takes the gemv configurations (matmul_gemv.c); --allow-tf32 the tf32
 * configurations (matmul_mma.c). */
#include <stdlib.h>
#include <string.h>

#include "matmul.h"

/* ---- the tile loop ----------------------------------------------------------- */

static LLVMValueRef sreg(Mm *x, const char *name)
{
	return LLVMBuildZExt(x->b, mm_intrinsic(x, name, NULL, 0, NULL, 0), x->kb->m->t_i64, "");
}

static void tile_loop(Mm *x, LLVMValueRef block, LLVMValueRef nblocks, const int *wr, int nw)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	const MmConfig *c = x->c;
	/* tiles: batch x tile rows x tile columns, rows grouped by MM_GROUP_M */
	LLVMValueRef nb, ntm, ntn;
	LLVMValueRef per_batch = mm_tile_grid(x, &nb, &ntm, &ntn);
	LLVMValueRef total = mm_mul(x, nb, per_batch);
	LLVMValueRef nk = mm_ceil_div(x, x->K, c->bk);
	/* split-K (mm_split_share) over the K steps (empty shares sum zeros) */
	int S = c->split > 1 ? c->split : 1;
	LLVMValueRef kbeg = mm_i64c(x, 0);
	CgLoop lt_;
	int G = x->ngroup > 1 ? x->ngroup : 1;
	cg_loop_begin(kb, &lt_, block, mm_mul(x, total, mm_i64c(x, (int64_t)S * G)), nblocks);
	kb->nmemo = 0;
	LLVMValueRef t = lt_.i;
	LLVMBasicBlockRef skip = mm_group_units(x, &t, mm_mulc(x, total, S));
	LLVMValueRef split = NULL;
	if (S > 1) {
		LLVMValueRef kend;
		split = mm_split_share(x, &t, S, nk, &kbeg, &kend);
		LLVMValueRef has = mm_lt(x, kbeg, kend);
		nk = LLVMBuildSelect(x->b, has, LLVMBuildSub(x->b, kend, kbeg, ""), mm_i64c(x, 0), "");
	}
	mm_tile_at(x, t, per_batch, ntm, ntn);

	/* accumulators to zero */
	mm_phase_begin(x);
	for (int e = 0; e < x->nacc; e++)
		mm_acc_store(x, mm_i64c(x, e), LLVMConstReal(m->t_f32, 0));
	mm_phase_end(x);

	/* the K steps loaded ahead of the one computed: STAGES - 1, so that the stage
	 * refilled at step kt is the one read at kt - 1; wgmma on the GPU leaves its
	 * group of step kt in flight while step kt + 1 is issued (mm_wg_compute_gpu), so
	 * there the stage refilled is the one read at kt - 2 (but for 3xTF32, whose
	 * step waits for its products: matmul_wgmma.c) */
	int lead = x->gpu && c->wg && !c->x3 ? c->stages - 2 : c->stages - 1;
	/* prologue: stages 0 .. lead-1 */
	for (int s = 0; s < lead; s++) {
		LLVMBasicBlockRef bl = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "pro.load");
		LLVMBasicBlockRef bc = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "pro.commit");
		LLVMBuildCondBr(x->b, mm_lt(x, mm_i64c(x, s), nk), bl, bc);
		LLVMPositionBuilderAtEnd(x->b, bl);
		mm_load_stage(x, LLVMConstInt(x->ot, (unsigned long long)s * x->stage_bytes, 0),
			      mm_add(x, kbeg, mm_i64c(x, s)));
		LLVMBuildBr(x->b, bc);
		LLVMPositionBuilderAtEnd(x->b, bc);
		if (x->gpu)
			mm_intrinsic(x, "llvm.nvvm.cp.async.commit.group", NULL, 0, NULL, 0);
	}
	/* main loop: wait for stage kt, then refill the stage read at kt - 1 */
	CgLoop lk;
	cg_loop_begin(kb, &lk, mm_i64c(x, 0), nk, mm_i64c(x, 1));
	/* the stage read at this step and the one refilled (read at the step before) */
	LLVMValueRef rd = cg_carry(kb, &lk, LLVMConstInt(x->ot, 0, 0));
	LLVMValueRef wrs = cg_carry(kb, &lk, LLVMConstInt(x->ot, (unsigned long long)
					 lead * x->stage_bytes, 0));
	LLVMValueRef wrap = LLVMConstInt(x->ot, (unsigned long long)c->stages * x->stage_bytes, 0);
	if (x->gpu) {
		LLVMValueRef n = mm_i32c(x, lead - 1);
		mm_intrinsic(x, "llvm.nvvm.cp.async.wait.group", NULL, 0, &n, 1);
		if (c->wg && c->tf32)
			mm_wg_round_tf32(x, rd);
		/* wgmma reads the stage through the async proxy: the copies this
		 * thread saw land are ordered before it (then the barrier orders all) */
		if (c->wg)
			mm_asm_call(x, m->t_void, "fence.proxy.async.shared::cta;", "~{memory}", NULL, 0);
	}
	mm_barrier(x);
	LLVMValueRef kn = mm_add(x, lk.i, mm_i64c(x, lead));
	LLVMBasicBlockRef bl = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "main.load");
	LLVMBasicBlockRef bc = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "main.commit");
	LLVMBuildCondBr(x->b, mm_lt(x, kn, nk), bl, bc);
	LLVMPositionBuilderAtEnd(x->b, bl);
	mm_load_stage(x, wrs, mm_add(x, kbeg, kn));
	LLVMBuildBr(x->b, bc);
	LLVMPositionBuilderAtEnd(x->b, bc);
	if (x->gpu)
		mm_intrinsic(x, "llvm.nvvm.cp.async.commit.group", NULL, 0, NULL, 0);
	mm_compute_stage(x, rd);
	LLVMValueRef rn = mm_addc(x, rd, x->stage_bytes), wn = mm_addc(x, wrs, x->stage_bytes);
	cg_carry_next(kb, &lk, rd, LLVMBuildSelect(x->b, LLVMBuildICmp(x->b, LLVMIntEQ, rn, wrap, ""),
						   LLVMConstInt(x->ot, 0, 0), rn, ""));
	cg_carry_next(kb, &lk, wrs, LLVMBuildSelect(x->b, LLVMBuildICmp(x->b, LLVMIntEQ, wn, wrap, ""),
						    LLVMConstInt(x->ot, 0, 0), wn, ""));
	cg_loop_end(kb, &lk);
	if (x->gpu) {
		LLVMValueRef n = mm_i32c(x, 0);
		mm_intrinsic(x, "llvm.nvvm.cp.async.wait.group", NULL, 0, &n, 1);
	}
	if (x->gpu && c->wg)
		mm_wg_wait(x, 0);
	LLVMBasicBlockRef after = NULL;
	if (S > 1)
		after = mm_split_combine(x, mm_group_tile(x, t, total), split, mm_mulc(x, total, G));
	mm_epilogue(x, wr, nw);
	if (after) {
		LLVMBuildBr(x->b, after);
		LLVMPositionBuilderAtEnd(x->b, after);
	}
	/* nobody refills shared memory for the next tile before everyone is done */
	mm_barrier(x);
	mm_group_end(x);
	if (skip) {
		LLVMBuildBr(x->b, skip);
		LLVMPositionBuilderAtEnd(x->b, skip);
	}
	cg_loop_end(kb, &lt_);
}

/* Two copies of the tile loop: one where both operands are copied by whole chunks
 * (its registers and code hold nothing of the element path), one for the rest. */
static void both_loops(Mm *x, LLVMValueRef block, LLVMValueRef nblocks, const int *wr, int nw)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	/* a ws kernel copies by TMA, whatever the operands' chunks: one copy (the
	 * other was the same code again, a third of its LLVM time) */
	if (x->gpu && x->c->ws) {
		x->all_fast = true;
		mm_ws_tile_loop(x, block, nblocks, wr, nw);
		return;
	}
	LLVMBasicBlockRef bf = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "tiles.fast");
	LLVMBasicBlockRef bg = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "tiles.any");
	LLVMBasicBlockRef bd = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "tiles.done");
	/* (an NCHW conv's gathered operand is never copied whole: one copy) */
	bool one = x->is_conv && x->cv.gather && !x->cv.nhwc;
	if (one)
		LLVMBuildBr(x->b, bg);
	else
		LLVMBuildCondBr(x->b, LLVMBuildAnd(x->b, x->fast[0], x->fast[1], ""), bf, bg);
	for (int copy = one; copy < 2; copy++) {
		LLVMPositionBuilderAtEnd(x->b, copy ? bg : bf);
		x->all_fast = copy == 0;
		tile_loop(x, block, nblocks, wr, nw);
		LLVMBuildBr(x->b, bd);
	}
	if (one) {
		LLVMPositionBuilderAtEnd(x->b, bf);
		LLVMBuildUnreachable(x->b);
	}
	LLVMPositionBuilderAtEnd(x->b, bd);
}

/* Matmul x->gi of the siblings mem[] as the builder's (its second operand, its
 * output, the epilogue's vector test) and, into gwr, the tensors of wr its ops make
 * (those from its matmul up to the next one's); returns how many. */
static int member(Mm *x, const int *mem, const int *wr, int nw, int *gwr)
{
	CgKb *kb = x->kb;
	const CgKernelSpec *s = kb->spec;
	int g = x->gi, lo = mem[g], hi = g + 1 < x->ngroup ? mem[g + 1] : s->nops;
	x->op = &s->ops[lo];
	x->tb = &x->op->t[1];
	x->to = &x->op->t[x->op->nin];
	mm_operand_layout(x, s, lo, 1);
	x->cpr[1] = (x->trans[1] ? x->c->bk : x->c->bn) * x->es / 16;
	x->outer[1] = x->trans[1] ? x->c->bn : x->c->bk;
	x->fast[1] = mm_is_aligned16(x, 1);
	int n = 0;
	for (int k = 0; k < nw; k++)
		for (int i = lo; i < hi; i++)
			if (s->ops[i].t[s->ops[i].nin].id == wr[k]) {
				gwr[n++] = wr[k];
				break;
			}
	x->vecok = mm_vector_ok(x, gwr, n);
	return n;
}

/* The kernel of a tile configuration (not depthwise, not attention): the builder
 * state for the matmul or conv, the storage, then the tile loop by the
 * configuration's kind. */
int mm_tile_kernel(CgKb *kb, const MmConfig *cfg, const int *wr, int nw)
{
	CgModule *m = kb->m;
	Mm x0, *x = &x0;
	memset(x, 0, sizeof *x);
	x->kb = kb;
	x->b = kb->b;
	x->c = cfg;
	x->gpu = m->opt.target == CG_TARGET_NVPTX;
	int mi = cg_matmul_index(kb->spec);
	x->op = &kb->spec->ops[mi];
	x->is_conv = x->op->kind == OP_CONV2D;
	/* an NCHW conv's A is its weight (matmul_conv.c) */
	bool swap = x->is_conv && x->op->attr.layout == LAYOUT_NCHW;
	x->ta = &x->op->t[swap ? 1 : 0];
	x->tb = &x->op->t[swap ? 0 : 1];
	x->to = &x->op->t[x->op->nin];
	x->dt = (DType)x->ta->dtype;
	x->es = ir_dtype_size(x->dt);
	x->ce = 16 / x->es;
	x->rank = x->to->rank;
	const MmConfig *c = x->c;
	if (!mm_fits(c, x->dt, true))
		return cg_fail(kb, "internal: tile configuration %s does not fit %s", c->name,
			       ir_dtype_name(x->dt));
	/* (tf32 alone: convs only, as measured; 3xTF32 any matmul read so) */
	if (c->wg && c->tf32 && !(c->x3 ? mm_kmajor_at(kb->spec, mi) : mm_kmajor(x->op)))
		return cg_fail(kb, "internal: tile configuration %s takes only operands read "
			       "K-major (tf32 wgmma's one layout)", c->name);
	int r = x->rank;
	if (x->is_conv && !c->gemv) {
		mm_conv_setup(x);
	} else if (x->is_conv) {
		return cg_fail(kb, "internal: tile configuration %s does not take a conv", c->name);
	} else {
		x->M = cg_dim(kb, x->to->shape[r - 2]);
		x->N = cg_dim(kb, x->to->shape[r - 1]);
		x->K = cg_dim(kb, x->ta->shape[r - 1]);
		mm_operand_layout(x, kb->spec, mi, 0);
		mm_operand_layout(x, kb->spec, mi, 1);
	}
	x->cpr[0] = (x->trans[0] ? c->bm : c->bk) * x->es / 16;
	x->cpr[1] = (x->trans[1] ? c->bk : c->bn) * x->es / 16;
	x->outer[0] = x->trans[0] ? c->bk : c->bm;
	x->outer[1] = x->trans[1] ? c->bn : c->bk;
	x->panel = c->wg;
	x->padded = !c->tc && !c->gemv;
	x->opaque_copy = x->gpu && x->is_conv && c->wg && c->bn == 64 && !c->ws;
	x->a_bytes = mm_tile_bytes(c, x->es, 0);
	x->stage_bytes = (x->a_bytes + mm_tile_bytes(c, x->es, 1)) * (c->x3 ? 2 : 1);
	if (c->gemv) {
		/* the element path's sums, or the vector path's (a chunk of columns a
		 * thread: matmul_gemv.c) */
		x->gcols = c->bn / 32;
		x->nacc = c->bm * (x->gcols > x->ce ? x->gcols : x->ce);
	} else if (c->tc) {
		x->wtm = c->bm / c->wm;
		x->wtn = c->bn / c->wn;
		x->mi = x->wtm / 16;
		x->ni = x->wtn / 8;
		x->nacc = x->mi * x->ni * 4;
		if (x->gpu && c->pp) {
			/* a warpgroup holds the whole tile (mm_tc_pos) */
			x->mi = c->bm / 64;
			x->nacc = x->mi * x->ni * 4;
		}
	} else {
		x->rm = c->bm / 16;
		x->rn = c->bn / 16;
		x->nacc = x->rm * x->rn;
	}
	int smem_bytes = mm_smem(c, x->es);

	/* storage: shared memory and accumulators */
	LLVMBasicBlockRef entry = LLVMGetInsertBlock(x->b);
	LLVMTypeRef sty = LLVMArrayType(m->t_i8, (unsigned)smem_bytes);
	/* a conv's gather holds its per-tile tables (mm_conv_tile_cols) through the K
	 * loop: beside the 64 accumulators of a 128x128 SIMT tile they spilled there
	 * under the 128 registers of two blocks per SM (up to 136 bytes), so such a
	 * conv asks for none (the 64x64 tiles' 16 accumulators leave room) */
	bool tables = x->is_conv && x->cv.gather && !c->tc && x->nacc > 16;
	if (x->gpu && !tables)
		mm_min_blocks(kb, c->min_blocks);
	if (x->gpu) {
		LLVMValueRef g = mm_shared_global(kb, smem_bytes);
		x->smem = g;
		x->sptr = LLVMPointerTypeInContext(m->ctx, 3);
		x->ot = m->t_i32;
		x->sbase = LLVMBuildTrunc(x->b, LLVMBuildPtrToInt(x->b, g, m->t_i64, ""), m->t_i32, "");
		if (c->wg)   /* (mm_smem asked for the room) */
			mm_wg_align(x, g);
		/* 3xTF32: a stage's products in accumulators of their own after
		 * these, added to them in f32 (mm_wg_compute_gpu) */
		LLVMValueRef a = LLVMBuildAlloca(x->b, LLVMArrayType(m->t_f32,
						 (unsigned)x->nacc * (c->x3 ? 2 : 1)), "acc");
		x->acc = a;
		x->tid = sreg(x, "llvm.nvvm.read.ptx.sreg.tid.x");
	} else {
		LLVMValueRef sm = LLVMBuildAlloca(x->b, sty, "smem");
		LLVMSetAlignment(sm, 128);
		x->smem = sm;
		x->sptr = m->t_ptr;
		x->ot = m->t_i64;
		x->acc = LLVMBuildAlloca(x->b, LLVMArrayType(m->t_f32,
					 (unsigned)(x->nacc * MM_THREADS)), "acc");
	}
	(void)entry;
	LLVMValueRef block = x->gpu ? sreg(x, "llvm.nvvm.read.ptx.sreg.ctaid.x") : LLVMGetParam(kb->fn, 1);
	LLVMValueRef nblocks = x->gpu ? sreg(x, "llvm.nvvm.read.ptx.sreg.nctaid.x") : LLVMGetParam(kb->fn, 2);
	for (int w = 0; w < 2; w++)
		x->fast[w] = x->is_conv ? mm_conv_aligned16(x, w) : mm_is_aligned16(x, w);
	x->vecok = mm_vector_ok(x, wr, nw);
	x->epi_rows = c->bm;
	while (x->epi_rows * (c->bn + MM_EPI_PAD) * 4 > mm_stages_bytes(c, x->es))
		x->epi_rows /= 2;
	if (x->gpu && c->ws) {
		/* its own region past the stages: the copiers refill them meanwhile */
		x->epi_rows = mm_ws_epi_rows(c, x->es);
		x->epi_base = mm_stages_bytes(c, x->es);
	}
	/* siblings (mm_members): alike ones (the projections of a layer) in one tile
	 * loop, the buffers chosen per tile; else a tile loop for each matmul, one
	 * after the other, each with its second operand and its epilogue (member) */
	int mem[IR_MM_GROUP_MAX];
	x->ngroup = x->is_conv ? 1 : mm_members(kb->spec, mem);
	int *gwr = xmalloc(sizeof *gwr * (size_t)(nw ? nw : 1));
	if (x->ngroup > 1 && !c->gemv) {
		x->gmap = xmalloc(sizeof *x->gmap * (size_t)(x->ngroup * kb->ntensors));
		if (mm_alike(kb->spec, mem, x->ngroup, kb->ntensors, x->gmap)) {
			/* the copies by whole chunks and the vector stores where every
			 * matmul allows them */
			LLVMValueRef fast = NULL, vec = NULL;
			int gnw = 0;
			for (x->gi = x->ngroup - 1; x->gi >= 0; x->gi--) {
				gnw = member(x, mem, wr, nw, gwr);
				fast = fast ? LLVMBuildAnd(x->b, fast, x->fast[1], "") : x->fast[1];
				vec = vec ? LLVMBuildAnd(x->b, vec, x->vecok, "") : x->vecok;
			}
			x->fast[1] = fast;
			x->vecok = vec;
			x->gi = -1;
			x->gsaved = xmalloc(sizeof *x->gsaved * (size_t)kb->ntensors);
			both_loops(x, block, nblocks, gwr, gnw);
			free(x->gsaved);
			x->ngroup = 0;
		}
		free(x->gmap);
	}
	if (x->gpu && c->ws && x->ngroup > 1) {
		free(gwr);
		return cg_fail(kb, "internal: %s takes siblings only when alike", c->name);
	}
	for (x->gi = 0; x->gi < x->ngroup; x->gi++) {
		int gnw = nw;
		if (x->ngroup > 1)
			gnw = member(x, mem, wr, nw, gwr);
		const int *w = x->ngroup > 1 ? gwr : wr;
		if (c->gemv)
			mm_gemv_tile_loop(x, block, nblocks, w, gnw);
		else
			both_loops(x, block, nblocks, w, gnw);
	}
	free(gwr);
	free(x->cse);
	return kb->failed ? -1 : 0;
}
