/* kernel_matmul.c: the matmul family: batched a[..., m, k] x b[..., k, n], batch
 * dims broadcast.
 *
 * cg_eval_matmul is an evaluator node (see eval.c): given the output index it emits
 * the loop over k that computes that one element, reading both operands through
 * cg_eval (so elementwise producers fuse on read). This is the plain version: one
 * thread per output element, the accumulator in a register (the input's float type,
 * or i64 for integers). It serves the dtypes and archs the tiled kernel does not
 * take.
 *
 * The tiled kernel (a matmul and its elementwise epilogue over f16, bf16 or f32,
 * cg_matmul_tiled) lives in rooms of its own, which a convolution or attention
 * kernel can build on:
 *   matmul.h           the family's contract: the tile configuration (MmConfig), the
 *                      builder state (Mm) and the helpers the rooms share;
 *   matmul_pick.c      the tile-configuration table, eligibility, the picker
 *                      (cg_matmul_variant) and the launch rule (cg_matmul_launch);
 *   matmul_tile.c      the builder's helpers, operand layout, stage loads, the loop
 *                      over output tiles and its K pipeline, cg_matmul_tiled;
 *   matmul_mma.c       mma.sync (f16, bf16, tf32): GPU fragments, host definition;
 *   matmul_wgmma.c     wgmma from shared memory (sm_90a; tf32 for convs channels last);
 *   matmul_simt.c      SIMT FMAs (f32) and the gemv configuration (tiny M);
 *   matmul_epilogue.c  the epilogue and the split-K combine;
 *   matmul_conv.c      conv2d as an implicit GEMM on these tiles;
 *   matmul_depthwise.c a depthwise conv channels last: no tile, lanes of channels
 *                      a thread, the matmul's epilogue contract. */
#include "cg_impl.h"

LLVMValueRef cg_eval_matmul(CgKb *kb, const RelOp *op, CgIdx *out)
{
	const RelTensor *a = &op->t[0], *b = &op->t[1];
	DType it = (DType)a->dtype;
	DType t = ir_dtype_is_float(it) ? it : DT_I64;  /* accumulator dtype */
	int r = a->rank;
	CgLoop l;
	cg_loop_begin(kb, &l, cg_i64(kb, 0), cg_dim(kb, a->shape[r - 1]), cg_i64(kb, 1));
	LLVMValueRef acc = cg_carry(kb, &l, cg_zero(kb, t));
	LLVMValueRef pa[IR_MAX_RANK], pb[IR_MAX_RANK];
	for (int d = 0; d < r - 2; d++) {
		pa[d] = a->shape[d] == 0 ? cg_i64(kb, 0) : out->i[d];
		pb[d] = b->shape[d] == 0 ? cg_i64(kb, 0) : out->i[d];
	}
	pa[r - 2] = out->i[r - 2];
	pa[r - 1] = l.i;
	pb[r - 2] = l.i;
	pb[r - 1] = out->i[r - 1];
	CgIdx xa = cg_idx_at(a, pa), xb = cg_idx_at(b, pb);
	LLVMValueRef va = cg_convert(kb, cg_eval(kb, a->id, &xa), it, t);
	LLVMValueRef vb = cg_convert(kb, cg_eval(kb, b->id, &xb), it, t);
	cg_carry_next(kb, &l, acc, cg_binary_value(kb, OP_ADD, t, acc, cg_binary_value(kb, OP_MUL, t, va, vb)));
	cg_loop_end(kb, &l);
	return cg_convert(kb, acc, t, it);
}
