/* matmul_mma.c: the tensor-core compute of a stage with mma.sync, on the GPU
 * (ldmatrix and mma.sync) and on the host (the scalar definition of the same
 * fragments), and the map from a thread's accumulators to the block tile.
 *
 * Tensor-core configurations (f16, bf16): 8 warps in a WM x WN grid, each warp
 * computing (BM/WM) x (BN/WN) with mma.sync m16n8k16 (f32 accumulators), its A
 * fragments read with ldmatrix.x4 and its B fragments with ldmatrix.x4.trans (an
 * operand kept transposed in shared memory is read with the other form).
 * --allow-tf32 takes the tf32 configurations (mma.sync m16n8k8, operands rounded by
 * cvt.rna.tf32.f32, the host rounding the same way before the scalar fragment).
 *
 * mm_tc_pos gives the (row, column) of an accumulator in the block tile; the
 * epilogue reads the accumulators through it, and wgmma's accumulators have the same
 * layout with a warp grid of 8 x 1 (matmul_wgmma.c). On the host (mm_tc_compute_host)
 * the thread's accumulator at (row, col) of the warp tile gains sum_k A[row][k] *
 * B[k][col] over the stage, so ldmatrix's and mma's register layouts are checked on
 * the GPU only (tests/bench/gpu/run_gpu.sh check). */
#include "matmul.h"

/* ldmatrix .x4 (trans for B) at a 32-bit shared address: four b32 registers */
static LLVMValueRef ldmatrix4(Mm *x, LLVMValueRef addr, bool trans)
{
	CgModule *m = x->kb->m;
	LLVMTypeRef el[4] = {m->t_i32, m->t_i32, m->t_i32, m->t_i32};
	LLVMTypeRef st = LLVMStructTypeInContext(m->ctx, el, 4, 0);
	return mm_asm_call(x, st, trans ?
		"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {$0, $1, $2, $3}, [$4];" :
		"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {$0, $1, $2, $3}, [$4];",
		"=r,=r,=r,=r,r,~{memory}", &addr, 1);
}

/* tf32 (round to nearest, ties away from zero: cvt.rna.tf32.f32) of the f32 v, as the
 * f32 it stands for: GPU the conversion instruction, host its definition (the 13 low
 * mantissa bits rounded off; infinities and NaNs kept). */
LLVMValueRef mm_to_tf32(Mm *x, LLVMValueRef v)
{
	CgModule *m = x->kb->m;
	if (x->gpu) {
		LLVMValueRef r = mm_intrinsic(x, "llvm.nvvm.f2tf32.rna", NULL, 0, &v, 1);
		return LLVMBuildBitCast(x->b, r, m->t_f32, "");
	}
	LLVMValueRef bits = LLVMBuildBitCast(x->b, v, m->t_i32, "");
	LLVMValueRef exp = LLVMBuildAnd(x->b, bits, mm_i32c(x, 0x7f800000), "");
	LLVMValueRef special = LLVMBuildICmp(x->b, LLVMIntEQ, exp, mm_i32c(x, 0x7f800000), "");
	LLVMValueRef r = LLVMBuildAnd(x->b, mm_add(x, bits, mm_i32c(x, 0x1000)),
				      LLVMConstInt(m->t_i32, 0xffffe000u, 0), "");
	r = LLVMBuildSelect(x->b, special, bits, r, "");
	return LLVMBuildBitCast(x->b, r, m->t_f32, "");
}

/* tc: the (row, col) in the block tile of accumulator e of thread tid. */
void mm_tc_pos(Mm *x, LLVMValueRef tid, LLVMValueRef e, LLVMValueRef *row, LLVMValueRef *col)
{
	LLVMValueRef lane = mm_uremc(x, tid, 32), warp = mm_udivc(x, tid, 32);
	if (x->gpu && x->c->pp) {
		/* ping-pong (matmul_ws.c): a warpgroup's 128 threads hold the whole
		 * tile, half h (rows 64h..) in accumulators h * ni * 4.., each half
		 * wgmma's m64 layout: warp w rows 16w..16w+15 */
		LLVMValueRef h = mm_udivc(x, e, (int64_t)x->ni * 4);
		LLVMValueRef n8 = mm_uremc(x, mm_udivc(x, e, 4), x->ni), q = mm_uremc(x, e, 4);
		*row = mm_add(x, mm_add(x, mm_mulc(x, h, 64), mm_mulc(x, warp, 16)),
			      mm_add(x, mm_udivc(x, lane, 4), mm_mulc(x, mm_udivc(x, q, 2), 8)));
		*col = mm_add(x, mm_mulc(x, n8, 8),
			      mm_add(x, mm_mulc(x, mm_uremc(x, lane, 4), 2), mm_uremc(x, q, 2)));
		return;
	}
	LLVMValueRef wmi = mm_udivc(x, warp, x->c->wn), wni = mm_uremc(x, warp, x->c->wn);
	LLVMValueRef mi = mm_udivc(x, e, (int64_t)x->ni * 4);
	LLVMValueRef ni = mm_uremc(x, mm_udivc(x, e, 4), x->ni);
	LLVMValueRef cc = mm_uremc(x, e, 4);
	*row = mm_add(x, mm_add(x, mm_mul(x, wmi, mm_i64c(x, x->wtm)), mm_mul(x, mi, mm_i64c(x, 16))),
		      mm_add(x, mm_udivc(x, lane, 4), mm_mul(x, mm_udivc(x, cc, 2), mm_i64c(x, 8))));
	*col = mm_add(x, mm_add(x, mm_mul(x, wni, mm_i64c(x, x->wtn)), mm_mul(x, ni, mm_i64c(x, 8))),
		      mm_add(x, mm_mul(x, mm_uremc(x, lane, 4), mm_i64c(x, 2)), mm_uremc(x, cc, 2)));
}

/* tc on the GPU: ldmatrix and mma.sync over the stage. */
void mm_tc_compute_gpu(Mm *x, LLVMValueRef s)
{
	CgModule *m = x->kb->m;
	const MmConfig *c = x->c;
	LLVMValueRef tid = mm_to_ot(x, x->tid);
	LLVMValueRef lane = mm_uremc(x, tid, 32), warp = mm_udivc(x, tid, 32);
	LLVMValueRef wmi = mm_udivc(x, warp, c->wn), wni = mm_uremc(x, warp, c->wn);
	LLVMValueRef l8 = mm_uremc(x, lane, 8);
	LLVMValueRef j1 = mm_mulc(x, mm_uremc(x, mm_udivc(x, lane, 8), 2), 8);  /* (j&1)*8 */
	LLVMValueRef j2 = mm_udivc(x, lane, 16);                           /* j>>1 */
	LLVMValueRef sa = mm_saddr(x, mm_stage_off(x, s, 0)), sb = mm_saddr(x, mm_stage_off(x, s, 1));
	LLVMTypeRef h2 = LLVMVectorType(m->t_f16, 2);
	/* mi up to 8, ni up to 32 (the attention's O at head dim 256) */
	LLVMValueRef afr[8][4], bfr[32][2];
	if (x->mi > 8 || x->ni > 32)
		die("internal: %s: %d x %d fragments a warp", c->name, x->mi, x->ni);
	/* tf32 (m16n8k8): a fragment element is one f32, an ldmatrix 8x8 b16 matrix
	 * is 8 x 4 of them, which gives A's fragment (row lane/4, k lane%4) from an
	 * m x k tile and B's (k lane%4, n lane/4) from an n x k tile; ldmatrix cannot
	 * transpose 32-bit elements, so the other two layouts load fragments element by
	 * element */
	LLVMValueRef g = mm_udivc(x, lane, 4), t4 = mm_uremc(x, lane, 4);
	LLVMValueRef ssa = mm_stage_off(x, s, 0), ssb = mm_stage_off(x, s, 1);
	int kstep = c->tf32 ? 8 : 16;
	for (int kk = 0; kk < c->bk / kstep; kk++) {
		if (c->tf32 && x->trans[0]) {
			for (int mi = 0; mi < x->mi; mi++)
				for (int q = 0; q < 4; q++) {
					LLVMValueRef row = mm_add(x, mm_addc(x, mm_mulc(x, wmi, x->wtm),
								  mi * 16 + (q % 2) * 8), g);
					LLVMValueRef col = mm_addc(x, t4, kk * 8 + (q / 2) * 4);
					afr[mi][q] = LLVMBuildBitCast(x->b,
						mm_smem_elem(x, 0, ssa, row, col), m->t_i32, "");
				}
		}
		if (c->tf32 && !x->trans[1]) {
			for (int ni = 0; ni < x->ni; ni++)
				for (int q = 0; q < 2; q++) {
					LLVMValueRef col = mm_add(x, mm_addc(x, mm_mulc(x, wni, x->wtn),
									     ni * 8), g);
					LLVMValueRef row = mm_addc(x, t4, kk * 8 + q * 4);
					bfr[ni][q] = LLVMBuildBitCast(x->b,
						mm_smem_elem(x, 1, ssb, row, col), m->t_i32, "");
				}
		}
		/* A fragments: the four 8x8 matrices (rows 0-7 | 8-15) x (k 0-7 | 8-15),
		 * lanes 8q..8q+7 giving the rows of matrix q; stored transposed (k x m)
		 * they are read as k rows and transposed by ldmatrix */
		for (int mi = 0; mi < x->mi && !(c->tf32 && x->trans[0]); mi++) {
			LLVMValueRef mrow = mm_addc(x, mm_mulc(x, wmi, x->wtm), mi * 16);
			LLVMValueRef row, ch;
			if (x->trans[0]) {
				row = mm_add(x, mm_addc(x, mm_mulc(x, j2, 8), kk * 16), l8);
				ch = mm_add(x, mm_udivc(x, mrow, 8), mm_udivc(x, j1, 8));
			} else {
				row = mm_add(x, mrow, mm_add(x, l8, j1));
				ch = mm_addc(x, j2, kk * 2);
			}
			LLVMValueRef r = ldmatrix4(x, mm_add(x, sa, mm_swz(x, 0, row, ch)),
						   x->trans[0]);
			for (int q = 0; q < 4; q++)
				afr[mi][q] = LLVMBuildExtractValue(x->b, r, (unsigned)q, "");
		}
		/* B fragments of two n8 tiles: matrices (k 0-7, n 0-7), (k 8-15, n 0-7),
		 * (k 0-7, n 8-15), (k 8-15, n 8-15); stored k x n they are transposed by
		 * ldmatrix, stored transposed (n x k) they are read as they are */
		for (int nj = 0; nj < x->ni / 2 && !(c->tf32 && !x->trans[1]); nj++) {
			LLVMValueRef ncol = mm_addc(x, mm_mulc(x, wni, x->wtn), nj * 16);
			LLVMValueRef row, ch;
			if (x->trans[1]) {
				row = mm_add(x, mm_add(x, ncol, mm_mulc(x, j2, 8)), l8);
				ch = mm_addc(x, mm_udivc(x, j1, 8), kk * 2);
			} else {
				row = mm_addc(x, mm_add(x, l8, j1), kk * 16);
				ch = mm_add(x, mm_udivc(x, ncol, 8), j2);
			}
			LLVMValueRef r = ldmatrix4(x, mm_add(x, sb, mm_swz(x, 1, row, ch)),
						   !x->trans[1]);
			for (int q = 0; q < 4; q++)
				bfr[2 * nj + q / 2][q % 2] = LLVMBuildExtractValue(x->b, r, (unsigned)q,
										   "");
		}
		for (int mi = 0; mi < x->mi; mi++)
			for (int ni = 0; ni < x->ni; ni++) {
				LLVMValueRef args[10];
				for (int q = 0; q < 4; q++)
					args[q] = afr[mi][q];
				args[4] = bfr[ni][0];
				args[5] = bfr[ni][1];
				if (x->dt == DT_F16)
					for (int q = 0; q < 6; q++)
						args[q] = LLVMBuildBitCast(x->b, args[q], h2, "");
				if (c->tf32)
					for (int q = 0; q < 6; q++)
						args[q] = LLVMBuildBitCast(x->b, mm_to_tf32(x,
							LLVMBuildBitCast(x->b, args[q], m->t_f32, "")),
							m->t_i32, "");
				int e0 = (mi * x->ni + ni) * 4;
				for (int q = 0; q < 4; q++)
					args[6 + q] = mm_acc_load(x, mm_i64c(x, e0 + q));
				LLVMValueRef r = mm_intrinsic(x, c->tf32 ?
					"llvm.nvvm.mma.m16n8k8.row.col.tf32" : x->dt == DT_F16 ?
					"llvm.nvvm.mma.m16n8k16.row.col.f32.f32" :
					"llvm.nvvm.mma.m16n8k16.row.col.bf16", NULL, 0, args, 10);
				for (int q = 0; q < 4; q++)
					mm_acc_store(x, mm_i64c(x, e0 + q),
						     LLVMBuildExtractValue(x->b, r, (unsigned)q, ""));
			}
	}
}

/* tc on the host: the scalar definition of the same fragments. */
void mm_tc_compute_host(Mm *x, LLVMValueRef s)
{
	CgKb *kb = x->kb;
	LLVMValueRef sa = mm_stage_off(x, s, 0), sb = mm_stage_off(x, s, 1);
	LLVMValueRef tid = mm_phase_begin(x);
	CgLoop le, lk;
	cg_loop_begin(kb, &le, mm_i64c(x, 0), mm_i64c(x, x->nacc), mm_i64c(x, 1));
	LLVMValueRef row, col;
	mm_tc_pos(x, tid, le.i, &row, &col);
	cg_loop_begin(kb, &lk, mm_i64c(x, 0), mm_i64c(x, x->c->bk), mm_i64c(x, 1));
	LLVMValueRef sum = cg_carry(kb, &lk, LLVMConstReal(kb->m->t_f32, 0));
	LLVMValueRef a = mm_smem_elem(x, 0, sa, row, lk.i);
	LLVMValueRef bv = mm_smem_elem(x, 1, sb, lk.i, col);
	LLVMValueRef next = sum;
	if (x->c->x3) {
		/* 3xTF32 (matmul_wgmma.c): the rests' products, then the parts' */
		LLVMValueRef ap = mm_to_tf32(x, a), bp = mm_to_tf32(x, bv);
		LLVMValueRef ar = mm_to_tf32(x, LLVMBuildFSub(x->b, a, ap, ""));
		LLVMValueRef br = mm_to_tf32(x, LLVMBuildFSub(x->b, bv, bp, ""));
		next = LLVMBuildFAdd(x->b, next, LLVMBuildFMul(x->b, ar, bp, ""), "");
		next = LLVMBuildFAdd(x->b, next, LLVMBuildFMul(x->b, ap, br, ""), "");
		a = ap;
		bv = bp;
	} else if (x->c->tf32) {
		a = mm_to_tf32(x, a);
		bv = mm_to_tf32(x, bv);
	}
	cg_carry_next(kb, &lk, sum, LLVMBuildFAdd(x->b, next, LLVMBuildFMul(x->b, a, bv, ""), ""));
	cg_loop_end(kb, &lk);
	mm_acc_store(x, le.i, LLVMBuildFAdd(x->b, mm_acc_load(x, le.i), sum, ""));
	cg_loop_end(kb, &le);
	mm_phase_end(x);
}
