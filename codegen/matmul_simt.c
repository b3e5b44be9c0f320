/* matmul_simt.c: the SIMT compute of a stage (f32 without tensor cores), and the
 * map from a thread's accumulators to the block tile.
 *
 * SIMT configurations (f32): 16 x 16 threads, each computing (BM/16) x (BN/16)
 * outputs with FMAs from shared memory (rows ty*4+i and 64 + ty*4+i, the same for
 * columns, so that B reads are 16-byte vectors); the same code on both targets.
 * Tiny M (M <= 16, every dtype and arch) takes the gemv configuration, whose loop
 * is the kernel's (matmul_kernel.c). */
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
