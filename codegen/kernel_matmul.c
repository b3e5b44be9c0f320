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
 * cg_matmul_tiled) lives in rooms of its own, in floors (each uses only those
 * below it; matmul.h's top comment gives the whole map):
 *   matmul.h           the family's contract: the tile configuration (MmConfig), the
 *                      builder state (Mm), the declarations in floor order;
 *   matmul_tile.c      the builder's primitives (value numbering, phases, the
 *                      accumulators, swizzles, inline PTX);
 *   matmul_shape.c     the sizes the picker and the builders share (shared memory,
 *                      launch tiles, the operand index cg_matmul_index);
 *   matmul_conv.c      conv2d as an implicit GEMM: the gather and the output index;
 *   matmul_mma.c       mma.sync (f16, bf16, tf32): GPU fragments, host definition;
 *   matmul_wgmma.c     wgmma from shared memory (sm_90a; tf32 for convs channels last);
 *   matmul_simt.c      SIMT FMAs (f32);
 *   matmul_stage.c     a K step's stage: operand layout, stage loads, its compute;
 *   matmul_epilogue.c  the epilogue and the split-K combine;
 *   matmul_kernel.c    the loop over output tiles and its K pipeline
 *   matmul_gemv.c      tiny M: the gemv loop over output tiles, its split-K;
 *   matmul_depthwise.c a depthwise conv channels last: no tile, lanes of channels
 *                      a thread, the matmul's epilogue contract;
 *   matmul_attention.c the attention op as one flash kernel: two tile builders
 *                      (the scores, the result) over one shared memory, the
 *                      online softmax in registers between them;
 *   matmul_pick.c      the tile-configuration table, eligibility, the picker
 *                      (cg_matmul_variant), the launch rule (cg_matmul_launch) and
 *                      cg_matmul_tiled, which hands a configuration to its kernel. */
#include "cg_impl.h"

/* attention (ir/ops.def) for one output element (row i, column c): one pass over
 * the keys with the online softmax, in f32 (f64 for f64): per key j the score s =
 * scale * q_i . kt_j (+ bias), the running max m, the sum l and the weighted sum
 * acc rescaled by exp(m_old - m_new) when the max grows; the result acc / l (0
 * under zero_nan where l is NaN or 0: the row's weights were NaN). A causal
 * op's row i stops at key i + causal (the keys after it are -inf). Every column
 * recomputes the row's scores: the plain fallback, not the fast kernel. */
/* The position along batch dim d of operand t at the output's position i: 0 where t
 * broadcasts, i / (O / T) where its dim groups the output's (grouped-query
 * attention), else i. */
static LLVMValueRef batch_pos(CgKb *kb, const RelTensor *t, const RelTensor *o, int d,
			      LLVMValueRef i)
{
	if (t->shape[d] == 0)
		return cg_i64(kb, 0);
	if (t->shape[d] == o->shape[d])
		return i;
	return LLVMBuildUDiv(kb->b, i, LLVMBuildUDiv(kb->b, cg_dim(kb, o->shape[d]),
						     cg_dim(kb, t->shape[d]), ""), "");
}

static LLVMValueRef eval_attention(CgKb *kb, const RelOp *op, CgIdx *out)
{
	LLVMBuilderRef b = kb->b;
	const RelTensor *q = &op->t[0], *kt = &op->t[1], *v = &op->t[2];
	const RelTensor *bias = op->nin == 4 ? &op->t[3] : NULL;
	DType it = (DType)q->dtype, t = it == DT_F64 ? DT_F64 : DT_F32;
	int r = q->rank;
	LLVMValueRef zero = cg_zero(kb, t), ninf = cg_extreme(kb, t, true);
	LLVMValueRef scale = cg_scalar_as(kb, op->place0, t);
	LLVMValueRef pos[IR_MAX_RANK];
	LLVMValueRef nk = cg_dim(kb, kt->shape[r - 1]);
	if (op->attr.causal) {
		LLVMValueRef last = LLVMBuildAdd(b, out->i[r - 2], cg_i64(kb, op->attr.causal), "");
		nk = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, last, nk, ""), last, nk, "");
	}
	CgLoop lj;
	cg_loop_begin(kb, &lj, cg_i64(kb, 0), nk, cg_i64(kb, 1));
	LLVMValueRef m = cg_carry(kb, &lj, ninf);
	LLVMValueRef l = cg_carry(kb, &lj, zero);
	LLVMValueRef acc = cg_carry(kb, &lj, zero);
	/* the score of key j */
	CgLoop lk;
	cg_loop_begin(kb, &lk, cg_i64(kb, 0), cg_dim(kb, q->shape[r - 1]), cg_i64(kb, 1));
	LLVMValueRef dot = cg_carry(kb, &lk, zero);
	const RelTensor *ot = &op->t[op->nin];
	for (int d = 0; d < r - 2; d++)
		pos[d] = batch_pos(kb, q, ot, d, out->i[d]);
	pos[r - 2] = out->i[r - 2];
	pos[r - 1] = lk.i;
	CgIdx xq = cg_idx_at(q, pos);
	LLVMValueRef vq = cg_convert(kb, cg_eval(kb, q->id, &xq), it, t);
	for (int d = 0; d < r - 2; d++)
		pos[d] = batch_pos(kb, kt, ot, d, out->i[d]);
	pos[r - 2] = lk.i;
	pos[r - 1] = lj.i;
	CgIdx xk = cg_idx_at(kt, pos);
	LLVMValueRef vk = cg_convert(kb, cg_eval(kb, kt->id, &xk), it, t);
	cg_carry_next(kb, &lk, dot, cg_binary_value(kb, OP_ADD, t, dot,
						    cg_binary_value(kb, OP_MUL, t, vq, vk)));
	cg_loop_end(kb, &lk);
	LLVMValueRef s = cg_binary_value(kb, OP_MUL, t, dot, scale);
	if (bias) {
		for (int d = 0; d < r; d++)
			pos[d] = bias->shape[d] == 0 ? cg_i64(kb, 0) :
				 d == r - 1 ? lj.i : out->i[d];
		CgIdx xb = cg_idx_at(bias, pos);
		LLVMValueRef bv = cg_eval(kb, bias->id, &xb);
		if (bias->dtype == DT_BOOL)   /* a mask: min where it is true */
			s = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntNE, bv, LLVMConstNull(LLVMTypeOf(bv)), ""),
					    cg_scalar_as(kb, op->place0 + 1, t), s, "");
		else
			s = cg_binary_value(kb, OP_ADD, t, s, cg_convert(kb, bv, it, t));
	}
	/* the new max, and the shift: 0 while every score so far is -inf (then both
	 * exps are 0, not NaN) */
	LLVMValueRef mn = cg_select_max(kb, t, m, s, true);
	LLVMValueRef shift = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, mn, ninf, ""),
					     zero, mn, "");
	LLVMValueRef corr = cg_math_unary(&kb->math, OP_EXP,
					  cg_binary_value(kb, OP_SUB, t, m, shift), GELU_NONE);
	LLVMValueRef p = cg_math_unary(&kb->math, OP_EXP, cg_binary_value(kb, OP_SUB, t, s, shift),
				       GELU_NONE);
	for (int d = 0; d < r - 2; d++)
		pos[d] = batch_pos(kb, v, ot, d, out->i[d]);
	pos[r - 2] = lj.i;
	pos[r - 1] = out->i[r - 1];
	CgIdx xv = cg_idx_at(v, pos);
	LLVMValueRef vv = cg_convert(kb, cg_eval(kb, v->id, &xv), it, t);
	cg_carry_next(kb, &lj, m, mn);
	cg_carry_next(kb, &lj, l, cg_binary_value(kb, OP_ADD, t, cg_binary_value(kb, OP_MUL, t, l, corr), p));
	cg_carry_next(kb, &lj, acc, cg_binary_value(kb, OP_ADD, t,
		cg_binary_value(kb, OP_MUL, t, acc, corr), cg_binary_value(kb, OP_MUL, t, p, vv)));
	cg_loop_end(kb, &lj);
	LLVMValueRef res = cg_binary_value(kb, OP_DIV, t, acc, l);
	if (op->attr.zero_nan) {
		/* a row of NaN weights (a NaN score: l is NaN; every key -inf: l is 0)
		 * gives 0 */
		LLVMValueRef nan = LLVMBuildOr(b, LLVMBuildFCmp(b, LLVMRealUNO, l, l, ""),
					       LLVMBuildFCmp(b, LLVMRealOEQ, l, zero, ""), "");
		res = LLVMBuildSelect(b, nan, zero, res, "");
	}
	return cg_convert(kb, res, t, it);
}

LLVMValueRef cg_eval_matmul(CgKb *kb, const RelOp *op, CgIdx *out)
{
	if (op->kind == OP_ATTENTION)
		return eval_attention(kb, op, out);
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
