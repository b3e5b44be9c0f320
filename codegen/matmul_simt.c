/* matmul_simt.c: the SIMT compute of a stage (f32 without tensor cores), and the
 * gemv configuration for tiny M, which has its own loop over output tiles.
 *
 * SIMT configurations (f32): 16 x 16 threads, each computing (BM/16) x (BN/16)
 * outputs with FMAs from shared memory (rows ty*4+i and 64 + ty*4+i, the same for
 * columns, so that B reads are 16-byte vectors); the same code on both targets.
 * Tiny M (M <= 16, every dtype and arch) takes the gemv configuration below. */
#include "matmul.h"

/* simt: the (row, col) in the block tile of accumulator e of thread tid. */
void mm_simt_pos(Mm *x, LLVMValueRef tid, int e, LLVMValueRef *row, LLVMValueRef *col)
{
	int i = e / x->rn, j = e % x->rn;
	LLVMValueRef tx = mm_uremc(x, tid, 16), ty = mm_udivc(x, tid, 16);
	*row = mm_add(x, mm_mul(x, ty, mm_i64c(x, 4)), mm_i64c(x, (i / 4) * 64 + i % 4));
	*col = mm_add(x, mm_mul(x, tx, mm_i64c(x, 4)), mm_i64c(x, (j / 4) * 64 + j % 4));
}

/* simt, both targets: FMAs from shared memory, B read as 4-float vectors. */
void mm_simt_compute(Mm *x, LLVMValueRef s)
{
	CgModule *m = x->kb->m;
	LLVMValueRef sa = mm_stage_off(x, s, 0), sb = mm_stage_off(x, s, 1);
	LLVMValueRef tid = mm_to_ot(x, mm_phase_begin(x));
	LLVMValueRef tx = mm_uremc(x, tid, 16), ty = mm_udivc(x, tid, 16);
	LLVMTypeRef v4 = LLVMVectorType(m->t_f32, 4);
	LLVMTypeRef f32 = m->t_f32;
	LLVMValueRef accv[64];
	for (int e = 0; e < x->nacc; e++)
		accv[e] = mm_acc_load(x, mm_i64c(x, e));
	for (int k = 0; k < x->c->bk; k++) {
		LLVMValueRef av[8], bv[8];
		LLVMValueRef kr = mm_cst(tid, k);
		for (int i = 0; i < x->rm; i++) {
			LLVMValueRef row = mm_addc(x, mm_mulc(x, ty, 4), (i / 4) * 64 + i % 4);
			av[i] = mm_smem_elem(x, 0, sa, row, kr);
		}
		for (int j = 0; j < x->rn && x->trans[1]; j++) {
			LLVMValueRef col = mm_addc(x, mm_mulc(x, tx, 4), (j / 4) * 64 + j % 4);
			bv[j] = mm_smem_elem(x, 1, sb, kr, col);
		}
		for (int j = 0; j < x->rn && !x->trans[1]; j += 4) {
			LLVMValueRef ch = mm_addc(x, tx, (j / 4) * 16);
			LLVMValueRef p = mm_smem_at(x, mm_add(x, sb, mm_swz(x, 1, kr, ch)));
			LLVMValueRef v = LLVMBuildLoad2(x->b, v4, p, "");
			LLVMSetAlignment(v, 16);
			for (int q = 0; q < 4; q++)
				bv[j + q] = LLVMBuildExtractElement(x->b, v, mm_i32c(x, q), "");
		}
		for (int i = 0; i < x->rm; i++)
			for (int j = 0; j < x->rn; j++) {
				LLVMValueRef args[3] = {av[i], bv[j], accv[i * x->rn + j]};
				accv[i * x->rn + j] = mm_intrinsic(x, "llvm.fmuladd.f32", &f32, 1,
								   args, 3);
			}
	}
	for (int e = 0; e < x->nacc; e++)
		mm_acc_store(x, mm_i64c(x, e), accv[e]);
	mm_phase_end(x);
}

/* ---- tiny M: the gemv configuration ---------------------------------------------
 *
 * A block takes BM (16) rows x BN (64) columns of the output. Thread (warp w, lane l)
 * owns columns 2l and 2l+1 of the tile for all BM rows and sums k = w, w + 8, w + 16
 * ... in order: B is read once, coalesced (a warp reads 64 consecutive columns of a
 * row of B), and the A element of a row is one broadcast load. Rows past M end the
 * thread's row loop early, so M = 1 costs one row. Then every warp writes its
 * partial tile to shared memory and the threads sum the 8 partials of each element
 * in warp order: the reduction order is fixed by the configuration alone (no
 * atomics, no dependence on block order), and the epilogue runs as for the other
 * tiles from the summed tile (MM_GEMV_COLS, MM_GEMV_WARPS: matmul.h). */

/* Element (row, col) of operand w of the current tile's batch, from global memory,
 * as f32 (row, col inside the operand). */
static LLVMValueRef gload(Mm *x, int w, LLVMValueRef row, LLVMValueRef col)
{
	CgModule *m = x->kb->m;
	LLVMValueRef off = mm_add(x, x->base[w], mm_add(x, mm_mul(x, row, x->ost[w][x->rank - 2]),
						 mm_mul(x, col, x->ost[w][x->rank - 1])));
	LLVMTypeRef rt = mm_raw_type(x);
	LLVMValueRef v = LLVMBuildLoad2(x->b, rt, LLVMBuildGEP2(x->b, rt, x->src[w], &off, 1, ""), "");
	LLVMSetAlignment(v, (unsigned)x->es);
	if (x->dt == DT_F32)
		return LLVMBuildBitCast(x->b, v, m->t_f32, "");
	if (x->dt == DT_F16)
		return LLVMBuildFPExt(x->b, LLVMBuildBitCast(x->b, v, m->t_f16, ""), m->t_f32, "");
	v = LLVMBuildShl(x->b, LLVMBuildZExt(x->b, v, m->t_i32, ""), mm_i32c(x, 16), "");
	return LLVMBuildBitCast(x->b, v, m->t_f32, "");
}

/* Byte offset of warp w's partial of tile element (row, col): after the staged tile. */
static LLVMValueRef gemv_partial(Mm *x, LLVMValueRef w, LLVMValueRef row, LLVMValueRef col)
{
	const MmConfig *c = x->c;
	int base = c->bm * (c->bn + MM_EPI_PAD) * 4;
	LLVMValueRef i = mm_add(x, mm_mulc(x, mm_add(x, mm_mulc(x, w, c->bm), row), c->bn), col);
	return mm_smem_at(x, mm_to_ot(x, mm_addc(x, mm_mulc(x, i, 4), base)));
}

void mm_gemv_tile_loop(Mm *x, LLVMValueRef block, LLVMValueRef nblocks, const int *wr, int nw)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	const MmConfig *c = x->c;
	LLVMValueRef nb, ntm, ntn;
	LLVMValueRef per_batch = mm_tile_grid(x, &nb, &ntm, &ntn);
	CgLoop lt_;
	cg_loop_begin(kb, &lt_, block, mm_mul(x, nb, per_batch), nblocks);
	kb->nmemo = 0;
	LLVMValueRef t = lt_.i;
	LLVMValueRef f = LLVMBuildUDiv(x->b, t, per_batch, "");
	LLVMValueRef within = LLVMBuildURem(x->b, t, per_batch, "");
	x->m0 = mm_mulc(x, LLVMBuildUDiv(x->b, within, ntn, ""), c->bm);
	x->n0 = mm_mulc(x, LLVMBuildURem(x->b, within, ntn, ""), c->bn);
	mm_tile_batch(x, f);
	LLVMValueRef rows = mm_min64(x, LLVMBuildSub(x->b, x->M, x->m0, ""), mm_i64c(x, c->bm));

	/* every thread: its columns of every row, over its share of K */
	LLVMValueRef tid = mm_phase_begin(x);
	LLVMValueRef warp = mm_udivc(x, tid, 32), lane = mm_uremc(x, tid, 32);
	for (int e = 0; e < x->nacc; e++)
		mm_acc_store(x, mm_i64c(x, e), LLVMConstReal(m->t_f32, 0));
	LLVMValueRef col[MM_GEMV_COLS], cok[MM_GEMV_COLS];
	for (int j = 0; j < MM_GEMV_COLS; j++) {
		col[j] = mm_add(x, x->n0, mm_addc(x, mm_mulc(x, lane, MM_GEMV_COLS), j));
		cok[j] = mm_lt(x, col[j], x->N);
	}
	CgLoop lk;
	cg_loop_begin(kb, &lk, warp, x->K, mm_i64c(x, MM_GEMV_WARPS));
	LLVMValueRef bv[MM_GEMV_COLS];
	for (int j = 0; j < MM_GEMV_COLS; j++) {
		LLVMValueRef cc = LLVMBuildSelect(x->b, cok[j], col[j], mm_i64c(x, 0), "");
		bv[j] = LLVMBuildSelect(x->b, cok[j], gload(x, 1, lk.i, cc),
					LLVMConstReal(m->t_f32, 0), "");
	}
	LLVMBasicBlockRef bend = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "gemv.rows");
	for (int i = 0; i < c->bm; i++) {
		LLVMBasicBlockRef brow = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "gemv.row");
		LLVMBuildCondBr(x->b, mm_lt(x, mm_i64c(x, i), rows), brow, bend);
		LLVMPositionBuilderAtEnd(x->b, brow);
		LLVMValueRef a = gload(x, 0, mm_addc(x, x->m0, i), lk.i);
		for (int j = 0; j < MM_GEMV_COLS; j++) {
			LLVMValueRef e = mm_i64c(x, i * MM_GEMV_COLS + j);
			LLVMValueRef args[3] = {a, bv[j], mm_acc_load(x, e)};
			mm_acc_store(x, e, mm_intrinsic(x, "llvm.fmuladd.f32", &m->t_f32, 1, args, 3));
		}
	}
	LLVMBuildBr(x->b, bend);
	LLVMPositionBuilderAtEnd(x->b, bend);
	cg_loop_end(kb, &lk);
	/* the partial tile of this warp */
	for (int i = 0; i < c->bm; i++)
		for (int j = 0; j < MM_GEMV_COLS; j++) {
			LLVMValueRef p = gemv_partial(x, warp, mm_i64c(x, i),
						      mm_addc(x, mm_mulc(x, lane, MM_GEMV_COLS), j));
			LLVMValueRef v = mm_acc_load(x, mm_i64c(x, i * MM_GEMV_COLS + j));
			LLVMSetAlignment(LLVMBuildStore(x->b, v, p), 4);
		}
	mm_phase_end(x);
	mm_barrier(x);

	/* the 8 partials of every element, summed in warp order, staged */
	tid = mm_phase_begin(x);
	for (int q0 = 0; q0 < c->bm * c->bn; q0 += MM_THREADS) {
		LLVMValueRef q = mm_addc(x, tid, q0);
		LLVMValueRef row = mm_udivc(x, q, c->bn), cc = mm_uremc(x, q, c->bn);
		LLVMValueRef sum = NULL;
		for (int w = 0; w < MM_GEMV_WARPS; w++) {
			LLVMValueRef v = LLVMBuildLoad2(x->b, m->t_f32,
							gemv_partial(x, mm_i64c(x, w), row, cc), "");
			LLVMSetAlignment(v, 4);
			sum = sum ? LLVMBuildFAdd(x->b, sum, v, "") : v;
		}
		LLVMSetAlignment(LLVMBuildStore(x->b, sum, mm_staged(x, row, cc)), 4);
	}
	mm_phase_end(x);
	mm_barrier(x);
	mm_epi_walk(x, 0, wr, nw);
	/* nobody writes the partials of the next tile before everyone is done */
	mm_barrier(x);
	cg_loop_end(kb, &lt_);
}
