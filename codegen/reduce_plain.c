/* reduce_plain.c: the reduce family (sum, mean, prod, max, min, argmax, argmin along
 * one axis) on the plain paths, and row mode.
 *
 * cg_eval_reduce is an evaluator node (see eval.c): given the output index (with its
 * per-dim positions) it emits the loop over the axis that computes that one element,
 * reading the input through cg_eval, so the same code serves a reduction alone and
 * one with elementwise ops fused on read. This is the plain version: one thread per
 * output element, the accumulator in a register (f32 for f16/bf16/f32, f64 for f64,
 * i64 for every integer type, wrapped to the result's width at the end).
 *
 * Row mode: when a reduction's result is broadcast back over its own axis (softmax,
 * layer norm: a ReduceBroadcasted block), each thread takes whole rows. Per row it
 * evaluates every reduction once, then loops over the axis writing the row, and the
 * memo hands the row's reductions to every element. The launch rule then counts rows
 * (the frame leaves the axis out of the launch's work).
 *
 * Both are the fallbacks: a kernel whose reductions share one axis is built as a
 * cooperative reduce kernel (reduce_plan.c decides how, kernel_reduce.c builds it),
 * and only kernels that also hold a matmul, a join or a window op, or reduce along
 * several axes, take the plain paths. */
#include <stdlib.h>
#include <string.h>

#include "cg_impl.h"

LLVMValueRef cg_reduce_identity(CgKb *kb, const RelOp *op)
{
	OpKind k = (OpKind)op->kind;
	DType it = (DType)op->t[0].dtype;
	DType t = ir_dtype_is_float(it) ? it : DT_I64;
	if (k == OP_SUM || k == OP_MEAN)
		return cg_zero(kb, t);
	if (k == OP_PROD)
		return cg_one(kb, t);
	return cg_convert(kb, cg_extreme(kb, it, k == OP_MAX_DIM || k == OP_ARGMAX), it, t);
}

LLVMValueRef cg_eval_reduce(CgKb *kb, const RelOp *op, CgIdx *out)
{
	const RelTensor *in = &op->t[0];
	DType it = (DType)in->dtype;
	DType t = ir_dtype_is_float(it) ? it : DT_I64;  /* accumulator dtype */
	OpKind k = (OpKind)op->kind;
	int axis = op->attr.axis;
	LLVMValueRef n = cg_dim(kb, in->shape[axis]);
	bool arg = k == OP_ARGMAX || k == OP_ARGMIN;
	bool max = k == OP_MAX_DIM || k == OP_ARGMAX;
	LLVMValueRef init = cg_reduce_identity(kb, op);

	CgLoop l;
	cg_loop_begin(kb, &l, cg_i64(kb, 0), n, cg_i64(kb, 1));
	LLVMValueRef acc = cg_carry(kb, &l, init);
	LLVMValueRef best = arg ? cg_carry(kb, &l, cg_i64(kb, 0)) : NULL;
	LLVMValueRef pos[IR_MAX_RANK];
	for (int d = 0; d < in->rank; d++)
		pos[d] = d == axis ? l.i : out->i[d];
	CgIdx x = cg_idx_at(in, pos);
	LLVMValueRef v = cg_convert(kb, cg_eval(kb, in->id, &x), it, t);
	LLVMValueRef next;
	switch (k) {
	case OP_SUM: case OP_MEAN:
		next = cg_binary_value(kb, OP_ADD, t, acc, v);
		break;
	case OP_PROD:
		next = cg_binary_value(kb, OP_MUL, t, acc, v);
		break;
	case OP_MAX_DIM: case OP_MIN_DIM:
		next = cg_select_max(kb, t, acc, v, max);
		break;
	default: {
		/* strict: the first extreme wins; a NaN counts as the extreme */
		LLVMValueRef take;
		if (ir_dtype_is_float(t)) {
			take = LLVMBuildFCmp(kb->b, max ? LLVMRealOGT : LLVMRealOLT, v, acc, "");
			LLVMValueRef vnan = LLVMBuildFCmp(kb->b, LLVMRealUNO, v, v, "");
			LLVMValueRef anan = LLVMBuildFCmp(kb->b, LLVMRealUNO, acc, acc, "");
			take = LLVMBuildOr(kb->b, take,
					   LLVMBuildAnd(kb->b, vnan, LLVMBuildNot(kb->b, anan, ""), ""), "");
		} else {
			bool u = false; /* u8 values were widened to i64 */
			LLVMIntPredicate p = max ? (u ? LLVMIntUGT : LLVMIntSGT) : (u ? LLVMIntULT : LLVMIntSLT);
			take = LLVMBuildICmp(kb->b, p, v, acc, "");
		}
		next = LLVMBuildSelect(kb->b, take, v, acc, "");
		cg_carry_next(kb, &l, best, LLVMBuildSelect(kb->b, take, l.i, best, ""));
		break;
	}
	}
	cg_carry_next(kb, &l, acc, next);
	cg_loop_end(kb, &l);

	DType ot = (DType)op->t[op->nin].dtype;
	if (arg)
		return cg_convert(kb, best, DT_I64, ot);
	if (k == OP_MEAN)
		acc = cg_binary_value(kb, OP_DIV, t, acc, cg_convert(kb, n, DT_I64,
					t == DT_F16 || t == DT_BF16 ? DT_F32 : t));
	return cg_convert(kb, acc, t, ot);
}

/* The axis of row mode, or -1 when no reduction of the kernel runs along one dim of
 * the iteration space, or -2 when reductions run along different dims. */
int cg_row_axis(const CgKernelSpec *s, int rank, const uint32_t *ref)
{
	int row_axis = -1;
	for (int i = 0; i < s->nops; i++) {
		const RelOp *op = &s->ops[i];
		if (ir_ops[op->kind].family != FAM_REDUCE)
			continue;
		int ax = op->attr.axis;
		if (op->t[0].rank != rank || ax >= rank || ref[ax] == 0)
			continue;
		row_axis = row_axis == -1 || row_axis == ax ? ax : -2;
	}
	return row_axis;
}

/* Row mode: a grid-stride loop over the rows (the iteration space without `axis`);
 * per row, every reduction of the kernel is evaluated once at the row's position,
 * then an inner loop over `axis` writes the row, finding the reductions in the memo. */
void cg_row_loops(CgKb *kb, int rank, const uint32_t *ref, int axis, const int *wr, int nw)
{
	uint32_t rows_shape[IR_MAX_RANK];
	memcpy(rows_shape, ref, sizeof *ref * (size_t)rank);
	rows_shape[axis] = 0;
	LLVMValueRef nrows = cg_i64(kb, 1);
	for (int d = 0; d < rank; d++)
		nrows = LLVMBuildMul(kb->b, nrows, cg_dim(kb, rows_shape[d]), "");
	CgLoop lr;
	cg_loop_begin(kb, &lr, kb->thread, nrows, kb->nthreads);
	kb->nmemo = 0;
	CgIdx row = cg_idx_of(rank, rows_shape);
	row.flat = lr.i;
	cg_idx_dims(kb, &row);
	for (int i = 0; i < kb->spec->nops; i++) {
		const RelOp *op = &kb->spec->ops[i];
		const RelTensor *r = &op->t[op->nin];
		if (ir_ops[op->kind].family != FAM_REDUCE || r->rank != rank)
			continue;
		CgIdx x = cg_idx_of(rank, r->shape);
		x.has_dims = true;
		for (int d = 0; d < rank; d++)
			x.i[d] = r->shape[d] == 0 && ref[d] != 0 ? cg_i64(kb, 0) : row.i[d];
		cg_eval(kb, r->id, &x);
	}
	CgLoop la;
	cg_loop_begin(kb, &la, cg_i64(kb, 0), cg_dim(kb, ref[axis]), cg_i64(kb, 1));
	CgIdx x = cg_idx_of(rank, ref);
	x.has_dims = true;
	for (int d = 0; d < rank; d++)
		x.i[d] = d == axis ? la.i : row.i[d];
	cg_store_written(kb, &x, wr, nw);
	cg_loop_end(kb, &la);
	cg_loop_end(kb, &lr);
}
